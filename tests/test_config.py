"""A config field is declared once (thesis_lib/config.py, ``knob``): its range, its role for a result's identity and
whether the demo's pretrained stand-ins depend on it are metadata on the field, read by the checks, the result files
and the stand-ins' folder name; nothing else lists field names."""
import dataclasses

import pytest

from thesis_lib import get_config
from thesis_lib.config import ROLES, DataConfig, ModelConfig, field_metadata, fields_with, replace_path
from thesis_lib.config_checks import field_problems
from thesis_lib.models.sources import demo_key, shipped_folder
from thesis_lib.training.results import identity_differences

BAD = (0, -1, -1.0, 0.0, 1.0, float("inf"), "no such option", (2.0, 1.0), (0.0, 0.0))   # one breaks every rule


def _stored(cfg) -> dict:
    return dataclasses.asdict(cfg)


@pytest.mark.parametrize("group", [ModelConfig, DataConfig])
def test_every_model_and_data_field_says_whether_the_pretrained_stand_ins_depend_on_it(group):
    """A new field of the model or the data without ``pretraining=`` would leave a stale demo cache unnoticed."""
    for f in dataclasses.fields(group):
        if not dataclasses.is_dataclass(f.default_factory() if callable(f.default_factory) else f.default):
            assert "pretraining" in f.metadata, f"{group.__name__}.{f.name} does not declare pretraining=True/False"


def test_the_stand_ins_folder_changes_with_a_pretraining_field_and_only_with_one():
    cfg = get_config("smoke")
    base = shipped_folder(cfg).name
    assert demo_key(cfg)["dims"] == [cfg.model.dim, cfg.model.num_heads, cfg.model.mlp_ratio, cfg.model.image_depth,
                                     cfg.model.text_depth, cfg.model.image_norm_eps, cfg.model.text_norm_eps]
    for name, value in (("model.text_norm_eps", 1e-3), ("model.mlp_ratio", 2.0), ("data.crop_scale", (0.5, 1.0))):
        assert shipped_folder(replace_path(cfg, name, value)).name != base, name
    for name, value in (("model.tte_layer_scale", 1e-3), ("model.shared_depth", 2), ("data.teacher_view", "augmented"),
                        ("train.steps", 7), ("model.text_dropout", 0.1)):
        assert shipped_folder(replace_path(cfg, name, value)).name == base, name


def test_every_field_with_a_rule_is_checked_under_its_own_name():
    cfg = get_config("smoke")
    ruled = [name for name, meta in field_metadata().items() if "rule" in meta]
    assert len(ruled) > 50
    for name in ruled:
        found = []
        for bad in BAD:
            try:
                found += field_problems(replace_path(cfg, name, bad))
            except Exception:                      # a value of the wrong type is refused earlier: ConfigError
                continue
        assert any(p.startswith(name + " ") for p in found), f"no value out of {BAD} breaks the rule of {name}"
    assert field_problems(cfg) == []


def test_roles_decide_what_a_result_is_the_same_run_as():
    """Every operational or path field changed: the same run; a science field changed: another run."""
    assert set(ROLES) == {"science", "operational", "path", "source", "mixture"}
    cfg = get_config("smoke")
    same = {"data.num_workers": 3, "train.log_every": 5, "train.ckpt_every": 7, "train.keep_every": 14,
            "eval.batch_size": 9, "eval.retrieval_chunk": 11, "data.root": "/elsewhere",
            "weights.checkpoint_dir": "/mnt/ckpts"}
    assert set(same) == set(fields_with(role="operational") + fields_with(role="path"))
    for name, value in same.items():
        assert identity_differences(_stored(cfg), _stored(replace_path(cfg, name, value))) == [], name
    for name, value in (("train.steps", 7), ("model.tte_layer_scale", 1e-3), ("data.world.seed", 1)):
        assert name in fields_with(role="science")
        assert identity_differences(_stored(cfg), _stored(replace_path(cfg, name, value))), name
    moved = replace_path(cfg, "weights.image", "/a/folder/base_imagenet.pt")
    assert identity_differences(_stored(moved),
                                _stored(replace_path(cfg, "weights.image", "/b/base_imagenet.pt"))) == []


def test_a_mixture_is_the_same_run_wherever_its_shards_lie_and_another_with_another_set_or_weight():
    """A staged or respelled MIX resumes a checkpoint and reuses a result; another set or another @N does not."""
    from thesis_lib.training.results import resume_differences
    assert fields_with(role="mixture") == ("data.train_sets",)
    shared = "coco,wds:shared/data/cc3m/shards.txt@1516133,wds:shared/data/cc12m/shards.txt@1181988"
    staged = "coco,wds:stage/job-17/cc3m/shards.txt@1516133,wds:scratch/./cc12m/{00000..00234}.tar@1181988"
    cfg = get_config("smoke")

    def runs(a: str, b: str) -> list[str]:
        one, two = (_stored(replace_path(cfg, "data.train_sets", mix)) for mix in (a, b))
        return identity_differences(one, two) + resume_differences(one, two)
    assert runs(shared, staged) == []
    assert runs(shared, shared.replace("@1181988", "@1000000"))                   # another weight
    assert runs(shared, shared.replace("cc12m", "yfcc"))                          # another set
    assert runs(shared, shared.split(",", 1)[1])                                  # COCO left out


def test_a_field_added_later_reads_a_stored_config_without_it_as_declared():
    cfg = get_config("smoke", overrides={"train.itm_negatives": "random", "eval.rerank_k": 3})
    stored = _stored(cfg)
    del stored["eval"]["rerank_k"]                 # absent=WANTED: as the value asked for
    assert identity_differences(stored, _stored(cfg)) == []
    del stored["train"]["itm_negatives"]           # absent="hard": the value every run had before it existed
    assert identity_differences(stored, _stored(cfg)) == ["train.itm_negatives: 'hard' -> 'random'"]
    del stored["model"]["text_dropout"]            # absent=0.0: every run before it had no text dropout
    assert identity_differences(stored, _stored(cfg)) == ["train.itm_negatives: 'hard' -> 'random'"]
    dropped = _stored(replace_path(cfg, "model.text_dropout", 0.1))
    assert "model.text_dropout: 0.0 -> 0.1" in identity_differences(stored, dropped)


def test_every_cli_parses_set_items_one_way_and_refuses_an_item_without_equals():
    from thesis_lib.config_checks import parse_sets
    from thesis_lib.errors import ConfigError
    assert parse_sets(["train.steps=3", "data.train_sets=coco,wds:/d/a.txt@5", "x=a=b"]) == {
        "train.steps": "3", "data.train_sets": "coco,wds:/d/a.txt@5", "x": "a=b"}
    for bad in ("train.steps", "=3"):
        with pytest.raises(ConfigError, match="--set expects KEY=VALUE"):
            parse_sets([bad])
