"""Training pairs: one image-caption pair per sample, as the thesis trains. Batches are a pure function of
(seed, step, rank): the order is a seeded permutation per epoch and the views are drawn from a generator seeded by
the step, so a resumed run sees exactly the batches an uninterrupted run would have seen. A sample's pair and views
depend on its place in the *global* batch (rank × per-process batch + its row), not on the number of processes:
2 processes × 256 draw the same pairs and views as 1 × 512 (the seeds are those one process always drew with)."""
from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

from ..config import DataConfig, ExperimentConfig
from ..errors import DataError, DataWarning
from .decode import decode
from .device_decode import collate, decode_file, decode_images, draw_views, read_bytes
from .eval_sets import decoded, image_batches
from .lifetime import loader_worker_init
from .roots import data_root, pair_records
from .throughput import DataPathRate, measure_data_path, steps_to_measure
from .tokenizer import CaptionTokenizer, tokenize, trim
from .transforms import BatchAugment, ImageView, eval_transform, normalise_uint8, student_transform, teacher_transform
from .world import Descriptions


MAX_REPLACEMENTS = 16       # undecodable images in a row before the run stops: a broken set, not a broken image


def mix(*ints: int) -> int:
    """A deterministic 63-bit seed from integers (Python's hash() of strings changes between processes)."""
    return int(np.random.SeedSequence([int(i) for i in ints]).generate_state(2, np.uint64)[0] >> np.uint64(1))


class TrainPairs:
    """Every (image, caption) pair of the training sets; ``batches(start, stop)`` yields one process's share of
    each step, in memory (uint8 tensor + vectorised views) or from files (a DataLoader with workers)."""

    def __init__(self, data: DataConfig, tokenizer: CaptionTokenizer, root: Path, *, seed: int, batch_size: int,
                 img_size: int, itm: bool, rank: int = 0, world_size: int = 1):
        """``data``: the sets and how views are made; ``batch_size``: per process; ``itm``: batches carry the
        ``fits`` mask an image-text matching loss needs (variants with a fusion head). ``of(cfg, ...)`` reads
        these from an experiment config."""
        self.shard_reports = {}                  # wds: sets, what their shards held (broken samples counted)
        records = [r for name in data.train_sets for r in pair_records(name, "train", root, self.shard_reports)]
        self.image_files = [r.image for r in records]
        self.tokens = tokenize(tokenizer, [c for r in records for c in r.captions])
        self.pair_image = torch.tensor([i for i, r in enumerate(records) for _ in r.captions])
        self.descriptions = (Descriptions.of([c for r in records for c in r.captions], self.pair_image, len(records))
                             if itm and data.source == "world" else None)   # true ITM negatives
        self.images = decoded(self.image_files, img_size) if data.in_memory else None
        self._sample(data, tokenizer.pad_id, seed, batch_size, img_size, itm, rank, world_size)

    @classmethod
    def of(cls, cfg: ExperimentConfig, tokenizer: CaptionTokenizer, root: Path | None = None, rank: int = 0,
           world_size: int = 1) -> "TrainPairs":
        """The training pairs of an experiment config (its data root unless ``root`` is given)."""
        return cls(cfg.data, tokenizer, root or data_root(cfg), seed=cfg.seed, batch_size=cfg.train.batch_size,
                   img_size=cfg.model.image.img_size, itm=bool(cfg.model.spec.fusion), rank=rank,
                   world_size=world_size)

    def _sample(self, data: DataConfig, pad_id: int, seed: int, batch_size: int, img_size: int, itm: bool,
                rank: int, world_size: int):
        """How batches are drawn from the pairs held (self.pair_image): shared with stand-ins that hold their own."""
        self.data, self.pad_id, self.seed, self.batch_size = data, pad_id, seed, batch_size
        self.img_size, self.itm, self.rank, self.world_size = img_size, itm, rank, world_size
        self.global_batch = batch_size * world_size
        if len(self.pair_image) < self.global_batch:
            raise DataError(f"the training set has {len(self.pair_image)} pairs, fewer than one global batch "
                            f"({self.global_batch}); lower train.batch_size")
        self.steps_per_epoch = len(self.pair_image) // self.global_batch   # drop_last, as the thesis
        self.student_aug = BatchAugment(data.crop_scale, data.mean, data.std)
        self.teacher_aug = BatchAugment(data.crop_scale, data.mean, data.std, jitter=0.4)
        self._perm = (None, None)
        self.replaced_samples = 0                # file path: samples whose image did not decode (_StepStream)

    def __len__(self):
        return len(self.pair_image)

    def indices(self, step: int) -> torch.Tensor:
        """Pair indices of this process at ``step``: a fresh seeded permutation every epoch, drop_last."""
        epoch, offset = divmod(step, self.steps_per_epoch)
        if self._perm[0] != epoch:
            g = torch.Generator().manual_seed(mix(self.seed, epoch))
            self._perm = (epoch, torch.randperm(len(self.pair_image), generator=g))
        start = offset * self.global_batch + self.rank * self.batch_size
        return self._perm[1][start:start + self.batch_size]

    def fits(self, pairs: torch.Tensor) -> torch.Tensor:
        """(B, B) bool for the pairs of a batch: caption j may describe the image of pair i (the same image, or, on
        the world, a caption naming nothing the picture lacks): what an ITM negative must not be."""
        images = self.pair_image[pairs]
        if self.descriptions is None:
            return images[:, None] == images[None, :]
        return self.descriptions.fits(images, pairs)

    def batch(self, step: int, teacher_targets: torch.Tensor | None = None) -> dict:
        """In-memory batch: {"images", "tokens", "image_index"} + "targets" (cached teacher CLS) or
        "teacher_images" (the teacher's own view); "fits" for a variant with a fusion head."""
        idx = self.indices(step)
        image_idx = self.pair_image[idx]
        g = torch.Generator().manual_seed(mix(self.seed, step, 0))       # the global batch's views: as rank 0
        rows = (self.rank * self.batch_size, self.global_batch)             # of one process drew them
        raw = self.images[image_idx]
        out = {"tokens": trim(self.tokens[idx], self.pad_id), "image_index": image_idx,
               "images": self.student_aug(raw, g, rows)}
        if self.itm:
            out["fits"] = self.fits(idx)
        if teacher_targets is not None:
            out["targets"] = teacher_targets[image_idx]
        elif self.data.teacher_view == "augmented":
            out["teacher_images"] = self.teacher_aug(raw, g, rows)
        else:
            out["teacher_images"] = normalise_uint8(raw, self.data.mean, self.data.std)
        return out

    def batches(self, start_step: int, stop_step: int, teacher_targets: torch.Tensor | None = None, device=None):
        """The batches of steps ``start_step`` .. ``stop_step``. With ``data.decoder=device`` the workers only read
        the images' bytes and the images are decoded and viewed on ``device`` (default: the CPU) here, on the
        training process (data/device_decode.py); the other decoders ignore ``device``."""
        if self.images is not None:
            for step in range(start_step, stop_step):
                yield self.batch(step, teacher_targets)
            return
        workers, on_device = self.data.num_workers, self.data.decoder == "device"
        stream = _StepStream(self, start_step, stop_step, draw_teacher_view=teacher_targets is None,
                             read_only=on_device)
        loader = DataLoader(stream, batch_size=self.batch_size, generator=torch.Generator(),   # see _TeacherViews
                            num_workers=workers, persistent_workers=workers > 0, pin_memory=torch.cuda.is_available(),
                            worker_init_fn=loader_worker_init(),           # the workers end with this process
                            collate_fn=collate if on_device else None)
        for item in loader:
            images, teacher_images, tokens, pairs, replaced = (
                self._on_device(stream, *item, torch.device(device or "cpu")) if on_device else item)
            self.replaced_samples += int(replaced.sum())
            image_idx = self.pair_image[pairs]
            out = {"images": images, "tokens": trim(tokens, self.pad_id), "image_index": image_idx}
            if self.itm:
                out["fits"] = self.fits(pairs)
            if teacher_targets is not None:
                out["targets"] = teacher_targets[image_idx]
            else:
                out["teacher_images"] = teacher_images
            yield out

    def _on_device(self, stream: "_StepStream", data: list, tokens: torch.Tensor, pairs: torch.Tensor,
                   seeds: torch.Tensor, device: torch.device) -> tuple:
        """``data.decoder=device``: a batch of encoded pictures decoded and viewed on ``device``. A picture no
        decoder reads is replaced, with its caption, by the next decodable pair in index order, as a worker does."""
        images = decode_images(data, device)
        replaced = torch.zeros(len(data), dtype=torch.long)
        for row, img in enumerate(images):
            if img is None:
                p, images[row], moved = stream._decodable(int(pairs[row]), lambda f: decode_file(f, device))
                pairs[row], tokens[row], replaced[row] = p, self.tokens[p], int(moved)
        return (*draw_views(images, seeds, stream.student, stream.teacher), tokens, pairs, replaced)

    def data_path_rate(self, cached_targets: bool) -> DataPathRate | None:
        """What the file-reading path can deliver (pairs/s), measured on this run's own first samples; None in
        memory, where the views are drawn batch-wise on the training process, and with ``data.decoder=device``,
        where the training process decodes (its time counts in the run's ``data_wait_s``)."""
        if self.images is not None or self.data.decoder == "device":
            return None
        steps = min(steps_to_measure(self.batch_size), self.steps_per_epoch)
        stream = _StepStream(self, 0, steps, draw_teacher_view=not cached_targets)
        return measure_data_path(stream, self.batch_size, self.data.decoder, self.data.num_workers)

    def teacher_view_images(self, batch_size: int, start: int = 0, stop: int | None = None):
        """The fixed teacher view of the training images ``start`` to ``stop`` (default: every one), in order, in
        batches counted from ``start`` (to cache teacher targets once; several processes each take a slice). From
        files, an image that does not decode gives a view of NaNs and a ``DataWarning``: its pairs are replaced in
        training (``_StepStream._decodable``), so its target is never read, and were it read the loss would turn
        non-finite and stop the run."""
        view = ImageView(self.img_size, self.data.mean, self.data.std)
        if self.images is not None:
            return image_batches(self.images[start:stop], view, batch_size, self.data.num_workers)
        return DataLoader(_TeacherViews(self.image_files[start:stop], view), batch_size=batch_size,
                          num_workers=self.data.num_workers, generator=torch.Generator(),
                          worker_init_fn=loader_worker_init())


class _TeacherViews(Dataset):
    """The fixed (evaluation) view of each training image file; NaNs for one that does not decode. Its loader, as the
    training batches' one, draws its workers' base seed from a generator of its own, not from the global stream a
    checkpoint saves: a resumed run's stream then equals an uninterrupted one's whichever process built the teacher
    cache (the samples are seeded one by one: ``_StepStream``)."""

    def __init__(self, files: list, view: ImageView):
        self.files, self.view = files, view
        self.transform = eval_transform(view.size, view.mean, view.std)

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        try:
            return self.transform(decode(self.files[i]))
        except DataError as err:
            warnings.warn(f"{err}: its teacher target is cached as NaN (its pairs are replaced in training)",
                          DataWarning, stacklevel=2)
            return torch.full((3, self.view.size, self.view.size), float("nan"))


class _StepStream(Dataset):
    """Item k = sample j = k % B of step start + k // B of this process; each sample's randomness is seeded by
    (seed, step, 0, rank × B + j), its place in the global batch (the 0 stands where one process's rank always
    stood), so the stream is the same on any number of processes, whichever worker decodes it and after a resume.
    With cached teacher targets the teacher's (fixed, unrandomised) view is not drawn: an empty tensor stands in.
    ``read_only`` (``data.decoder=device``): item k is the image's encoded bytes, its caption, its pair and its seed;
    the training process decodes and draws the views (``TrainPairs._on_device``) with ``student`` and ``teacher``."""

    def __init__(self, pairs: TrainPairs, start: int, stop: int, draw_teacher_view: bool = True,
                 read_only: bool = False):
        data, size = pairs.data, pairs.img_size
        self.pairs, self.start, self.stop, self.B, self.read_only = pairs, start, stop, pairs.batch_size, read_only
        self.student = student_transform(size, data.crop_scale, data.mean, data.std)
        self.teacher = (teacher_transform(size, data.crop_scale, data.mean, data.std)
                        if data.teacher_view == "augmented" else eval_transform(size, data.mean, data.std))
        if not draw_teacher_view:
            self.teacher = _empty

    def __len__(self):
        return (self.stop - self.start) * self.B

    def __getitem__(self, k):
        step, j = divmod(k, self.B)
        step += self.start
        seed = mix(self.pairs.seed, step, 0, self.pairs.rank * self.B + j)
        if self.read_only:
            pair = int(self.pairs.indices(step)[j])
            file = self.pairs.image_files[int(self.pairs.pair_image[pair])]
            return read_bytes(file), self.pairs.tokens[pair], pair, seed
        pair, img, replaced = self._decodable(int(self.pairs.indices(step)[j]))
        torch.manual_seed(seed)
        return self.student(img), self.teacher(img), self.pairs.tokens[pair], pair, int(replaced)

    def _decodable(self, pair: int, decode_image=None):
        """The pair and its decoded image (by ``data.decoder``, or ``decode_image(file)``). An image that is
        complete on disk but does not decode (the shard index checks markers, not every pixel) is replaced by the
        next pair in index order that does: the same one on every pass and after a resume. Counted by
        ``TrainPairs.replaced_samples`` and warned about (per worker)."""
        n, data = len(self.pairs.pair_image), self.pairs.data
        for offset in range(MAX_REPLACEMENTS + 1):
            p = (pair + offset) % n
            file = self.pairs.image_files[int(self.pairs.pair_image[p])]
            try:
                img = (decode_image(file) if decode_image is not None
                       else decode(file, data.decoder, self.pairs.img_size))
                return p, img, offset > 0
            except DataError as err:
                warnings.warn(f"{err}: pair {p} replaced by the next decodable pair", DataWarning, stacklevel=2)
                last = err
        raise DataError(f"{MAX_REPLACEMENTS + 1} images in a row from pair {pair} do not decode (the last: {last})")


def _empty(img) -> torch.Tensor:
    return torch.empty(0)
