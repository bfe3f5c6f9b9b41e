import math

from thesis_lib.config import get_config
from thesis_lib.training.prepare import prepare_assets
from thesis_lib.training.pretrain import _auc, pretrain_report


def test_auc_of_perfect_random_and_reversed_scores():
    import torch
    truth = torch.tensor([[1.0], [0.0], [1.0], [0.0]])
    assert _auc(torch.tensor([[0.9], [0.1], [0.8], [0.2]]), truth) == 1.0
    assert _auc(torch.tensor([[0.1], [0.9], [0.2], [0.8]]), truth) == 0.0
    assert math.isnan(_auc(torch.tensor([[0.5], [0.5]]), torch.tensor([[1.0], [1.0]])))   # no negative: undefined


def test_auc_equals_scikit_learn_with_ties_and_a_label_without_negatives():
    """scikit-learn's roc_auc_score per label (ties count ½), averaged over the labels that have both classes."""
    import torch
    from sklearn.metrics import roc_auc_score
    g = torch.Generator().manual_seed(0)
    scores = torch.randint(0, 6, (40, 4), generator=g).float()          # coarse scores: many ties
    truth = (torch.rand(40, 4, generator=g) < 0.4).float()
    truth[:, 3] = 1                                                       # label 3 has no negative: left out
    want = sum(roc_auc_score(truth[:, k].numpy(), scores[:, k].numpy()) for k in range(3)) / 3
    assert abs(_auc(scores, truth) - want) < 1e-12 and 0.3 < want < 0.7


def test_teacher_report_separates_object_centric_pictures_from_scenes():
    cfg = get_config("smoke")
    prepare_assets(cfg)
    report = pretrain_report(cfg)["teacher"]
    for kind in ("", "_scenes"):
        for group in ("colour_shape", "colour", "shape"):
            value = report[f"held_out_auc_{group}{kind}"]
            assert math.isnan(value) or 0.0 <= value <= 1.0
    assert report["steps"] == get_config("smoke").pretrain.teacher_steps


def test_the_prepare_command_prepares_once_and_says_where(capsys):
    from thesis_lib.training.prepare import main
    assert main(["--preset", "smoke"]) == 0
    assert "prepared:" in capsys.readouterr().out
    assert main(["--preset", "smoke", "--set", "train.steps=0"]) == 2          # a bad override: one line, exit 2
    assert "train.steps" in capsys.readouterr().err


def test_the_shipped_demo_stand_ins_were_built_by_this_code_for_this_config():
    """`make demo` loads the pretrained stand-ins the repository ships (as the thesis scale loads downloaded
    checkpoints). They must be what the code would build now: the same demo config and DEMO_VERSION (the folder's
    fingerprint) and the same pretraining code. If this fails after a change to the demo pretraining, run
    `make pretrained` and commit the new folder (docs/reproducibility.md: what the stand-ins are checked against)."""
    import json

    from thesis_lib.models.sources import demo_folder, demo_key, shipped_folder
    from thesis_lib.training.pretrain import code_digest
    cfg = get_config("demo")
    shipped = shipped_folder(cfg)
    assert (shipped / "DONE").exists(), f"no shipped stand-ins fit the demo config ({shipped.name}): make pretrained"
    info = json.loads((shipped / "pretrain.json").read_text())
    assert info["config"] == json.loads(json.dumps(demo_key(cfg)))
    assert info["code"] == code_digest(), "training/pretrain.py changed since the stand-ins were built: make pretrained"
    assert demo_folder(cfg) == shipped and demo_folder(get_config("smoke")) != shipped_folder(get_config("smoke"))
