"""data/device_decode.py (``data.decoder=device``) on its CPU path: the workers hand over bytes, the training process
decodes the batch with ``decode_jpeg`` and draws both views seeded per sample as the workers seed them; non-JPEG
pictures fall back to the CPU decoder, undecodable ones are replaced; a smoke run trains with it from files."""
import io
import warnings

import numpy as np
import pytest
import torch
from PIL import Image

from thesis_lib import get_config, run_experiment
from thesis_lib.data.device_decode import decode_images, draw_views, read_bytes
from thesis_lib.data.tokenizer import CaptionTokenizer
from thesis_lib.data.train_pairs import TrainPairs
from thesis_lib.data.transforms import student_transform, teacher_transform
from thesis_lib.errors import ConfigError, DataWarning

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


def _encoded(seed: int, size=(48, 40), fmt="JPEG") -> bytes:
    g = torch.Generator().manual_seed(seed)
    pixels = torch.randint(0, 256, (size[1] // 8, size[0] // 8, 3), generator=g, dtype=torch.uint8).numpy()
    buf = io.BytesIO()
    Image.fromarray(pixels).resize(size, Image.BILINEAR).save(buf, format=fmt)
    return buf.getvalue()


def _tensor(data: bytes) -> torch.Tensor:
    return torch.frombuffer(bytearray(data), dtype=torch.uint8)


def test_a_batch_decodes_to_uint8_pictures_and_a_png_falls_back(tmp_path):
    files = []
    for i, (data, name) in enumerate([(_encoded(0), "a.jpg"), (_encoded(1, (64, 32)), "b.jpg"),
                                      (_encoded(2, fmt="PNG"), "c.png")]):
        (tmp_path / name).write_bytes(data)
        files.append(str(tmp_path / name))
    images = decode_images([read_bytes(f) for f in files], "cpu")
    assert [tuple(img.shape) for img in images] == [(3, 40, 48), (3, 32, 64), (3, 40, 48)]
    assert all(img.dtype == torch.uint8 and img.device.type == "cpu" for img in images)
    png = torch.from_numpy(np.array(Image.open(files[2]).convert("RGB"))).permute(2, 0, 1)
    assert torch.equal(images[2], png)                                       # the CPU decoder's pixels, exactly
    jpeg = torch.from_numpy(np.array(Image.open(files[0]).convert("RGB"))).permute(2, 0, 1)
    assert (images[0].float() - jpeg.float()).abs().mean() < 3               # another decoder: close, not equal


def test_a_broken_picture_is_none_and_does_not_fail_the_others():
    good = _tensor(_encoded(3))
    images = decode_images([good, good[:60], _tensor(b"not a picture"), torch.empty(0, dtype=torch.uint8)], "cpu")
    assert images[0].shape == (3, 40, 48) and images[1:] == [None, None, None]


def test_views_have_the_step_s_shape_and_normalisation_and_follow_the_seeds():
    images = decode_images([_tensor(_encoded(i, (48 + 8 * i, 40))) for i in range(4)], "cpu")
    student, teacher = student_transform(32, (0.9, 1.0), MEAN, STD), teacher_transform(32, (0.9, 1.0), MEAN, STD)
    seeds = torch.tensor([11, 12, 13, 2 ** 62 + 5])
    before = torch.get_rng_state()
    s, t = draw_views(images, seeds, student, teacher)
    assert torch.equal(torch.get_rng_state(), before)                        # the run's own stream untouched
    assert s.shape == t.shape == (4, 3, 32, 32) and s.dtype == t.dtype == torch.float32
    assert type(s) is torch.Tensor and type(t) is torch.Tensor
    low, high = (0 - max(MEAN)) / min(STD), (1 - min(MEAN)) / min(STD)      # [0, 1] normalised
    assert low - 1e-4 <= float(s.min()) and float(s.max()) <= high + 1e-4 and s.std() > 0.1
    s2, t2 = draw_views(images, seeds, student, teacher)
    assert torch.equal(s, s2) and torch.equal(t, t2)                        # the same seeds, the same views
    s3, t3 = draw_views(images, seeds + 1, student, teacher)
    assert not torch.equal(s, s3) and not torch.equal(t, t3)


def _pairs(root, decoder, workers=0):
    cfg = get_config("thesis", overrides={
        "data.train_sets": "coco", "data.root": str(root), "data.num_workers": workers, "data.decoder": decoder,
        "train.batch_size": 4, "model.image.img_size": 32, "model.image.patch_size": 8, "model.dim": 32,
        "model.num_heads": 2, "teacher.dim": 32, "teacher.num_heads": 2, "teacher.patch_size": 8})
    tok = CaptionTokenizer(lambda caps: [[5 + ord(c) % 40 for c in cap] for cap in caps], 64, 0, 2, 1, 3, 16, "chars")
    return TrainPairs.of(cfg, tok, root)


def test_train_pairs_on_the_device_path_draw_the_worker_paths_pairs_and_views_resumably(tiny_coco):
    device, pil = _pairs(tiny_coco.parent, "device", workers=2), _pairs(tiny_coco.parent, "pil")
    assert device.data_path_rate(cached_targets=False) is None              # the training process decodes
    ours, theirs = list(device.batches(0, 3, device="cpu")), list(pil.batches(0, 3))
    for a, b in zip(ours, theirs):
        assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in ("tokens", "image_index"))
        for key in ("images", "teacher_images"):
            assert a[key].shape == b[key].shape == (4, 3, 32, 32) and a[key].device.type == "cpu"
            # not bit-identical to pil (another decoder, resampling on tensors), but the same crops, flips and
            # jitter: another seed's views differ by ~0.8 on average here, these by < 0.01
            assert (a[key] - b[key]).abs().mean() < 0.05
    resumed = list(_pairs(tiny_coco.parent, "device").batches(1, 3))       # workers or none, resumed: the same
    assert all(torch.equal(a[k], b[k]) for a, b in zip(ours[1:], resumed) for k in a)


def test_an_undecodable_picture_is_replaced_by_the_next_pair_as_the_workers_do(tiny_coco):
    device, pil = _pairs(tiny_coco.parent, "device"), _pairs(tiny_coco.parent, "pil")
    images = device.pair_image[device.indices(0)]
    broken = device.image_files[int(images[0])]
    with open(broken, "r+b") as f:
        f.truncate(100)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ours, theirs = next(device.batches(0, 1)), next(pil.batches(0, 1))
    assert any(issubclass(w.category, DataWarning) and str(broken) in str(w.message) for w in caught)
    assert torch.equal(ours["image_index"], theirs["image_index"]) and torch.equal(ours["tokens"], theirs["tokens"])
    assert device.replaced_samples == pil.replaced_samples == int((images == images[0]).sum())   # rows of it


def test_the_device_decoder_needs_files():
    with pytest.raises(ConfigError, match="data.decoder=device"):
        get_config("smoke", overrides={"data.decoder": "device"})           # the smoke preset is in memory
    assert get_config("smoke", overrides={"data.decoder": "device", "data.in_memory": False}).data.decoder == "device"


def test_a_smoke_run_trains_from_files_with_the_device_decoder(tmp_path):
    result = run_experiment("smoke", "baseline", 0, out_dir=tmp_path, overrides={
        "data.in_memory": False, "data.decoder": "device", "train.steps": 3, "train.log_every": 1})
    assert result["train"]["steps"] == 3 and result["config"]["data"]["decoder"] == "device"
