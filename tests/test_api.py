"""thesis_lib.api: a checkpoint's model in hand (``thesis_lib.load``, ``Loaded.encode_image``/``encode_text``,
``thesis_lib.rank``) embeds pictures and captions as the evaluation does: the same similarities, the same retrieval
metrics as the run's result file; clear errors for a file that is not a run's checkpoint."""
import pytest
import torch
from PIL import Image

import thesis_lib
from thesis_lib import run_experiment
from thesis_lib.data import datasets as ds
from thesis_lib.data.roots import data_root, pair_records
from thesis_lib.errors import CheckpointError, DataError, DeviceError, ThesisError
from thesis_lib.evaluate import evaluation_inputs
from thesis_lib.evaluation import EvalContext, embed_images, embed_texts, retrieval_recalls
from thesis_lib.numerics import one_thread
from thesis_lib.training.engine import autocast

ITEMS = 6       # the handful of test pictures whose captions are compared one by one


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A finished smoke run: its checkpoint and result."""
    out = tmp_path_factory.mktemp("out")
    result = run_experiment("smoke", "tte_after_ls", 0, out_dir=out)
    return out / "results" / "smoke" / "tte_after_ls" / "seed0" / "checkpoint.pt", result


@pytest.fixture(scope="module")
def loaded(run):
    return thesis_lib.load(run[0])


@pytest.fixture(scope="module")
def coco(loaded):
    """The COCO-like test set as the evaluation reads it (in memory), its files and its captions as text."""
    tokenizer, (retrieval, _) = evaluation_inputs(loaded.config)
    files, captions, _ = ds.retrieval_index(pair_records("coco", "test", data_root(loaded.config)))
    return retrieval[0], files, captions, tokenizer


def test_load_gives_the_model_in_eval_mode_on_the_device(loaded, run):
    assert isinstance(loaded.model, thesis_lib.models.emkum.EMKUM) and not loaded.model.training
    assert {p.device.type for p in loaded.model.parameters()} == {"cpu"}
    assert (loaded.config.preset, loaded.config.model.variant, loaded.step) == ("smoke", "tte_after_ls",
                                                                                 run[1]["train"]["steps"])
    size = loaded.config.model.image.img_size
    assert loaded.transform(Image.new("RGB", (50, 30), "red")).shape == (3, size, size)
    assert loaded.tokenize("a red circle").shape == (1, loaded.config.model.text.max_len)


def test_embeddings_are_unit_rows_of_the_shared_dimension(loaded, coco):
    rs, files, captions, _ = coco
    dim = loaded.model.cfg.dim
    for emb, n in ((loaded.encode_image(rs.images[:ITEMS]), ITEMS), (loaded.encode_image(files[0]), 1),
                   (loaded.encode_text(captions[:ITEMS]), ITEMS), (loaded.encode_text("a red circle"), 1)):
        assert emb.shape == (n, dim)
        assert torch.allclose(emb.norm(dim=1), torch.ones(n), atol=1e-5)


def test_the_similarities_are_the_evaluations(loaded, coco):
    """Every input form the API takes gives the evaluation's image-caption similarities for the same items: pictures
    as the in-memory uint8 set, as files, as PIL images, as transform's views; captions as text and as tokens."""
    rs, files, captions, tokenizer = coco
    ctx = EvalContext.of(loaded.config, torch.device("cpu"), tokenizer.pad_id,
                         autocast(loaded.config.train.precision, torch.device("cpu")))
    img = embed_images(loaded.model, rs.images, ctx)[:ITEMS]
    txt = embed_texts(loaded.model, rs.tokens, tokenizer.pad_id, ctx.device, ctx.batch_size, ctx.amp)
    expected = img @ txt[:5 * ITEMS].T
    pictures = [Image.open(f) for f in files[:ITEMS]]
    image_forms = (rs.images[:ITEMS], files[:ITEMS], pictures, torch.stack([loaded.transform(p) for p in pictures]))
    text_forms = (captions[:5 * ITEMS], loaded.tokenize(captions[:5 * ITEMS]), rs.tokens[:5 * ITEMS])
    assert captions[:5 * ITEMS] and loaded.tokenize(captions).equal(rs.tokens)
    for images in image_forms:
        for texts in text_forms:
            got = loaded.encode_image(images) @ loaded.encode_text(texts).T
            assert torch.allclose(got, expected, atol=1e-5), (type(images), type(texts))


def test_the_whole_test_set_embedded_by_the_api_scores_the_runs_metrics(loaded, coco, run):
    """On one thread, as the run evaluated itself: the API's embeddings give the run's COCO recalls."""
    rs, _, captions, _ = coco
    with one_thread():
        recalls = retrieval_recalls(loaded.encode_image(rs.images), loaded.encode_text(captions), rs.text_to_image,
                                    loaded.context.chunk)
    assert recalls == pytest.approx({k.removeprefix("coco_"): v for k, v in run[1]["metrics"].items()
                                     if k.startswith("coco_") and "@" in k or k == "coco_mean"}, abs=1e-9)


def test_rank_is_the_argsort_of_the_similarities():
    g = torch.Generator().manual_seed(0)
    queries, candidates = (torch.nn.functional.normalize(torch.randn(n, 8, generator=g), dim=1) for n in (4, 10))
    sims = queries @ candidates.T
    scores, indices = thesis_lib.rank(queries, candidates, k=3)
    assert indices.equal(sims.argsort(dim=1, descending=True)[:, :3])
    assert torch.allclose(scores, sims.gather(1, indices))
    assert thesis_lib.rank(queries, candidates, k=50).indices.shape == (4, 10)


def test_a_file_that_is_not_a_runs_checkpoint_is_a_thesis_error(run, tmp_path):
    not_torch, no_config = tmp_path / "notes.pt", tmp_path / "weights.pt"
    not_torch.write_text("not a checkpoint")
    torch.save({"model": {}, "step": 3}, no_config)
    for path, message in ((tmp_path / "missing.pt", "checkpoint not found"),
                          (not_torch, "is not a checkpoint of a thesis_lib run"),
                          (no_config, "is not a checkpoint of a thesis_lib run"),
                          (run[0].parent, "is a folder, not a checkpoint file")):
        with pytest.raises(CheckpointError, match=message) as err:
            thesis_lib.load(path)
        assert isinstance(err.value, ThesisError) and str(path) in str(err.value)


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU")
def test_a_device_this_machine_lacks_is_an_error(run):
    with pytest.raises(DeviceError, match="no CUDA GPU is visible"):
        thesis_lib.load(run[0], device="cuda")


def test_images_of_another_size_or_kind_are_an_error(loaded):
    with pytest.raises(DataError, match="at this model's size"):
        loaded.encode_image(torch.zeros(2, 3, 7, 7, dtype=torch.uint8))
    with pytest.raises(DataError, match="uint8 pixels or float views"):
        size = loaded.config.model.image.img_size
        loaded.encode_image(torch.zeros(2, 3, size, size, dtype=torch.int64))


def _readme_snippet() -> str:
    """The README's Python block: the first screen's shipped-model example."""
    import re

    from thesis_lib.paths import ROOT
    return re.search(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S).group(1)


def test_the_readmes_snippet_runs_on_a_shipped_model_without_a_data_folder(tmp_path):
    """In a fresh process with an empty data folder: the shipped model loads by name, ranks each example picture's
    own caption first among the eight, and nothing is generated (the data folder stays empty)."""
    import ast
    import os
    import subprocess
    import sys
    empty = tmp_path / "data"
    empty.mkdir()
    done = subprocess.run([sys.executable, "-c", _readme_snippet()], capture_output=True, text=True, cwd=tmp_path,
                          env={**os.environ, "THESIS_DATA": str(empty)}, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    pictures, captions = thesis_lib.examples()
    best = ast.literal_eval(done.stdout.strip().splitlines()[-1])
    assert len(best) == len(pictures) == len(captions) == 8
    assert sum(b == c for b, c in zip(best, captions)) >= 6           # the model knows these pictures' world
    assert list(empty.iterdir()) == []


def test_every_shipped_model_loads_by_name_and_an_unknown_name_says_which_exist():
    assert thesis_lib.list_models() == ["baseline-long", "tte-long"]
    for name in thesis_lib.list_models():
        m = thesis_lib.load(name)
        assert m.config.preset == "demo" and m.step == m.config.train.steps
    assert thesis_lib.load("tte-long").config.model.variant == "tte_after_ls"
    with pytest.raises(CheckpointError, match="baseline-long, tte-long"):
        thesis_lib.load("no-such-model")
