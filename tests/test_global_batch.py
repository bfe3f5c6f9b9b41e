"""2 processes × B and 1 process × 2B are the same run's data (issue 38): each sample's pair and views depend on its
place in the global batch, not on the number of processes; in memory (views drawn batch-wise) and from files (a
DataLoader, views seeded per sample), with the teacher's own augmented view."""
import pytest
import torch

from thesis_lib import get_config
from thesis_lib.data.tokenizer import CaptionTokenizer
from thesis_lib.data.train_pairs import TrainPairs
from thesis_lib.data.transforms import BatchAugment
from thesis_lib.full_scale.fixtures import jpeg_bytes, write_shard


@pytest.fixture
def shards(tmp_path, monkeypatch):
    monkeypatch.setenv("THESIS_DATA", str(tmp_path / "cache"))
    for s in range(2):
        write_shard(tmp_path / f"{s:05d}.tar", {f"{s:05d}{k:04d}": {"jpg": jpeg_bytes(10 * s + k, (40, 52)),
                                                                     "txt": f"caption {k}" + " long" * (k % 5)}
                                                 for k in range(12)})
    return tmp_path / "{00000..00001}.tar"


def _pairs(shards, in_memory, batch_size, rank=0, world_size=1):
    cfg = get_config("thesis", overrides={
        "data.train_sets": f"wds:{shards}", "data.root": str(shards.parent), "data.num_workers": 0,
        "data.in_memory": in_memory, "data.teacher_view": "augmented", "train.batch_size": batch_size,
        "model.image.img_size": 24, "model.image.patch_size": 8, "model.dim": 32, "model.num_heads": 2,
        "teacher.dim": 32, "teacher.num_heads": 2, "teacher.patch_size": 8})
    tok = CaptionTokenizer(lambda caps: [[5 + ord(c) % 40 for c in cap] for cap in caps], 64, 0, 2, 1, 3, 32, "chars")
    return TrainPairs.of(cfg, tok, shards.parent, rank, world_size)


def _padded(tokens, width, pad_id):
    return torch.nn.functional.pad(tokens, (0, width - tokens.shape[1]), value=pad_id)


@pytest.mark.parametrize("in_memory", [True, False])
def test_two_processes_draw_the_batches_one_process_draws_with_the_global_batch(shards, in_memory):
    """At every step (over an epoch boundary) the two ranks' batches, put together in rank order, are the one-process
    batch of twice the size: the same pairs, captions, student views and teacher views, tensor for tensor."""
    one = _pairs(shards, in_memory, 8)
    ranks = [_pairs(shards, in_memory, 4, rank, 2) for rank in range(2)]
    assert one.steps_per_epoch == ranks[0].steps_per_epoch == 3
    pad = one.pad_id
    for step, (whole, *parts) in enumerate(zip(one.batches(0, 5), *(p.batches(0, 5) for p in ranks))):
        assert whole.keys() == parts[0].keys() == {"images", "teacher_images", "tokens", "image_index"}
        for key in ("images", "teacher_images", "image_index"):
            assert torch.equal(torch.cat([p[key] for p in parts]), whole[key]), (step, key)
        width = max(whole["tokens"].shape[1], *(p["tokens"].shape[1] for p in parts))   # trimmed per batch
        assert torch.equal(torch.cat([_padded(p["tokens"], width, pad) for p in parts]),
                           _padded(whole["tokens"], width, pad)), step


def test_a_share_of_a_batch_gets_the_views_the_whole_batch_gives_those_rows():
    aug = BatchAugment(jitter=0.4)
    images = torch.randint(0, 256, (6, 3, 16, 16), dtype=torch.uint8)
    whole = aug(images, torch.Generator().manual_seed(7))
    assert torch.equal(aug(images, torch.Generator().manual_seed(7), (0, 6)), whole)       # the default
    share = aug(images[2:5], torch.Generator().manual_seed(7), (2, 6))
    assert torch.equal(share, whole[2:5])
