"""``data.decoder=device``: JPEG decoding and both views on the training process's device, for hosts with few cores.

The DataLoader workers only read each training image's bytes (``read_bytes``) and hand them over as a list of uint8
1-D tensors (``collate``; captions, pairs and seeds as usual). On the training process, before the step,
``decode_images`` decodes the batch with ``torchvision.io.decode_jpeg(list, device=device, mode=RGB)`` (batched
nvJPEG on CUDA; on the CPU the same call decodes on the CPU: the path the tests run) and ``draw_views`` draws the
student's and the teacher's view of each image with the torchvision v2 transforms of ``data/transforms.py`` on
tensors (the same parameters as the ``pil`` path: crop scale, bicubic, flip, colour jitter, mean/std).

Randomness: each sample's views are drawn right after seeding torch's CPU generator with the seed the worker path
uses for it (``mix(seed, step, 0, global row)``, ``train_pairs._StepStream``), and the run's own generator is
restored afterwards, so a resumed run gets the same views on the same device, on any number of processes. The
transforms' random parameters (crop box, flip, jitter factors and order) are those the worker path draws for the
sample (they depend on the seed and the picture's size only), but the pixels are **not bit-identical** to the
``pil`` decoder's: another JPEG decoder (libjpeg-turbo or nvJPEG: other IDCT and chroma upsampling) and
resampling on tensors rather than PIL's; on CUDA they also depend on the GPU's kernels. Its speed on a GPU has not
been measured yet (docs/full_scale.md).

Non-JPEG bytes (PNG, ...) and JPEGs the device decoder refuses (a CMYK picture on nvJPEG) are decoded on the CPU
(``datasets.open_image``, as ``data/decode.py`` falls back) and moved to the device. An image no decoder reads is
``None`` in ``decode_images``' answer: ``TrainPairs`` replaces its pair by the next decodable one in index order, as
the workers do (``decode_file`` decodes one file there, naming it in the error).
"""
from __future__ import annotations

import torch
from torch.utils.data import default_collate
from torchvision.io import ImageReadMode, decode_jpeg
from torchvision.transforms.v2.functional import pil_to_tensor

from ..errors import DataError
from .datasets import open_image
from .decode import encoded_bytes


def read_bytes(image) -> torch.Tensor:
    """A training image's encoded bytes (path or TarMember) as a uint8 1-D tensor; empty when the file cannot be
    read (the training process then replaces the pair and names the file: ``decode_file``)."""
    try:
        data = encoded_bytes(image)
    except (OSError, DataError):
        data = None
    return torch.frombuffer(bytearray(data), dtype=torch.uint8) if data else torch.empty(0, dtype=torch.uint8)


def collate(samples: list) -> tuple:
    """(bytes, tokens, pair, seed) samples -> (list of byte tensors, tokens (B, L), pairs (B,), seeds (B,))."""
    data, *rest = zip(*samples)
    return (list(data), *default_collate(list(zip(*rest))))


def _is_jpeg(data: torch.Tensor) -> bool:
    return data.numel() > 2 and int(data[0]) == 0xFF and int(data[1]) == 0xD8


def _decode_one(data: torch.Tensor, device: torch.device, image=None) -> torch.Tensor:
    """One picture: on ``device`` if it is a JPEG the device decodes, else on the CPU (``open_image`` of ``image``
    if given, else of the bytes; raises DataError) and moved there."""
    if _is_jpeg(data):
        try:
            return decode_jpeg(data, device=device, mode=ImageReadMode.RGB)
        except RuntimeError:
            pass
    source = image if image is not None else bytes(data.numpy())
    return pil_to_tensor(open_image(source)).to(device)


def decode_images(data: list, device) -> list:
    """uint8 (3, H, W) tensors on ``device`` for a batch of encoded pictures (uint8 1-D CPU tensors), the JPEGs in
    one ``decode_jpeg`` call; None for a picture no decoder reads."""
    device = torch.device(device)
    out = [None] * len(data)
    jpegs = [i for i, d in enumerate(data) if _is_jpeg(d)]
    if jpegs:
        try:
            for i, img in zip(jpegs, decode_jpeg([data[i] for i in jpegs], device=device, mode=ImageReadMode.RGB)):
                out[i] = img
        except RuntimeError:                      # one broken picture fails the whole call: each alone below
            pass
    for i, img in enumerate(out):
        if img is None:
            try:
                out[i] = _decode_one(data[i], device)
            except DataError:
                pass
    return out


def decode_file(image, device) -> torch.Tensor:
    """One training image (path or TarMember) decoded on ``device``; a DataError naming the file if none reads it."""
    return _decode_one(read_bytes(image), torch.device(device), image)


def draw_views(images: list, seeds: torch.Tensor, student, teacher) -> tuple[torch.Tensor, torch.Tensor]:
    """The student's and the teacher's views of each image (stacked, float, on the images' device): sample j's after
    seeding torch's CPU generator (the one the v2 transforms draw from) with ``seeds[j]``, as a worker seeds it;
    that generator is restored afterwards (the CUDA generators are never touched)."""
    students, teachers = [], []
    with torch.random.fork_rng(devices=[]):
        for img, seed in zip(images, seeds.tolist()):
            torch.random.default_generator.manual_seed(seed)
            students.append(student(img).as_subclass(torch.Tensor))
            teachers.append(teacher(img).as_subclass(torch.Tensor))
    return torch.stack(students), torch.stack(teachers)
