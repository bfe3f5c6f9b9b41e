"""full_scale/fixtures.py writes what the full scale reads, hard parts included: checkpoint files that only the guarded
unpickler opens (fairseq's trainer state and args, unilm's args), ImageNet's 1,000 class folders named from the
shipped class-name list, and a shard image that passes indexing but fails when a batch decodes it."""
import argparse
import json
import pickle

import pytest
import torch

from thesis_lib.data.datasets import load_imagenet_folder
from thesis_lib.data.decode import decode
from thesis_lib.data.shards import load_shards
from thesis_lib.errors import DataError
from thesis_lib.models.checkpoints import torch_load
from thesis_lib.paths import ASSETS
from thesis_lib.full_scale import fixtures


@pytest.mark.parametrize("write", [fixtures.d2v_image_file, fixtures.d2v_text_file, fixtures.beitv2_file])
def test_each_checkpoint_file_needs_the_guarded_unpickler(tmp_path, write):
    path = tmp_path / "f.pt"
    sd = write(path)
    with pytest.raises(pickle.UnpicklingError):                  # what torch.load's default (weights_only) does
        torch.load(path, map_location="cpu", weights_only=True)
    ck = torch_load(path)
    assert all(torch.equal(ck["model"][k].float(), v.float()) for k, v in sd.items() if torch.is_tensor(v))
    if write is not fixtures.d2v_image_file:
        assert isinstance(ck["args"], argparse.Namespace)        # the pre-hydra fairseq / unilm "args"
    if write is not fixtures.beitv2_file:
        meters = ck["extra_state"]["metrics"]["train"]          # a fairseq class: an inert stand-in, never imported
        assert type(meters).__module__ == "thesis_lib.models.checkpoints" and "fairseq" not in __import__("sys").modules


def test_imagenet_has_the_1000_class_folders_named_by_the_shipped_list(tmp_path):
    records, names, templates = load_imagenet_folder(fixtures.imagenet_val(tmp_path / "imagenet") / "val")
    shipped = json.loads((ASSETS / "imagenet_classnames.json").read_text())["classnames"]
    assert names == shipped and len(records) == 1000 and len(templates) == 80
    assert not (tmp_path / "imagenet" / "classnames.json").exists()
    assert sorted(r.label for r in records) == list(range(1000))


def test_a_shard_image_that_passes_indexing_fails_only_when_decoded(tmp_path):
    pattern = fixtures.web_shards(tmp_path / "s", "s", seed=0)
    records, report = load_shards(pattern)
    assert (report.samples, report.pairs, len(report.broken_keys)) == (22, 17, 5)   # 2 × 8 good, 6 others
    bad = [r for r in records if "does not decode" in r.captions[0]]
    assert len(bad) == 1                                         # indexed as a usable pair
    with pytest.raises(DataError, match="cannot read image"):
        decode(bad[0].image)
    for r in records[:3]:
        decode(r.image)
