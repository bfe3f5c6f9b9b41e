"""Shared fixtures: tiny real-format datasets and the smoke-scale world, built by the tests themselves. The
environment every test and notebook runs in (smoke scale, data folder) is set by the repository's root conftest.py."""
import pytest


@pytest.fixture
def tiny_coco(tmp_path):
    """A Karpathy-format COCO (thesis_lib.full_scale.fixtures.karpathy_coco)."""
    from thesis_lib.full_scale.fixtures import karpathy_coco
    return karpathy_coco(tmp_path / "coco")


@pytest.fixture
def tiny_flickr(tmp_path):
    """A Karpathy-format Flickr30K (thesis_lib.full_scale.fixtures.karpathy_flickr)."""
    from thesis_lib.full_scale.fixtures import karpathy_flickr
    return karpathy_flickr(tmp_path / "flickr30k")


@pytest.fixture(scope="session")
def smoke_world(tmp_path_factory):
    from thesis_lib import get_config
    from thesis_lib.data.world_files import ensure_world
    return ensure_world(get_config("smoke").data.world, tmp_path_factory.mktemp("world") / "w")
