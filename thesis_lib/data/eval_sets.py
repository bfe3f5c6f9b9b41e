"""The three evaluation sets (COCO-5K, Flickr30K-1K, ImageNet-1K zero-shot) as tensors or file lists, and their
evaluation-view image batches."""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

from ..cache import write_atomic
from ..config import ExperimentConfig
from . import datasets as ds
from .lifetime import loader_worker_init
from .roots import data_root, pair_records
from .tokenizer import CaptionTokenizer, tokenize
from .transforms import ImageView, eval_transform, normalise_uint8
from .world import Descriptions


class _ImageFiles(Dataset):
    def __init__(self, images: list, transform):
        self.images, self.transform = images, transform

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        return self.transform(ds.open_image(self.images[i]))


def image_batches(images, view: ImageView, batch_size: int, num_workers: int = 0):
    """Evaluation-view batches of an image set: a uint8 tensor (in memory) or a list of files (DataLoader)."""
    if isinstance(images, torch.Tensor):
        for i in range(0, len(images), batch_size):
            yield normalise_uint8(images[i:i + batch_size], view.mean, view.std)
        return
    t = eval_transform(view.size, view.mean, view.std)
    yield from DataLoader(_ImageFiles(images, t), batch_size=batch_size, num_workers=num_workers,
                          worker_init_fn=loader_worker_init())            # the workers end with this process


# ----------------------------------------------------------------------------------------------- evaluation sets


@dataclass
class RetrievalSet:
    name: str
    images: object               # uint8 tensor (N, 3, S, S) or list of files
    tokens: torch.Tensor         # (T, L) int32, every caption of every image
    text_to_image: torch.Tensor  # (T,)
    descriptions: Descriptions | None = None   # the world: what each caption names (true ITM negatives)

    def fits(self) -> torch.Tensor:
        """(N, T) bool: caption j may describe image i (its own, or on the world one naming nothing it lacks)."""
        if self.descriptions is None:
            return self.text_to_image[None, :] == torch.arange(int(self.text_to_image.max()) + 1)[:, None]
        return self.descriptions.fits(torch.arange(len(self.descriptions.objects)), torch.arange(len(self.tokens)))


@dataclass
class ZeroShotSet:
    images: object
    labels: torch.Tensor         # (N,)
    classnames: list[str]
    templates: list[str]
    prompt_tokens: torch.Tensor  # (C · n_templates, L): class-major


def decoded(files: list, size: int) -> torch.Tensor:
    """``load_uint8`` with a disk cache keyed by the files' names, sizes and modification times, so each image
    set is decoded once per machine rather than once per run."""
    import hashlib

    from ..paths import data_dir
    h = hashlib.sha1(str(size).encode())
    for f in files:
        st = os.stat(f) if isinstance(f, str) else None
        h.update(f"{f}:{st.st_size}:{st.st_mtime_ns}".encode() if st else repr(f).encode())
    path = data_dir() / "decoded" / f"{h.hexdigest()[:16]}.npy"
    if path.exists():
        return torch.from_numpy(np.load(path))
    images = ds.load_uint8(files, size)

    def save(tmp):
        with open(tmp, "wb") as f:
            np.save(f, images.numpy())
    write_atomic(path, save)
    return images


def _images(files: list, size: int, in_memory: bool):
    return decoded(files, size) if in_memory else files


def build_eval_sets(cfg: ExperimentConfig, tokenizer: CaptionTokenizer, root: Path | None = None):
    root = root or data_root(cfg)
    size = cfg.model.image.img_size
    sets = []
    for name in ("coco", "flickr30k"):
        images, captions, t2i = ds.retrieval_index(pair_records(name, "test", root))
        described = Descriptions.of(captions, t2i, len(images)) if cfg.data.source == "world" else None
        sets.append(RetrievalSet(name, _images(images, size, cfg.data.in_memory), tokenize(tokenizer, captions), t2i,
                                 described))
    records, classnames, templates = ds.load_imagenet_folder(root / "imagenet" / "val")
    if cfg.data.zeroshot_templates == "openai":
        templates = ds.imagenet_templates()
    prompts = [t.format(c) for c in classnames for t in templates]
    zs = ZeroShotSet(_images([r.image for r in records], size, cfg.data.in_memory),
                     torch.tensor([r.label for r in records]), classnames, templates, tokenize(tokenizer, prompts))
    return sets, zs


# ----------------------------------------------------------------------------------------------- training pairs
