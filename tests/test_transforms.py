import torch
from PIL import Image

from thesis_lib.data.transforms import (
    BatchAugment,
    eval_transform,
    normalise_uint8,
    student_transform,
    teacher_transform,
)


def _batch(n=4, s=16):
    return torch.randint(0, 256, (n, 3, s, s), generator=torch.Generator().manual_seed(0), dtype=torch.uint8)


def test_crop_boxes_follow_random_resized_crop():
    aug = BatchAugment(crop_scale=(0.9, 1.0))
    cx, cy, w, h = aug.crop_boxes(10_000, torch.Generator().manual_seed(0)).unbind(1)
    assert (w <= 1).all() and (h <= 1).all() and (w * h >= 0.9 * 0.86).all()   # area ≥ 0.9 up to the side clamp
    assert (cx - w / 2 >= -1e-6).all() and (cx + w / 2 <= 1 + 1e-6).all() and (cy + h / 2 <= 1 + 1e-6).all()


def test_full_box_is_the_identity_and_flip_mirrors(monkeypatch):
    x = _batch()
    full = torch.tensor([[0.5, 0.5, 1.0, 1.0]]).repeat(4, 1)
    aug = BatchAugment(flip=False)
    monkeypatch.setattr(aug, "crop_boxes", lambda n, g: full)
    assert torch.allclose(aug(x, torch.Generator()), normalise_uint8(x), atol=1e-4)
    flip = BatchAugment(flip=True)
    monkeypatch.setattr(flip, "crop_boxes", lambda n, g: full)
    g = torch.Generator().manual_seed(1)
    out = flip(x, g)
    flipped = normalise_uint8(x.flip(-1))
    per_image = [torch.allclose(o, f, atol=1e-4) or torch.allclose(o, n, atol=1e-4)
                 for o, f, n in zip(out, flipped, normalise_uint8(x))]
    assert all(per_image)


def test_views_are_seeded_and_jitter_changes_colour():
    x = _batch()
    aug = BatchAugment(jitter=0.4)
    a = aug(x, torch.Generator().manual_seed(5))
    b = aug(x, torch.Generator().manual_seed(5))
    c = aug(x, torch.Generator().manual_seed(6))
    assert torch.equal(a, b) and not torch.equal(a, c) and a.shape == (4, 3, 16, 16)


def test_pil_pipelines_shapes():
    img = Image.new("RGB", (40, 30), (200, 10, 10))
    for t in (student_transform(16), teacher_transform(16), eval_transform(16)):
        assert t(img).shape == (3, 16, 16)
    red = eval_transform(16)(img)[0, 0, 0]
    assert abs(red.item() - (200 / 255 - 0.485) / 0.229) < 1e-3
