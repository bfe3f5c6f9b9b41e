"""Decoding a training image for the DataLoader path (``data.decoder``); ``benchmarks/data_pipeline.py`` measures them.

* ``pil``: PIL decodes at full size (what the thesis code does). The default at every preset, the thesis's too: the
  only faster decoder measured, ``pil_draft`` (2.2 ×, BENCHMARKS.md), changes what the model sees, and
  ``torchvision`` is no faster (1.02 ×) and rounds differently. A run that reads files prints what its data path
  delivers and warns when training waits for it (``data/throughput.py``).
* ``pil_draft``: PIL's JPEG draft mode decodes at 1/2, 1/4 or 1/8 scale in the DCT, the largest reduction that keeps
  both sides ≥ the view size, so a 640 × 480 COCO picture decodes at 320 × 240 for 224 px views (not bit-identical
  to ``pil``: the crop is resampled from the reduced picture).
* ``torchvision``: ``torchvision.io.decode_image`` to a uint8 tensor; the views' transforms run on tensors.
* ``device`` (not here: ``data/device_decode.py``): the workers read the bytes (``encoded_bytes``), the training
  process decodes the batch on its device and draws the views there.

Every decoder returns what the torchvision v2 transforms of ``data/transforms.py`` accept (a PIL image or a uint8
CHW tensor); non-JPEG files and errors fall back to / report like ``datasets.open_image``.
"""
from __future__ import annotations

import io

import torch
from PIL import Image

from ..errors import DataError
from .datasets import TarMember, open_image

DECODERS = ("pil", "pil_draft", "torchvision")


def encoded_bytes(image) -> bytes | None:
    """The encoded bytes of a path, bytes or TarMember; None for a PIL image."""
    if isinstance(image, TarMember):
        return image.read()
    if isinstance(image, bytes):
        return image
    if isinstance(image, str):
        with open(image, "rb") as f:
            return f.read()
    return None


def decode(image, decoder: str = "pil", size: int = 224):
    """One training image (path, bytes, TarMember or PIL image) decoded by ``decoder``."""
    if decoder == "pil":
        return open_image(image)
    if decoder not in DECODERS:
        raise DataError(f"unknown data.decoder {decoder!r}; choose one of {', '.join(DECODERS)}")
    data = encoded_bytes(image)
    if data is None or not data.startswith(b"\xff\xd8"):                 # not a JPEG: the plain path
        return open_image(image if data is None else data)
    if decoder == "pil_draft":
        try:
            img = Image.open(io.BytesIO(data))
            img.draft("RGB", (size, size))
            return img.convert("RGB")
        except OSError:
            return open_image(data)                                       # the plain path names the error
    from torchvision.io import ImageReadMode, decode_image
    try:
        return decode_image(torch.frombuffer(bytearray(data), dtype=torch.uint8), mode=ImageReadMode.RGB)
    except RuntimeError:
        return open_image(data)
