"""From a config to tensors: training pairs (one image-caption pair per sample, as the thesis trains) and the three
evaluation sets (COCO-5K, Flickr30K-1K, ImageNet-1K zero-shot), for the embedded world and the real data alike.

Both kinds of data have one layout under their root (the world writes it; put your copies the same way)::

    coco/dataset_coco.json            coco/images/{train2014,val2014}/*.jpg
    flickr30k/dataset_flickr30k.json  flickr30k/flickr30k-images/*.jpg
    imagenet/val/<wnid>/*.JPEG        (+ optional imagenet/classnames.json, templates.json)

Captions are tokenised once. Batches are a pure function of (seed, step, rank): the order is a seeded permutation
per epoch and the views are drawn from a generator seeded by the step, so a resumed run sees exactly the batches
an uninterrupted run would have seen.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

from . import datasets as ds
from .config import ExperimentConfig
from .errors import DataError
from .tokenizer import CaptionTokenizer
from .transforms import BatchAugment, eval_transform, normalise_uint8, student_transform, teacher_transform

TRAIN_SETS = {"coco": ("coco/dataset_coco.json", "coco/images"),
              "flickr30k": ("flickr30k/dataset_flickr30k.json", "flickr30k/flickr30k-images")}


def data_root(cfg: ExperimentConfig) -> Path:
    if cfg.data.source == "world":
        from .world_files import ensure_world
        return ensure_world(cfg.data.world, cfg.data.root or None)
    if not cfg.data.root:
        raise DataError("no data root given for the real data; pass data_root (a folder holding coco/, flickr30k/ "
                        "and imagenet/val/, see thesis_lib.pipeline)")
    root = Path(cfg.data.root)
    if not root.is_dir():
        raise DataError(f"data root not found: {root}")
    return root


def pair_records(cfg: ExperimentConfig, name: str, split: str, root: Path) -> list[ds.PairRecord]:
    if name.startswith("hf:"):
        return ds.load_hf_pairs(name[3:], split=split)
    if name not in TRAIN_SETS:
        raise DataError(f"unknown pair dataset {name!r}; use coco, flickr30k or hf:<name or folder>")
    rel_json, rel_images = TRAIN_SETS[name]
    return ds.load_karpathy_split(root / rel_json, root / rel_images, split)


def tokenize(tokenizer: CaptionTokenizer, captions: list[str], chunk: int = 65536) -> torch.Tensor:
    """All captions at once -> (n, max_len) int32 (padding = tokenizer.pad_id)."""
    parts = [tokenizer(captions[i:i + chunk])[0].to(torch.int32) for i in range(0, len(captions), chunk)]
    return torch.cat(parts) if parts else torch.empty(0, tokenizer.max_len, dtype=torch.int32)


def trim(tokens: torch.Tensor, pad_id: int) -> torch.Tensor:
    """Drop the columns that are padding in every row (exact: pads are masked in attention)."""
    longest = int(tokens.ne(pad_id).sum(1).max()) if len(tokens) else 1
    return tokens[:, :max(longest, 1)].long()


class _ImageFiles(Dataset):
    def __init__(self, images: list, transform):
        self.images, self.transform = images, transform

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        return self.transform(ds.open_image(self.images[i]))


def image_batches(images, cfg: ExperimentConfig, batch_size: int):
    """Evaluation-view batches of an image set: a uint8 tensor (in memory) or a list of files (DataLoader)."""
    if isinstance(images, torch.Tensor):
        for i in range(0, len(images), batch_size):
            yield normalise_uint8(images[i:i + batch_size], cfg.data.mean, cfg.data.std)
        return
    t = eval_transform(cfg.model.image.img_size, cfg.data.mean, cfg.data.std)
    yield from DataLoader(_ImageFiles(images, t), batch_size=batch_size, num_workers=cfg.data.num_workers)


# ----------------------------------------------------------------------------------------------- evaluation sets

@dataclass
class RetrievalSet:
    name: str
    images: object               # uint8 tensor (N, 3, S, S) or list of files
    tokens: torch.Tensor         # (T, L) int32, every caption of every image
    text_to_image: torch.Tensor  # (T,)


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
    from .paths import data_dir
    h = hashlib.sha1(str(size).encode())
    for f in files:
        st = os.stat(f) if isinstance(f, str) else None
        h.update(f"{f}:{st.st_size}:{st.st_mtime_ns}".encode() if st else repr(f).encode())
    path = data_dir() / "decoded" / f"{h.hexdigest()[:16]}.npy"
    if path.exists():
        return torch.from_numpy(np.load(path))
    images = ds.load_uint8(files, size)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.stem}.{os.getpid()}.npy")
    np.save(tmp, images.numpy())
    os.replace(tmp, path)
    return images


def _images(cfg, files: list):
    return decoded(files, cfg.model.image.img_size) if cfg.data.in_memory else files


def build_eval_sets(cfg: ExperimentConfig, tokenizer: CaptionTokenizer, root: Path | None = None):
    root = root or data_root(cfg)
    sets = []
    for name in ("coco", "flickr30k"):
        images, captions, t2i = ds.retrieval_index(pair_records(cfg, name, "test", root))
        sets.append(RetrievalSet(name, _images(cfg, images), tokenize(tokenizer, captions), t2i))
    records, classnames, templates = ds.load_imagenet_folder(root / "imagenet" / "val")
    if cfg.data.zeroshot_templates == "openai":
        templates = ds.imagenet_templates()
    prompts = [t.format(c) for c in classnames for t in templates]
    zs = ZeroShotSet(_images(cfg, [r.image for r in records]), torch.tensor([r.label for r in records]),
                     classnames, templates, tokenize(tokenizer, prompts))
    return sets, zs


# ----------------------------------------------------------------------------------------------- training pairs

def mix(*ints: int) -> int:
    """A deterministic 63-bit seed from integers (Python's hash() of strings changes between processes)."""
    return int(np.random.SeedSequence([int(i) for i in ints]).generate_state(2, np.uint64)[0] >> np.uint64(1))


class TrainPairs:
    """Every (image, caption) pair of the training sets; ``batches(start, stop)`` yields one process's share of
    each step, in memory (uint8 tensor + vectorised views) or from files (a DataLoader with workers)."""

    def __init__(self, cfg: ExperimentConfig, tokenizer: CaptionTokenizer, root: Path | None = None,
                 rank: int = 0, world_size: int = 1):
        root = root or data_root(cfg)
        records = [r for name in cfg.data.train_sets for r in pair_records(cfg, name, "train", root)]
        self.cfg, self.rank, self.world_size = cfg, rank, world_size
        self.pad_id = tokenizer.pad_id
        self.image_files = [r.image for r in records]
        self.tokens = tokenize(tokenizer, [c for r in records for c in r.captions])
        self.pair_image = torch.tensor([i for i, r in enumerate(records) for _ in r.captions])
        self.images = decoded(self.image_files, cfg.model.image.img_size) if cfg.data.in_memory else None
        self.global_batch = cfg.train.batch_size * world_size
        if len(self.pair_image) < self.global_batch:
            raise DataError(f"the training set has {len(self.pair_image)} pairs, fewer than one global batch "
                            f"({self.global_batch}); lower train.batch_size")
        self.steps_per_epoch = len(self.pair_image) // self.global_batch   # drop_last, as the thesis
        self.student_aug = BatchAugment(cfg.data.crop_scale, cfg.data.mean, cfg.data.std)
        self.teacher_aug = BatchAugment(cfg.data.crop_scale, cfg.data.mean, cfg.data.std, jitter=0.4)
        self._perm = (None, None)

    def __len__(self):
        return len(self.pair_image)

    def indices(self, step: int) -> torch.Tensor:
        """Pair indices of this process at ``step``: a fresh seeded permutation every epoch, drop_last."""
        epoch, offset = divmod(step, self.steps_per_epoch)
        if self._perm[0] != epoch:
            g = torch.Generator().manual_seed(mix(self.cfg.seed, epoch))
            self._perm = (epoch, torch.randperm(len(self.pair_image), generator=g))
        start = offset * self.global_batch + self.rank * self.cfg.train.batch_size
        return self._perm[1][start:start + self.cfg.train.batch_size]

    def batch(self, step: int, teacher_targets: torch.Tensor | None = None) -> dict:
        """In-memory batch: {"images", "tokens", "image_index"} + "targets" (cached teacher CLS) or
        "teacher_images" (the teacher's own view)."""
        idx = self.indices(step)
        image_idx = self.pair_image[idx]
        g = torch.Generator().manual_seed(mix(self.cfg.seed, step, self.rank))
        raw = self.images[image_idx]
        out = {"tokens": trim(self.tokens[idx], self.pad_id), "image_index": image_idx,
               "images": self.student_aug(raw, g)}
        if teacher_targets is not None:
            out["targets"] = teacher_targets[image_idx]
        elif self.cfg.data.teacher_view == "augmented":
            out["teacher_images"] = self.teacher_aug(raw, g)
        else:
            out["teacher_images"] = normalise_uint8(raw, self.cfg.data.mean, self.cfg.data.std)
        return out

    def batches(self, start_step: int, stop_step: int, teacher_targets: torch.Tensor | None = None):
        if self.images is not None:
            for step in range(start_step, stop_step):
                yield self.batch(step, teacher_targets)
            return
        workers = self.cfg.data.num_workers
        loader = DataLoader(_StepStream(self, start_step, stop_step), batch_size=self.cfg.train.batch_size,
                            num_workers=workers, persistent_workers=workers > 0, pin_memory=torch.cuda.is_available())
        for images, teacher_images, tokens, image_idx in loader:
            out = {"images": images, "tokens": trim(tokens, self.pad_id), "image_index": image_idx}
            if teacher_targets is not None:
                out["targets"] = teacher_targets[image_idx]
            else:
                out["teacher_images"] = teacher_images
            yield out

    def teacher_view_images(self, batch_size: int):
        """The fixed teacher view of every training image, in order (to cache teacher targets once)."""
        source = self.images if self.images is not None else self.image_files
        return image_batches(source, self.cfg, batch_size)


class _StepStream(Dataset):
    """Item k = sample k % B of step start + k // B of this process; each sample's randomness is seeded by
    (seed, step, rank, k), so the stream is the same whichever worker decodes it and after a resume."""

    def __init__(self, pairs: TrainPairs, start: int, stop: int):
        cfg, size = pairs.cfg, pairs.cfg.model.image.img_size
        self.pairs, self.start, self.stop, self.B = pairs, start, stop, cfg.train.batch_size
        self.student = student_transform(size, cfg.data.crop_scale, cfg.data.mean, cfg.data.std)
        self.teacher = (teacher_transform(size, cfg.data.crop_scale, cfg.data.mean, cfg.data.std)
                        if cfg.data.teacher_view == "augmented" else eval_transform(size, cfg.data.mean, cfg.data.std))

    def __len__(self):
        return (self.stop - self.start) * self.B

    def __getitem__(self, k):
        step, j = divmod(k, self.B)
        step += self.start
        pair = int(self.pairs.indices(step)[j])
        image = int(self.pairs.pair_image[pair])
        torch.manual_seed(mix(self.pairs.cfg.seed, step, self.pairs.rank, j))
        img = ds.open_image(self.pairs.image_files[image])
        return self.student(img), self.teacher(img), self.pairs.tokens[pair], image


def seed_everything(seed: int) -> None:
    import random
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
