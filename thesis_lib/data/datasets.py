"""Loaders for image-caption pairs and class folders: Karpathy JSON, Hugging Face datasets, ImageNet val.

Every source is normalised to ``PairRecord`` (one image with all its captions) or ``ClassRecord``; the embedded
world is read by exactly these functions (docs/sources.md §3-4).
Conventions: COCO's training split is train + restval (113,287 images); test splits keep every caption (COCO-5K
has 25,010); images are deduplicated by id. Nothing is skipped silently: a bad input raises ``DataError``.
"""
from __future__ import annotations

import io
import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from PIL import Image, UnidentifiedImageError

from ..errors import DataError
from ..paths import ASSETS

KARPATHY_SPLITS = ("train", "restval", "val", "test")


@dataclass(frozen=True)
class PairRecord:
    image_id: int | str
    image: object            # a path (str) or encoded bytes / a PIL image from a Hugging Face dataset
    captions: tuple[str, ...]
    split: str


@dataclass(frozen=True)
class TarMember:
    """An image stored inside a tar shard (``data/shards.py``): read by seeking, never by unpacking the shard."""
    shard: str
    offset: int
    size: int

    def read(self) -> bytes:
        with open(self.shard, "rb") as f:
            f.seek(self.offset)
            data = f.read(self.size)
        if len(data) != self.size:
            raise DataError(f"shard {self.shard} is truncated: the image at byte {self.offset} is incomplete")
        return data


@dataclass(frozen=True)
class ClassRecord:
    image: str
    label: int


def _read_json(path: Path, what: str) -> dict:
    if not path.is_file():
        raise DataError(f"{what} not found: {path}; check the path (for COCO/Flickr30K use dataset_coco.json / "
                        "dataset_flickr30k.json from Karpathy's caption_datasets.zip)")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as err:
        raise DataError(f"{what} {path} is not UTF-8 text (byte {err.start}); is it the right file?") from None
    except json.JSONDecodeError as err:
        raise DataError(f"{what} {path} is not valid JSON ({err.msg} at line {err.lineno}, column {err.colno}); "
                        "the file is truncated or corrupt: download it again") from None


def _field(entry: dict, key: str, where: str):
    if not isinstance(entry, dict) or key not in entry:
        raise DataError(f"{where} has no field {key!r}; a Karpathy entry needs filename, split and "
                        "sentences[].raw")
    return entry[key]


def _caption(raw, where: str) -> str:
    if not isinstance(raw, str) or not raw.strip():
        raise DataError(f"{where} is {raw!r}: every caption must be a non-empty string")
    return raw.strip()


def load_karpathy_split(json_path: str | os.PathLike, image_root: str | os.PathLike, split: str,
                        check_files: bool = True) -> list[PairRecord]:
    """Records of one split of a Karpathy-format JSON (COCO or Flickr30K); ``split="train"`` includes restval.

    Image path = ``image_root/filepath/filename`` (COCO) or ``image_root/filename`` (Flickr30K); the image id is
    ``cocoid`` where present, else ``imgid``. Records with the same id are merged (captions concatenated)."""
    if split not in KARPATHY_SPLITS:
        raise DataError(f"unknown split {split!r}; choose one of {', '.join(KARPATHY_SPLITS)}")
    json_path, image_root = Path(json_path), Path(image_root)
    if not image_root.is_dir():
        raise DataError(f"image folder not found: {image_root}; pass the folder that holds the images")
    data = _read_json(json_path, "Karpathy split file")
    images = _field(data, "images", f"{json_path}")
    if not isinstance(images, list):
        raise DataError(f"{json_path}: field 'images' must be a list")
    wanted = ("train", "restval") if split == "train" else (split,)
    merged: dict = {}
    for i, entry in enumerate(images):
        where = f"{json_path.name}: images[{i}]"
        if _field(entry, "split", where) not in wanted:
            continue
        sentences = _field(entry, "sentences", where)
        caps = tuple(_caption(_field(s, "raw", f"{where}.sentences[{j}]"), f"{where}.sentences[{j}].raw")
                     for j, s in enumerate(sentences))
        image_id = entry.get("cocoid", entry.get("imgid", _field(entry, "filename", where)))
        path = str(image_root / entry.get("filepath", "") / _field(entry, "filename", where))
        if image_id in merged and merged[image_id].image != path:
            raise DataError(f"{where}: image id {image_id!r} is also the id of {merged[image_id].image}, another "
                            f"file ({path}); ids must be unique per image (COCO lists an image twice under one id, "
                            "with the same file)")
        if image_id in merged:
            old = merged[image_id]
            merged[image_id] = PairRecord(image_id, old.image, old.captions + caps, old.split)
        else:
            merged[image_id] = PairRecord(image_id, path, caps, split)
    records = list(merged.values())
    if not records:
        present = sorted({e.get("split", "?") for e in images if isinstance(e, dict)})
        raise DataError(f"split {split!r} of {json_path} has no images (splits present: {', '.join(present)})")
    if check_files:
        missing = [r.image for r in records if not os.path.isfile(r.image)]
        if missing:
            raise DataError(f"{len(missing)} of {len(records)} images of split {split!r} are missing under "
                            f"{image_root}, e.g. {missing[0]}; is image_root the right folder?")
    return records


def load_hf_pairs(name_or_dir: str, split: str = "test", image_column: str = "image",
                  caption_column: str | None = None, image_root: str | os.PathLike | None = None) -> list[PairRecord]:
    """Records from a Hugging Face dataset (hub name or local folder of parquet/arrow files; no loading scripts).

    Layouts: an image column with a list-of-captions column (``caption``, ``sentences`` or ``captions``), and
    optionally a ``split`` column (Karpathy split, filtered); or annotations only (``filename``/``filepath``)
    with ``image_root``. One row per sentence (an image repeated) is merged by image id."""
    import datasets
    saved = any(os.path.isfile(os.path.join(name_or_dir, f)) for f in ("dataset_dict.json", "state.json"))
    try:  # a save_to_disk folder, or a hub name / folder of parquet, arrow, csv or json files
        ds = datasets.load_from_disk(name_or_dir) if saved else datasets.load_dataset(name_or_dir)
    except Exception as err:  # datasets raises many types; name the input and the cause
        raise DataError(f"cannot load Hugging Face dataset {name_or_dir!r}: {err}") from None
    if isinstance(ds, datasets.Dataset):
        ds = datasets.DatasetDict({split: ds})
    part = ds[split] if split in ds else ds[next(iter(ds))]
    cols = part.column_names
    if "split" in cols and split not in ds:
        wanted = ("train", "restval") if split == "train" else (split,)
        part = part.filter(lambda s: s in wanted, input_columns="split")
    caption_column = caption_column or next((c for c in ("caption", "sentences", "captions") if c in cols), None)
    if caption_column is None:
        raise DataError(f"dataset {name_or_dir!r} has no caption column (looked for caption, sentences, captions; "
                        f"columns: {', '.join(cols)})")
    has_image = image_column in cols
    if has_image:
        part = part.cast_column(image_column, datasets.Image(decode=False))
    elif image_root is None:
        raise DataError(f"dataset {name_or_dir!r} has no {image_column!r} column; pass image_root for "
                        "annotation-only datasets")
    merged: dict = {}
    for i, row in enumerate(part):
        caps = row[caption_column]
        caps = tuple(c["raw"] if isinstance(c, dict) else str(c) for c in (caps if isinstance(caps, list) else [caps]))
        key = next((row[k] for k in ("cocoid", "img_id", "imgid", "image_id", "filename") if k in row), i)
        image = (row[image_column]["bytes"] or row[image_column]["path"]) if has_image else \
            str(Path(image_root) / row.get("filepath", "") / row["filename"])
        old = merged.get(key)
        merged[key] = PairRecord(key, image, (old.captions if old else ()) + caps, split)
    if not merged:
        raise DataError(f"split {split!r} of Hugging Face dataset {name_or_dir!r} is empty")
    return list(merged.values())


def load_imagenet_folder(root: str | os.PathLike) -> tuple[list[ClassRecord], list[str], list[str]]:
    """Class-folder validation set (ImageNet-1K ``val/<wnid>/*.JPEG``): records, class names, prompt templates.

    Class index = position of the folder in sorted order (the standard wnid order). Class names and templates come
    from ``classnames.json`` / ``templates.json`` in ``root`` or its parent when present, else the shipped
    ImageNet-1K names (1,000 folders required) and OpenAI's 80 templates."""
    root = Path(root)
    if not root.is_dir():
        raise DataError(f"class-folder root not found: {root}; pass the ImageNet val folder (val/<wnid>/*.JPEG)")
    folders = sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))  # not .ipynb_checkpoints
    if not folders:
        raise DataError(f"{root} has no class folders; expected val/<wnid>/*.JPEG (run "
                        "valprep.sh on ImageNet's flat val folder first)")
    names = _side_file(root, "classnames.json", "classnames")
    if names is None:
        if len(folders) != 1000:
            raise DataError(f"{root} has {len(folders)} class folders and no classnames.json; ImageNet-1K val "
                            "needs its 1,000 wnid folders")
        names = json.loads((ASSETS / "imagenet_classnames.json").read_text())["classnames"]
    if len(names) != len(folders):
        raise DataError(f"{root}: {len(folders)} class folders but {len(names)} class names")
    templates = _side_file(root, "templates.json", "templates") or imagenet_templates()
    exts = {".jpeg", ".jpg", ".png"}
    records = [ClassRecord(str(f), label) for label, d in enumerate(folders)
               for f in sorted(d.iterdir()) if f.suffix.lower() in exts]
    if not records:
        raise DataError(f"{root}: the class folders hold no images (.JPEG/.jpg/.png)")
    have = {r.label for r in records}
    empty = [d.name for label, d in enumerate(folders) if label not in have]
    if empty:
        raise DataError(f"{root}: {len(empty)} class folder(s) hold no images, e.g. {empty[0]}; a class without "
                        "images would be scored as if it were absent")
    return records, list(names), list(templates)


def imagenet_templates() -> list[str]:
    return json.loads((ASSETS / "imagenet_templates.json").read_text())["templates"]


def _side_file(root: Path, name: str, key: str):
    for folder in (root, root.parent):
        if (folder / name).is_file():
            return _field(_read_json(folder / name, name), key, str(folder / name))
    return None


def open_image(image) -> Image.Image:
    """An RGB PIL image from a path, encoded bytes or a PIL image; a corrupt or truncated file raises DataError."""
    source = image
    try:
        if isinstance(image, TarMember):
            image = image.read()
        img = (image if isinstance(image, Image.Image)
               else Image.open(io.BytesIO(image) if isinstance(image, bytes) else image))
        img.load()
        return img.convert("RGB")
    except (OSError, UnidentifiedImageError, SyntaxError, Image.DecompressionBombError) as err:
        name = (source if isinstance(source, (str, os.PathLike)) else f"{source.shard} (member at byte {source.offset})"
                if isinstance(source, TarMember) else "<image bytes>")
        raise DataError(f"cannot read image {name}: {err}; the file is corrupt or truncated, replace it") from None


def load_uint8(images: list, size: int) -> torch.Tensor:
    """Decode images into one uint8 tensor (N, 3, size, size), resized (bicubic) where needed: the in-memory
    form the demo trains from (no decoding inside the training loop)."""
    out = np.empty((len(images), size, size, 3), dtype=np.uint8)
    for i, image in enumerate(images):
        img = open_image(image)
        if img.size != (size, size):
            img = img.resize((size, size), Image.BICUBIC)
        out[i] = np.asarray(img)
    return torch.from_numpy(out).permute(0, 3, 1, 2).contiguous()


def retrieval_index(records: list[PairRecord]) -> tuple[list, list[str], torch.Tensor]:
    """Images, captions and ``text_to_image`` (caption k belongs to image text_to_image[k]) of a test split."""
    images = [r.image for r in records]
    captions = [c for r in records for c in r.captions]
    text_to_image = torch.tensor([i for i, r in enumerate(records) for _ in r.captions], dtype=torch.long)
    return images, captions, text_to_image
