"""Shared fixtures: tiny real-format datasets and the smoke-scale world, built by the tests themselves.

Before anything imports torch: the CPU instruction-set pin (thesis_lib/assets/cpu_pin.env; `make test` exports it
too, a value already in the environment is kept and the golden test then says it is not the pin) and the smoke scale
for the notebooks under nbval, whatever THESIS_PRESET the shell holds.
"""
import os
import tempfile
from pathlib import Path

_PIN = Path(__file__).resolve().parents[1] / "thesis_lib" / "assets" / "cpu_pin.env"
for _line in _PIN.read_text().splitlines():
    if _line.strip() and not _line.startswith("#"):
        os.environ.setdefault(*_line.strip().split("=", 1))

import pytest  # noqa: E402

os.environ["THESIS_PRESET"] = "smoke"   # notebooks under nbval run at the smoke scale
os.environ.setdefault("THESIS_PROGRESS", "0")
os.environ.setdefault("THESIS_DATA", tempfile.mkdtemp(prefix="thesis-data-"))   # worlds, pretraining, caches


def pytest_collectstart(collector):
    # nbval: stderr (warnings, progress bars) is never compared
    if collector.fspath and collector.fspath.ext == ".ipynb":
        collector.skip_compare += ("stderr",)


@pytest.fixture
def tiny_coco(tmp_path):
    """A Karpathy-format COCO (thesis_lib.study.fixtures.karpathy_coco)."""
    from thesis_lib.study.fixtures import karpathy_coco
    return karpathy_coco(tmp_path / "coco")


@pytest.fixture
def tiny_flickr(tmp_path):
    """A Karpathy-format Flickr30K (thesis_lib.study.fixtures.karpathy_flickr)."""
    from thesis_lib.study.fixtures import karpathy_flickr
    return karpathy_flickr(tmp_path / "flickr30k")


@pytest.fixture(scope="session")
def smoke_world(tmp_path_factory):
    from thesis_lib import get_config
    from thesis_lib.data.world_files import ensure_world
    return ensure_world(get_config("smoke").data.world, tmp_path_factory.mktemp("world") / "w")
