import json

import pytest
import torch

from thesis_lib import DataError
from thesis_lib.data.datasets import (
    load_hf_pairs,
    load_imagenet_folder,
    load_karpathy_split,
    load_uint8,
    open_image,
    retrieval_index,
)


def test_coco_train_includes_restval(tiny_coco):
    train = load_karpathy_split(tiny_coco / "dataset_coco.json", tiny_coco / "images", "train")
    assert len(train) == 5                                       # 3 train + 2 restval
    assert all(len(r.captions) == 5 for r in train)
    assert len(load_karpathy_split(tiny_coco / "dataset_coco.json", tiny_coco / "images", "restval")) == 2


def test_coco_test_keeps_every_caption_and_dedups_by_id(tiny_coco):
    test = load_karpathy_split(tiny_coco / "dataset_coco.json", tiny_coco / "images", "test")
    assert len(test) == 4                                        # the repeated cocoid is one image
    assert sorted(len(r.captions) for r in test) == [5, 5, 6, 6]  # 6 captions; 5 + 1 merged
    assert len({r.image_id for r in test}) == 4
    images, captions, t2i = retrieval_index(test)
    assert len(images) == 4 and len(captions) == 22 and t2i.tolist().count(0) == len(test[0].captions)
    assert all(str(r.image).endswith(".jpg") and "val2014" in str(r.image) for r in test)


def test_flickr_layout(tiny_flickr):
    test = load_karpathy_split(tiny_flickr / "dataset_flickr30k.json", tiny_flickr / "flickr30k-images", "test")
    assert [r.image_id for r in test] == [2, 3, 4]              # no cocoid: imgid
    assert sum(len(r.captions) for r in test) == 15


def test_missing_json_and_folder(tiny_coco):
    with pytest.raises(DataError, match="not found"):
        load_karpathy_split(tiny_coco / "nope.json", tiny_coco / "images", "test")
    with pytest.raises(DataError, match="image folder not found"):
        load_karpathy_split(tiny_coco / "dataset_coco.json", tiny_coco / "missing", "test")


def test_empty_split_and_unknown_split(tiny_flickr):
    with pytest.raises(DataError, match="has no images.*splits present: test, train"):
        load_karpathy_split(tiny_flickr / "dataset_flickr30k.json", tiny_flickr / "flickr30k-images", "val")
    with pytest.raises(DataError, match="unknown split"):
        load_karpathy_split(tiny_flickr / "dataset_flickr30k.json", tiny_flickr / "flickr30k-images", "dev")


def test_corrupt_and_truncated_images(tmp_path, tiny_flickr):
    bad = tmp_path / "bad.jpg"
    bad.write_bytes(b"not a jpeg at all")
    with pytest.raises(DataError, match="cannot read image .*bad.jpg"):
        open_image(str(bad))
    good = (tiny_flickr / "flickr30k-images" / "1002.jpg").read_bytes()
    cut = tmp_path / "cut.jpg"
    cut.write_bytes(good[: len(good) // 2])
    with pytest.raises(DataError, match="corrupt or truncated"):
        load_uint8([str(cut)], 16)


def test_load_uint8_resizes(tiny_flickr):
    recs = load_karpathy_split(tiny_flickr / "dataset_flickr30k.json", tiny_flickr / "flickr30k-images", "test")
    x = load_uint8([r.image for r in recs], 16)
    assert x.shape == (3, 3, 16, 16) and x.dtype == torch.uint8


def test_hugging_face_parquet_layout(tmp_path, tiny_flickr):
    datasets = pytest.importorskip("datasets")
    files = sorted((tiny_flickr / "flickr30k-images").glob("*.jpg"))
    ds = datasets.Dataset.from_dict({
        "image": [str(f) for f in files],
        "caption": [[f"cap {i} {k}" for k in range(5)] for i in range(len(files))],
        "img_id": list(range(len(files))),
        "split": ["train", "train", "test", "test", "test"],
    }).cast_column("image", datasets.Image())
    (tmp_path / "hf").mkdir()
    ds.to_parquet(str(tmp_path / "hf" / "data.parquet"))
    recs = load_hf_pairs(str(tmp_path / "hf"), split="test")
    assert [r.image_id for r in recs] == [2, 3, 4] and all(len(r.captions) == 5 for r in recs)
    assert open_image(recs[0].image).size == (24, 20)
    with pytest.raises(DataError, match="no caption column"):
        load_hf_pairs(str(_without_captions(tmp_path, ds)), split="test")


def _without_captions(tmp_path, ds):
    (tmp_path / "nocap").mkdir()
    ds.remove_columns("caption").to_parquet(str(tmp_path / "nocap" / "data.parquet"))
    return tmp_path / "nocap"


def test_imagenet_folder_of_the_world(smoke_world):
    records, names, templates = load_imagenet_folder(smoke_world / "imagenet" / "val")
    assert len(names) == 48 and names[0] == "red circle"
    assert len(records) == 48 * 2 and {r.label for r in records} == set(range(48))
    assert "{}" in templates[0]


def test_imagenet_folder_errors(tmp_path):
    with pytest.raises(DataError, match="not found"):
        load_imagenet_folder(tmp_path / "val")
    (tmp_path / "val" / "n01440764").mkdir(parents=True)
    with pytest.raises(DataError, match="1 class folders and no classnames.json"):
        load_imagenet_folder(tmp_path / "val")


def test_shipped_imagenet_metadata():
    from thesis_lib.data.datasets import imagenet_templates
    from thesis_lib.paths import ASSETS
    names = json.loads((ASSETS / "imagenet_classnames.json").read_text())["classnames"]
    assert len(names) == 1000 and names[0] == "tench" and len(imagenet_templates()) == 80
