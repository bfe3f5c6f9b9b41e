"""data/prepare_pictures: the size the thesis's crops need, and shards written anew at it, on tiny shards written
here (full_scale/fixtures.py): pictures reduced to that shorter side and never upscaled, keys, captions, order and
broken samples kept, a rerun keeping finished shards, COCO as shards, and the printed mixture read back."""
import io
import tarfile

import numpy as np
import pytest
import torch
from PIL import Image

from thesis_lib import get_config
from thesis_lib.data import prepare_pictures as pp
from thesis_lib.data.datasets import load_karpathy_split, open_image
from thesis_lib.data.shards import load_shards
from thesis_lib.data.transforms import student_transform, teacher_transform
from thesis_lib.full_scale.fixtures import karpathy_coco, web_shards, write_shard

SIDE = pp.prepared_side()


def _crop_sides(transform, width: int, height: int, draws: int) -> list[int]:
    crop = next(t for t in transform.transforms if type(t).__name__ == "RandomResizedCrop")
    image = torch.empty(3, height, width)
    sides = []
    for _ in range(draws):
        params = crop.make_params([image])
        sides.append(min(params["height"], params["width"]))
    return sides


def test_the_thesis_crops_never_upsample_at_the_derived_side_and_do_one_pixel_under_it():
    data, view = get_config("thesis").data, get_config("thesis").model.image.img_size
    assert SIDE == pp.prepared_side(view, data.crop_scale[0]) == 249
    torch.manual_seed(0)
    for transform in (student_transform(view, data.crop_scale), teacher_transform(view, data.crop_scale)):
        for aspect in (1.0, 1.1, 1.2, 4 / 3, 1.5, 2.0):          # the crop rule as the views draw it, both orientations
            long = round(SIDE * aspect)
            assert min(_crop_sides(transform, long, SIDE, 300) + _crop_sides(transform, SIDE, long, 300)) >= view
    pinned = student_transform(view, (data.crop_scale[0],) * 2)    # at the smallest scale, where crops are smallest
    assert min(_crop_sides(pinned, SIDE, SIDE, 2000)) == view
    assert min(_crop_sides(pinned, SIDE - 1, SIDE - 1, 2000)) < view


def _jpeg(seed: int, width: int, height: int) -> bytes:
    small = np.random.default_rng(seed).integers(0, 255, (6, 8, 3), dtype=np.uint8)
    buf = io.BytesIO()
    Image.fromarray(small).resize((width, height), Image.BICUBIC).save(buf, "JPEG", quality=90)
    return buf.getvalue()


@pytest.fixture
def mix(tmp_path, monkeypatch):
    """A shard list of two shards (pictures above, at and under the side, landscape and portrait; the second holds
    a broken sample of every kind) and a brace range; the shard index under a THESIS_DATA of the test's own."""
    monkeypatch.setenv("THESIS_DATA", str(tmp_path / "cache"))
    data = tmp_path / "shared"
    web_shards(data / "cc3m", "cc3m", shards=2, per_shard=3)
    sizes = [(683, 512), (300, 400), (SIDE, 300), (200, 150), (512, 683)]
    write_shard(data / "cc3m" / "00000.tar", {f"a{k}": {"jpg": _jpeg(k, *wh), "txt": f"picture {k}",
                                                        "json": {"key": f"a{k}", "width": wh[0]}}
                                              for k, wh in enumerate(sizes)})
    (data / "cc3m" / "shards.txt").write_text("00000.tar\n00001.tar\n")
    (data / "cc12m").mkdir()
    write_shard(data / "cc12m" / "x-0000.tar", {"b0": {"jpg": _jpeg(9, 640, 480), "txt": "wide"}})
    return f"coco,wds:{data}/cc3m/shards.txt@6,wds:{data}/cc12m/x-{{0000..0000}}.tar"


def _members(shard):
    with tarfile.open(shard) as tar:
        return [(m.name, tar.extractfile(m).read()) for m in tar]


def test_prepared_shards_hold_the_same_pairs_with_pictures_at_the_side(mix, tmp_path, capsys):
    out = pp.prepare(mix, tmp_path / "prepared", jobs=2)
    coco, cc3m, cc12m = out.split(",")
    assert coco == "coco" and cc3m == f"wds:{tmp_path}/prepared/cc3m/shards.txt@6"
    assert cc12m == f"wds:{tmp_path}/prepared/cc12m/shards.txt"
    for before, after in zip(mix.split(",")[1:], (cc3m, cc12m)):
        (old, old_report), (new, new_report) = load_shards(before[4:]), load_shards(after[4:])
        assert [r.image_id for r in new] == [r.image_id for r in old] and len(new) == len(old)
        assert [r.captions for r in new] == [r.captions for r in old]
        for a, b in zip(old, new):
            (w, h), (w2, h2) = open_image(a.image).size, open_image(b.image).size
            assert (w2, h2) == (w, h) if min(w, h) <= SIDE else (min(w2, h2) == SIDE and abs(w2 / h2 - w / h) < 0.01)
        assert {k: v for k, v in vars(new_report).items() if k != "broken_keys"} == \
               {k: v for k, v in vars(old_report).items() if k != "broken_keys"}
    src, dest = _members(tmp_path / "shared/cc3m/00001.tar"), _members(tmp_path / "prepared/cc3m/00001.tar")
    assert [n for n, _ in dest] == [n for n, _ in src]              # small pictures and broken ones: byte for byte
    assert dest == src
    first = dict(_members(tmp_path / "prepared/cc3m/00000.tar"))
    assert first["a0.json"] == dict(_members(tmp_path / "shared/cc3m/00000.tar"))["a0.json"]
    assert Image.open(io.BytesIO(first["a0.jpg"])).size == (332, 249)


def test_a_rerun_keeps_finished_shards_and_rewrites_a_stale_one(mix, tmp_path):
    pp.prepare(mix, tmp_path / "prepared")
    kept = tmp_path / "prepared/cc3m/00000.tar"
    stale = tmp_path / "prepared/cc12m/x-0000.tar"
    stale.write_bytes(b"not a shard")
    stamp = kept.stat().st_mtime_ns
    said = []
    assert pp.prepare(mix, tmp_path / "prepared", say=said.append) == pp.prepare(mix, tmp_path / "prepared")
    assert kept.stat().st_mtime_ns == stamp and "0 written, 2 kept" in said[0] and "1 written, 0 kept" in said[1]
    assert load_shards(str(stale))[1].pairs == 1
    assert not list((tmp_path / "prepared").rglob("*.tmp"))


def test_coco_becomes_shards_of_one_caption_each_in_the_coco_entrys_pair_order(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("THESIS_DATA", str(tmp_path / "cache"))
    root = tmp_path / "data"
    karpathy_coco(root / "coco")
    big = root / "coco/images/train2014/COCO_train2014_000000000000.jpg"
    big.write_bytes(_jpeg(0, 640, 480))
    monkeypatch.setattr(pp, "PER_SHARD", 7)
    assert pp.main(["coco", "--to", str(tmp_path / "prepared"), "--coco-root", str(root), "--jobs", "1"]) == 0
    out = capsys.readouterr().out.strip()
    assert out == f"wds:{tmp_path}/prepared/coco/shards.txt"
    records, _ = load_shards(out[4:])
    coco = load_karpathy_split(root / "coco/dataset_coco.json", root / "coco/images", "train")
    assert [r.captions[0] for r in records] == [c for r in coco for c in r.captions] and len(records) == 25
    assert [r.image_id.split(":")[1] for r in records[:6]] == ["500_0", "500_1", "500_2", "500_3", "500_4", "501_0"]
    assert open_image(records[0].image).size == (332, 249) and open_image(records[5].image).size == (24, 20)


def test_the_command_line_prints_the_prepared_mixture(mix, tmp_path, capsys):
    assert pp.main([mix, "--to", str(tmp_path / "p"), "--jobs", "1"]) == 0
    out, err = capsys.readouterr()
    assert out.strip().startswith("coco,wds:") and "shorter side 249 px" in err
    assert sum(len(load_shards(e[4:])[0]) for e in out.strip().split(",")[1:]) == 7
    with pytest.raises(SystemExit):
        pp.main(["coco", "--to", str(tmp_path / "p")])
