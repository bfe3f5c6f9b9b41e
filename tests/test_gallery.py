"""gallery.py: the trained model in hand (notebook 01's last section). Its top captions are the API's
argmax, its marks tell a picture's own captions exactly, its top-1-wrong share is 100 − the evaluation's image→text
R@1; the shipped demo checkpoint is read as the demo preset's run. A smoke run's model and world: seconds on a CPU."""
import json

import matplotlib
import matplotlib.pyplot as plt
import pytest
import torch

import thesis_lib
from thesis_lib import get_config, run_experiment
from thesis_lib.analysis import checkpoint_config, load_trained, read_checkpoint
from thesis_lib.stored_config import config_of
from thesis_lib.evaluate import evaluation_inputs
from thesis_lib.paths import ROOT
from thesis_lib import api, gallery

matplotlib.use("Agg")
SHIPPED = api.SHIPPED / api.MODELS["baseline-long"]
ITS_RESULT = ROOT / "results" / "_designs" / "thesis-lr-sum-confirm" / "results" / "demo" / "baseline" / "seed9.json"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A finished smoke run of the baseline: its checkpoint and result (the evaluation's metrics)."""
    out = tmp_path_factory.mktemp("out")
    result = run_experiment("smoke", "baseline", 0, out_dir=out)
    return out / "results" / "smoke" / "baseline" / "seed0" / "checkpoint.pt", result


@pytest.fixture(scope="module")
def loaded(run):
    return thesis_lib.load(run[0])


@pytest.fixture(scope="module")
def coco(loaded):
    return gallery.coco_test(loaded.config)


def test_the_pictures_are_drawn_by_a_seed_and_the_fewer_are_the_first():
    assert gallery.picks(8, 5000) == gallery.picks(8, 5000)
    assert gallery.picks(6, 5000) == gallery.picks(8, 5000)[:6] != gallery.picks(6, 5000, seed=1)
    assert len(set(gallery.picks(40, 40))) == 40


def test_the_test_set_is_the_evaluations_with_its_captions_as_text(loaded, coco):
    tokenizer, (sets, _) = evaluation_inputs(loaded.config)
    held = sets[0]
    assert held.name == "coco" and coco.retrieval.tokens.equal(held.tokens) and coco.retrieval.images.equal(held.images)
    assert loaded.tokenize(coco.captions).equal(held.tokens) and len(coco.files) == len(held.images)
    assert [coco.captions[j] for j in coco.own(3)] == [c for c, i in zip(coco.captions, held.text_to_image) if i == 3]


def test_the_top_caption_is_the_argmax_of_the_apis_similarities(loaded, coco):
    """Pictures as files and captions as text (not the in-memory forms ``retrievals`` embeds): the first retrieved
    caption is the argmax of ``encode_image @ encode_text.T`` (or ties with it), the scores are those similarities."""
    frame = gallery.retrievals(loaded, coco, 5)
    assert frame.equals(gallery.retrievals(loaded, coco, 5, embedded=gallery.embed(loaded, coco)))
    txt = loaded.encode_text(coco.captions)
    for p, rows in frame.groupby("picture", sort=False):
        sims = (loaded.encode_image(coco.files[p]) @ txt.T)[0]
        got = rows[rows.kind == "retrieved"]
        assert list(got["rank"]) == [1, 2, 3] and got.cosine.is_monotonic_decreasing
        top = int(got.caption_id.iloc[0])
        assert top == int(sims.argmax()) or sims[top] == pytest.approx(sims.max().item(), abs=1e-6)
        assert got.cosine.tolist() == pytest.approx(sims[got.caption_id.tolist()].tolist(), abs=1e-4)


def test_the_captions_marked_true_are_exactly_the_pictures_own(loaded, coco):
    frame = gallery.retrievals(loaded, coco, pictures=range(len(coco.files)), k=5)
    t2i = coco.retrieval.text_to_image
    assert frame.own.tolist() == [int(t2i[j]) == p for p, j in zip(frame.picture, frame.caption_id)]
    for p, rows in frame.groupby("picture"):
        own = rows[rows.kind == "own"]
        assert sorted(own.caption_id) == coco.own(p) == torch.nonzero(t2i == p)[:, 0].tolist()
        assert own.caption.tolist() == [coco.captions[j] for j in own.caption_id] and own.own.all() and own.fits.all()
    assert set(frame.mark[frame.own]) == {"✓"} and "✓" not in set(frame.mark[~frame.own])
    assert (frame.mark[~frame.own] == frame.fits[~frame.own].map({True: "≈", False: "✗"})).all()


def test_top1s_wrong_share_is_100_minus_the_image_to_text_r1_the_evaluation_computed(loaded, coco, run):
    """The run's own evaluation (its result file) on one thread, and ``rank``'s argmax to within exact ties."""
    found = gallery.top1(loaded, coco)
    wrong, n = found["wrong"], found["pictures"]
    assert wrong == pytest.approx(100 - run[1]["metrics"]["coco_tr@1"], abs=1e-9)
    assert (n, found["captions"]) == (len(coco.files), len(coco.captions))
    img, txt = gallery.embed(loaded, coco)
    sims = img @ txt.T
    own = coco.retrieval.text_to_image[None, :] == torch.arange(n)[:, None]
    tied = (sims.masked_fill(~own, -2).max(1).values - sims.masked_fill(own, -2).max(1).values).abs() < 1e-6
    assert abs(found["argmax_wrong"] - wrong) <= 100 * tied.sum().item() / n + 1e-9
    assert 0 <= found["ties"] <= found["fits"] <= found["argmax_wrong"] <= 100
    assert f"wrong for {wrong:.0f} % of the COCO-like test pictures (image→text R@1 {100 - wrong:.1f} %" in \
        gallery.said(found)


def test_the_figures_show_the_pictures_and_their_captions(loaded, coco):
    fig = gallery.gallery(coco, 4, columns=2, width=1000)
    shown = [a for a in fig.axes if a.images]
    assert [a.get_title() for a in shown] == [f"test picture {p}" for p in gallery.picks(4, len(coco.files))]
    texts = [t.get_text() for a in fig.axes for t in a.texts]
    assert texts == ["\n".join(coco.captions[j] for j in coco.own(p)) for p in gallery.picks(4, len(coco.files))]
    frame = gallery.retrievals(loaded, coco, 3)
    fig2 = gallery.retrievals_figure(frame, coco)
    assert len([a for a in fig2.axes if a.images]) == 3
    drawn = " ".join(t.get_text() for a in fig2.axes for t in a.texts)
    assert all(c in drawn for c in frame.caption)
    plt.close(fig)
    plt.close(fig2)


def test_the_shipped_checkpoints_are_the_long_confirmations_seed_9():
    """Read without a world: the demo preset's baseline and TTE' of the long schedule's confirmation, seed 9, trained
    to their end of 5,952 steps; their weights fit those models; their configs are the committed runs' (whose
    metrics results/shipped.csv sets beside theirs)."""
    for name, variant in (("baseline-long", "baseline"), ("tte-long", "tte_after_ls")):
        state = read_checkpoint(api.SHIPPED / api.MODELS[name])
        cfg = checkpoint_config(state)
        assert cfg == get_config("demo", variant, 9, {"train.steps": 5952, "train.keep_every": 1500})
        assert state["step"] == cfg.train.steps and set(state) == {"model", "config", "step"}
        load_trained(state, "cpu", cfg)
        committed = ITS_RESULT.parent.parent / variant / "seed9.json"
        assert config_of(json.loads(committed.read_text())["config"]) == cfg
    assert gallery.describe(SHIPPED).startswith(f"{SHIPPED.name} (2.6 MB): the demo preset's baseline, seed 9, "
                                                "step 5,952 of 5,952; 643,393 parameters")
