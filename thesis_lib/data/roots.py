"""Where the data lives: the data root of a config and the image-caption records of a named training set.

Both kinds of data have one layout under their root (the world writes it; put your copies the same way)::

    coco/dataset_coco.json            coco/images/{train2014,val2014}/*.jpg
    flickr30k/dataset_flickr30k.json  flickr30k/flickr30k-images/*.jpg
    imagenet/val/<wnid>/*.JPEG        (+ optional imagenet/classnames.json, templates.json)
"""
from __future__ import annotations

from pathlib import Path

from ..config import ExperimentConfig
from ..errors import DataError
from . import datasets as ds

TRAIN_SETS = {"coco": ("coco/dataset_coco.json", "coco/images"),
              "flickr30k": ("flickr30k/dataset_flickr30k.json", "flickr30k/flickr30k-images")}


def data_root(cfg: ExperimentConfig) -> Path:
    if cfg.data.source == "world":
        from .world_files import world_root
        return world_root(cfg.data.world, cfg.data.root or None)
    if not cfg.data.root:
        raise DataError("no data root given for the real data; pass data_root (a folder holding coco/, flickr30k/ "
                        "and imagenet/val/; README, 'Full scale on a GPU', gives the layout)")
    root = Path(cfg.data.root)
    if not root.is_dir():
        raise DataError(f"data root not found: {root}")
    return root


def pair_records(name: str, split: str, root: Path, reports: dict | None = None) -> list[ds.PairRecord]:
    """The pairs of a named set: coco, flickr30k (Karpathy), hf:<name or folder>, or wds:<shard pattern> (training
    only; its ShardReport goes into ``reports`` when given)."""
    if name.startswith("hf:"):
        return ds.load_hf_pairs(name[3:], split=split)
    if name.startswith("wds:"):
        if split != "train":
            raise DataError(f"{name}: webdataset shards are a training source; evaluate on coco/flickr30k/imagenet")
        from .shards import load_shards
        records, report = load_shards(name[4:])
        if reports is not None:
            reports[name] = report
        return records
    if name not in TRAIN_SETS:
        raise DataError(f"unknown pair dataset {name!r}; use coco, flickr30k, hf:<name or folder> or wds:<shards>")
    rel_json, rel_images = TRAIN_SETS[name]
    return ds.load_karpathy_split(root / rel_json, root / rel_images, split)
