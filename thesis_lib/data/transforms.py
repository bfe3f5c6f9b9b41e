"""Image views (docs/sources.md §3): the student's, the teacher's and the evaluation view.

* student: RandomResizedCrop(scale 0.9-1.0, bicubic) + horizontal flip, ImageNet mean/std;
* teacher: an independent second view, the same plus ColorJitter(0.4, 0.4, 0.4) (BEiT v2's augmentation);
* evaluation: Resize((S, S)) bicubic, no centre crop (aspect not preserved, as the thesis code does).

``*_transform`` are torchvision pipelines for one PIL image (DataLoader path, real data). ``BatchAugment`` draws the
same distributions for a whole uint8 batch in one vectorised call (crop boxes as sampling grids), used where the
images already sit in memory at their final size (the demo), so no per-image Python runs in the training loop.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch.nn import functional as F
from torchvision.transforms import v2 as T



@dataclass(frozen=True)
class ImageView:
    """The evaluation view of an image set: ``size`` × ``size`` pixels, normalised by ``mean`` and ``std``."""
    size: int
    mean: tuple = (0.485, 0.456, 0.406)
    std: tuple = (0.229, 0.224, 0.225)


RATIO = (3 / 4, 4 / 3)  # RandomResizedCrop's default aspect-ratio range
JITTER = 0.4


def _normalise(mean, std):
    return [T.ToImage(), T.ToDtype(torch.float32, scale=True), T.Normalize(mean, std)]


def student_transform(size: int, crop_scale=(0.9, 1.0), mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225)):
    return T.Compose([T.RandomResizedCrop(size, scale=crop_scale, interpolation=T.InterpolationMode.BICUBIC),
                      T.RandomHorizontalFlip(), *_normalise(mean, std)])


def teacher_transform(size: int, crop_scale=(0.9, 1.0), mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225)):
    return T.Compose([T.ColorJitter(JITTER, JITTER, JITTER), T.RandomHorizontalFlip(),
                      T.RandomResizedCrop(size, scale=crop_scale, interpolation=T.InterpolationMode.BICUBIC),
                      *_normalise(mean, std)])


def eval_transform(size: int, mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225)):
    return T.Compose([T.Resize((size, size), interpolation=T.InterpolationMode.BICUBIC), *_normalise(mean, std)])


class BatchAugment:
    """Random resized crop + flip (+ colour jitter) of a uint8 batch (B, 3, S, S) -> normalised float (B, 3, S, S)."""

    def __init__(self, crop_scale=(0.9, 1.0), mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225),
                 jitter: float = 0.0, flip: bool = True):
        self.crop_scale, self.jitter, self.flip = crop_scale, jitter, flip
        self.mean = torch.tensor(mean).view(1, 3, 1, 1) * 255
        self.std = torch.tensor(std).view(1, 3, 1, 1) * 255

    def crop_boxes(self, n: int, g: torch.Generator) -> torch.Tensor:
        """(n, 4) boxes (cx, cy, w, h) as fractions of the side, drawn like RandomResizedCrop."""
        u = torch.rand(n, 4, generator=g)
        area = self.crop_scale[0] + (self.crop_scale[1] - self.crop_scale[0]) * u[:, 0]
        log_r = math.log(RATIO[0]) + (math.log(RATIO[1]) - math.log(RATIO[0])) * u[:, 1]
        r = torch.exp(log_r)
        w = torch.sqrt(area * r).clamp(max=1.0)
        h = torch.sqrt(area / r).clamp(max=1.0)
        cx = w / 2 + (1 - w) * u[:, 2]
        cy = h / 2 + (1 - h) * u[:, 3]
        return torch.stack([cx, cy, w, h], dim=1)

    def __call__(self, images: torch.Tensor, g: torch.Generator, rows: tuple[int, int] | None = None) -> torch.Tensor:
        """``rows=(first, total)``: the images are rows first .. first + B of a batch of ``total`` (one process's
        share of the global batch): the views of all ``total`` are drawn and these rows' applied, so that a sample's
        view depends on its place in the global batch, not on how many processes share it. Default: (0, B)."""
        B = images.shape[0]
        first, total = rows or (0, B)
        own = slice(first, first + B)
        cx, cy, w, h = self.crop_boxes(total, g)[own].unbind(1)
        sign = (torch.where(torch.rand(total, generator=g) < 0.5, -1.0, 1.0) if self.flip else torch.ones(total))[own]
        x = images.float()
        zero = torch.zeros_like(w)          # output pixel u in [-1, 1] reads the input at scale · u + shift, per axis
        theta = torch.stack([torch.stack([w * sign, zero, 2 * cx - 1], 1), torch.stack([zero, h, 2 * cy - 1], 1)], 1)
        grid = F.affine_grid(theta, list(x.shape), align_corners=False).to(x.device)
        x = F.grid_sample(x, grid, mode="bicubic", padding_mode="border", align_corners=False).clamp_(0, 255)
        if self.jitter:
            x = self._colour_jitter(x, g, own, total)
        return (x - self.mean.to(x.device)) / self.std.to(x.device)

    def _colour_jitter(self, x: torch.Tensor, g: torch.Generator, own: slice, total: int) -> torch.Tensor:
        b, c, s = (1 + self.jitter * (2 * torch.rand(3, total, 1, 1, 1, generator=g)[:, own] - 1)).to(x.device)
        x = x * b                                                          # brightness
        gray = (0.299 * x[:, 0] + 0.587 * x[:, 1] + 0.114 * x[:, 2]).unsqueeze(1)
        x = (x - gray.mean((2, 3), keepdim=True)) * c + gray.mean((2, 3), keepdim=True)  # contrast
        gray = (0.299 * x[:, 0] + 0.587 * x[:, 1] + 0.114 * x[:, 2]).unsqueeze(1)
        return ((x - gray) * s + gray).clamp_(0, 255)                      # saturation


def normalise_uint8(images: torch.Tensor, mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225)) -> torch.Tensor:
    """The evaluation view of images already at the model's size: uint8 -> normalised float."""
    m = torch.tensor(mean, device=images.device).view(1, 3, 1, 1) * 255
    s = torch.tensor(std, device=images.device).view(1, 3, 1, 1) * 255
    return (images.float() - m) / s
