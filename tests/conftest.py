"""Shared fixtures: tiny real-format datasets and the smoke-scale world, built by the tests themselves.

Before anything imports torch: the CPU instruction-set pin (thesis_lib/assets/cpu_pin.env; `make test` exports it
too, a value already in the environment is kept and the golden test then says it is not the pin) and the smoke scale
for the notebooks under nbval, whatever THESIS_PRESET the shell holds.
"""
import json
import os
import tempfile
from pathlib import Path

_PIN = Path(__file__).resolve().parents[1] / "thesis_lib" / "assets" / "cpu_pin.env"
for _line in _PIN.read_text().splitlines():
    if _line.strip() and not _line.startswith("#"):
        os.environ.setdefault(*_line.strip().split("=", 1))

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from PIL import Image  # noqa: E402

os.environ["THESIS_PRESET"] = "smoke"   # notebooks under nbval run at the smoke scale
os.environ.setdefault("THESIS_PROGRESS", "0")
os.environ.setdefault("THESIS_DATA", tempfile.mkdtemp(prefix="thesis-data-"))   # worlds, pretraining, caches


def pytest_collectstart(collector):
    # nbval: stderr (warnings, progress bars) is never compared
    if collector.fspath and collector.fspath.ext == ".ipynb":
        collector.skip_compare += ("stderr",)


def _jpeg(path, seed):
    path.parent.mkdir(parents=True, exist_ok=True)
    rgb = np.random.default_rng(seed).integers(0, 255, size=(20, 24, 3), dtype=np.uint8)
    Image.fromarray(rgb).save(path, quality=90)


def _sentences(imgid, n, first_sentid):
    return [{"tokens": ["a", "caption"], "raw": f"caption {k} of image {imgid}", "imgid": imgid,
             "sentid": first_sentid + k} for k in range(n)]


@pytest.fixture
def tiny_coco(tmp_path):
    """A Karpathy-format COCO: 3 train, 2 restval, 1 val, 4 test images (one test image with 6 captions, one
    test image listed twice under the same cocoid), JPEGs under train2014/ and val2014/."""
    root = tmp_path / "coco"
    images, sentid = [], 0
    plan = [("train", 5)] * 3 + [("restval", 5)] * 2 + [("val", 5)] + [("test", 6)] + [("test", 5)] * 3
    for imgid, (split, n) in enumerate(plan):
        folder = "train2014" if split == "train" else "val2014"
        entry = {"filepath": folder, "filename": f"COCO_{folder}_{imgid:012d}.jpg", "imgid": imgid,
                 "cocoid": 500 + imgid, "split": split, "sentences": _sentences(imgid, n, sentid)}
        entry["sentids"] = [s["sentid"] for s in entry["sentences"]]
        sentid += n
        images.append(entry)
        _jpeg(root / "images" / folder / entry["filename"], imgid)
    dup = json.loads(json.dumps(images[-1]))          # the same cocoid again, with one more caption
    dup["imgid"], dup["sentences"] = len(images), _sentences(len(images), 1, sentid)
    images.append(dup)
    (root / "dataset_coco.json").write_text(json.dumps({"images": images, "dataset": "coco"}))
    return root


@pytest.fixture
def tiny_flickr(tmp_path):
    """A Karpathy-format Flickr30K: 2 train and 3 test images with 5 captions each, flat image folder."""
    root = tmp_path / "flickr30k"
    images = []
    for imgid, split in enumerate(["train", "train", "test", "test", "test"]):
        entry = {"filename": f"{1000 + imgid}.jpg", "imgid": imgid, "split": split,
                 "sentences": _sentences(imgid, 5, 5 * imgid), "sentids": list(range(5 * imgid, 5 * imgid + 5))}
        images.append(entry)
        _jpeg(root / "flickr30k-images" / entry["filename"], 100 + imgid)
    (root / "dataset_flickr30k.json").write_text(json.dumps({"images": images, "dataset": "flickr30k"}))
    return root


@pytest.fixture(scope="session")
def smoke_world(tmp_path_factory):
    from thesis_lib import get_config
    from thesis_lib.data.world_files import ensure_world
    return ensure_world(get_config("smoke").data.world, tmp_path_factory.mktemp("world") / "w")
