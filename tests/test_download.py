"""fetch.py, models/download.py, data/sources.py and data/download.py on tiny fixtures written here: THESIS_MIRROR
points at a folder of them (or a local HTTP server answers), so nothing leaves the machine. The expected counts and
the links are passed in (``Source``, ``urls``) where the tiny sets differ from the real ones."""
import hashlib
import http.server
import io
import tarfile
import threading
import zipfile
from dataclasses import replace
from functools import partial
from pathlib import Path

import pytest
import torch

from thesis_lib.data import download as dd
from thesis_lib.data import sources as ds
from thesis_lib.data.datasets import load_karpathy_split
from thesis_lib.data.shards import load_shards
from thesis_lib.errors import CheckpointError, DataError, DownloadError
from thesis_lib.fetch import fetch, file_name, file_sha256
from thesis_lib.models import download as md
from thesis_lib.models.lock import read_lock
from thesis_lib.full_scale.fixtures import (SHRINK, checkpoint_folder, jpeg_bytes, karpathy_coco, karpathy_flickr,
                                       write_shard)

BEIT = "beitv2_base_patch16_224_pt1k.pth"


@pytest.fixture
def mirror(tmp_path, monkeypatch):
    folder = tmp_path / "mirror"
    folder.mkdir()
    monkeypatch.setenv("THESIS_MIRROR", str(folder))
    return folder


def _zip(path, members: dict) -> None:
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)


def _tar(path, members: dict, mode: str = "w") -> None:
    with tarfile.open(path, mode) as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


# ------------------------------------------------------------------------------------------------------ fetch

class _Handler(http.server.SimpleHTTPRequestHandler):
    """Serves its folder; /denied/… answers as Azure does for the unsigned blob URL, /short/… is cut off."""

    def log_message(self, *args):
        pass

    def do_GET(self):
        if self.path.startswith("/denied/"):
            self.send_response(409, "Public access is not permitted on this storage account.")
            self.send_header("x-ms-error-code", "PublicAccessNotPermitted")
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif self.path.startswith("/ranged/"):
            self._ranged()
        elif self.path.startswith("/short/"):
            self.send_response(200)
            self.send_header("Content-Length", "1000")
            self.end_headers()
            self.wfile.write(b"x" * 100)
            self.close_connection = True
        else:
            super().do_GET()


    RANGES: list = []          # the Range header of each request to /ranged/…, in order
    CUT = [0]                  # /ranged/…: the next answer stops after this many bytes (0: it is whole)

    def _ranged(self):
        """/ranged/NAME: the served file with byte ranges honoured (HTTP 206), as large files' hosts do."""
        blob = (Path(self.directory) / self.path.split("/", 2)[2]).read_bytes()
        asked = self.headers.get("Range")
        self.RANGES.append(asked)
        start = int(asked.split("=")[1].rstrip("-")) if asked else 0
        self.send_response(206 if asked else 200)
        if asked:
            self.send_header("Content-Range", f"bytes {start}-{len(blob) - 1}/{len(blob)}")
        self.send_header("Content-Length", str(len(blob) - start))
        self.end_headers()
        cut, self.CUT[0] = self.CUT[0], 0
        self.wfile.write(blob[start:start + cut] if cut else blob[start:])
        self.close_connection = True


@pytest.fixture
def server(tmp_path, monkeypatch):
    for var in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)
    root = tmp_path / "served"
    root.mkdir()
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), partial(_Handler, directory=str(root)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield root, f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_fetch_reads_the_mirror_by_file_name_and_keeps_a_complete_file(mirror, tmp_path):
    blob = bytes(range(256)) * 5000
    (mirror / BEIT).write_bytes(blob)
    dest = tmp_path / "ckpt" / BEIT
    size, digest = fetch(md.BEIT_V2_SIGNED, dest, every=0.0)           # the query string is not part of the name
    assert dest.read_bytes() == blob and (size, digest) == (len(blob), file_sha256(dest))
    assert [p.name for p in dest.parent.iterdir()] == [BEIT]               # no .part left
    (mirror / BEIT).unlink()
    assert fetch(md.BEIT_V2, dest) == (size, digest)                        # there: not fetched again
    with pytest.raises(DownloadError, match=r"https://example.org/x/absent.bin.*not found \(404\)"):
        fetch("https://example.org/x/absent.bin", tmp_path / "absent.bin")
    assert not (tmp_path / "absent.bin").exists() and not (tmp_path / "absent.bin.part").exists()


def test_fetch_over_http_names_the_url_and_the_status(server, tmp_path, monkeypatch):
    root, base = server
    (root / "m").mkdir()
    (root / "m" / "dict.txt").write_text("hello 1\n")
    assert fetch(f"{base}/m/dict.txt", tmp_path / "a.txt")[0] == 8
    with pytest.raises(DownloadError, match=rf"{base}/m/gone.pt: HTTP 404"):
        fetch(f"{base}/m/gone.pt", tmp_path / "gone.pt")
    with pytest.raises(DownloadError, match=r"/denied/beit.pth: HTTP 409 PublicAccessNotPermitted"):
        fetch(f"{base}/denied/beit.pth", tmp_path / "beit.pth")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt", "served"]       # no dest, no .part
    with pytest.raises(DownloadError, match=r"/short/big.zip: cut off after 100 of 1,000 bytes; run again to conti"):
        fetch(f"{base}/short/big.zip", tmp_path / "big.zip")
    assert (tmp_path / "big.zip.part").stat().st_size == 100 and not (tmp_path / "big.zip").exists()
    monkeypatch.setenv("THESIS_MIRROR", f"{base}/m/")                       # a mirror served over HTTP
    assert fetch("https://dl.fbaipublicfiles.com/fairseq/data2vec2/dict.txt", tmp_path / "b.txt")[0] == 8


def test_a_cut_transfer_continues_from_its_part_by_byte_range_or_starts_afresh(server, tmp_path):
    """A large file cut off is not fetched from zero again: its .part is continued (``Range: bytes=N-``, HTTP 206);
    a server that ignores the range sends the whole file, which replaces the part; a part from another source is
    not continued."""
    root, base = server
    blob = bytes(range(256)) * 4000
    (root / "train2014.zip").write_bytes(blob)
    dest = tmp_path / "train2014.zip"
    _Handler.RANGES.clear()
    _Handler.CUT[0] = 300_000
    with pytest.raises(DownloadError, match="cut off after 300,000 of 1,024,000 bytes"):
        fetch(f"{base}/ranged/train2014.zip", dest)
    assert (tmp_path / "train2014.zip.part").stat().st_size == 300_000
    assert fetch(f"{base}/ranged/train2014.zip", dest) == (len(blob), hashlib.sha256(blob).hexdigest())
    assert _Handler.RANGES == [None, "bytes=300000-"] and dest.read_bytes() == blob
    assert not (tmp_path / "train2014.zip.part").exists() and not (tmp_path / "train2014.zip.part.from").exists()
    for link in (f"{base}/train2014.zip", f"{base}/ranged/train2014.zip"):  # ignores Range; another source's part
        other = tmp_path / f"{len(link)}.zip"
        other.with_name(other.name + ".part").write_bytes(b"junk")
        other.with_name(other.name + ".part.from").write_text(f"{base}/train2014.zip")
        assert fetch(link, other)[1] == hashlib.sha256(blob).hexdigest() and other.read_bytes() == blob


def test_a_hugging_face_token_goes_to_the_hub_alone():
    from thesis_lib.fetch import request
    hub = "https://huggingface.co/datasets/pixparse/cc3m-wds/resolve/main/cc3m-train-0000.tar"
    assert request(hub, env={"HF_TOKEN": "hf_x"}).unredirected_hdrs == {"Authorization": "Bearer hf_x"}
    assert "Authorization" not in request(hub, env={}).unredirected_hdrs
    assert not request("https://images.cocodataset.org/zips/train2014.zip", env={"HF_TOKEN": "hf_x"}
                       ).unredirected_hdrs
    assert request(hub, 5, env={}).get_header("Range") == "bytes=5-"


# ------------------------------------------------------------------------------------------------ checkpoints

def test_every_link_of_a_checkpoint_names_its_file():
    """THESIS_MIRROR finds a file by its URL's file name: each file's links (BEiT's two included) name it."""
    assert {name: {file_name(url) for url in links} for name, links in md.URLS.items()} == \
        {name: {name} for name in md.URLS}
    assert md.URLS[BEIT] == (md.BEIT_V2, md.BEIT_V2_SIGNED)


def test_checkpoints_land_checked_beit_falls_back_to_the_signed_link_and_the_lock_records_it(mirror, tmp_path):
    checkpoint_folder(mirror)
    gone = "https://github.com/addf400/files/releases/download/BEiT-v2/withdrawn.pth"   # not in the mirror: fails
    urls = {**md.URLS, BEIT: (gone, md.BEIT_V2_SIGNED)}
    ckpt = tmp_path / "ckpt"
    rows = md.download_checkpoints(ckpt, urls, require={}, overrides=SHRINK)
    assert not [r.problem for r in rows if r.problem]
    lock = read_lock(ckpt)
    assert set(lock) == set(md.URLS)
    assert lock[BEIT]["url"] == md.BEIT_V2_SIGNED and lock["nlp_base.pt"]["url"] == md.DATA2VEC2 + "nlp_base.pt"
    for name, entry in lock.items():
        assert (ckpt / name).read_bytes() == (mirror / name).read_bytes()
        assert (entry["size"], entry["sha256"]) == ((mirror / name).stat().st_size, file_sha256(mirror / name))
    for p in list(mirror.iterdir()):
        p.unlink()
    rows = md.download_checkpoints(ckpt, urls, require={}, overrides=SHRINK)   # all there: nothing fetched
    assert not [r.problem for r in rows if r.problem] and read_lock(ckpt) == lock


def test_a_wrong_file_stops_the_download_with_its_reason(mirror, tmp_path, capsys):
    checkpoint_folder(mirror)
    torch.save({"model": {"encoder.sentence_encoder.embed_tokens.weight": torch.zeros(8, 4)}}, mirror / "nlp_base.pt")
    assert md.main([str(tmp_path / "a")]) == 2
    err = capsys.readouterr().err
    assert "nlp_base.pt" in err and "is the data2vec 1.0 text model" in err
    assert not (tmp_path / "a" / BEIT).exists() and read_lock(tmp_path / "a") is None    # stopped there
    assert not (tmp_path / "a" / "nlp_base.pt").exists()                  # never under the name a run loads
    assert (tmp_path / "a" / "nlp_base.pt.refused").is_file() and "refused: moved to " in err
    checkpoint_folder(mirror)
    with pytest.raises(CheckpointError, match=r"vocab.bpe: SHA-256 .* is not the published 0000000000.*\.refused"):
        md.download_checkpoints(tmp_path / "b", require={"vocab.bpe": "0" * 64}, overrides=SHRINK)
    assert not (tmp_path / "b" / "vocab.bpe").exists() and (tmp_path / "b" / "vocab.bpe.refused").is_file()
    rows = md.download_checkpoints(tmp_path / "d", require={}, overrides={**SHRINK, "teacher.depth": 3})  # loaders: no
    refused = [r.problem for r in rows if r.problem]
    assert refused and "moved to" in refused[0] and read_lock(tmp_path / "d") is None
    assert not (tmp_path / "d" / BEIT).exists() and (tmp_path / "d" / f"{BEIT}.refused").exists()
    assert (tmp_path / "d" / "base_imagenet.pt").exists()                 # the files the loaders took stay
    with pytest.raises(DownloadError, match=r"no link answered: .*withdrawn.pth.* \| .*signed-gone.pth"):
        md.download_checkpoints(tmp_path / "c", {BEIT: ("https://h/withdrawn.pth", "https://h/signed-gone.pth")})


# --------------------------------------------------------------------------------------------------- data sets

def _coco_mirror(mirror, tmp_path, drop: str = ""):
    src = karpathy_coco(tmp_path / "src" / "coco")
    flickr = karpathy_flickr(tmp_path / "src" / "flickr30k")
    for split in ("train2014", "val2014"):
        _zip(mirror / f"{split}.zip", {f"{split}/{p.name}": p.read_bytes()
                                       for p in sorted((src / "images" / split).iterdir()) if p.name != drop})
    _zip(mirror / "caption_datasets.zip", {"dataset_coco.json": (src / "dataset_coco.json").read_bytes(),
                                           "dataset_flickr30k.json": (flickr / "dataset_flickr30k.json").read_bytes(),
                                           "dataset_flickr8k.json": b'{"images": []}'})
    return flickr


SPLITS = {"dataset_coco.json": {"train+restval": 5, "val": 1, "test": 4},    # the fixtures' Karpathy JSONs
          "dataset_flickr30k.json": {"train": 2, "val": 0, "test": 3}}
TINY = replace(ds.SOURCES["coco"], expected={"train2014": 3, "val2014": 7, **SPLITS}, sizes={})


def test_the_karpathy_json_counts_are_karpathys():
    """The split counts checked are Karpathy's: COCO 113,287 train + restval (82,783 + 30,504), 5,000 val, 5,000 test
    (123,287 = the 82,783 + 40,504 images of the two zips); Flickr30K 29,000 / 1,014 / 1,000 (31,014 of its 31,783)."""
    coco, flickr = ds.KARPATHY_SPLITS["dataset_coco.json"], ds.KARPATHY_SPLITS["dataset_flickr30k.json"]
    assert coco == {"train+restval": 113_287, "val": 5_000, "test": 5_000}
    assert sum(coco.values()) == ds.SOURCES["coco"].expected["train2014"] + ds.SOURCES["coco"].expected["val2014"]
    assert flickr == {"train": 29_000, "val": 1_014, "test": 1_000}
    assert sum(flickr.values()) < ds.SOURCES["flickr30k"].expected["flickr30k-images"]
    for what in ("coco", "flickr30k"):
        assert all(ds.SOURCES[what].expected[name] == ds.KARPATHY_SPLITS[name] for name in ds.KARPATHY_JSON)


def test_coco_lands_in_the_layout_the_loaders_read_and_is_counted(mirror, tmp_path, capsys):
    _coco_mirror(mirror, tmp_path)
    data = tmp_path / "data"
    tiny = replace(ds.SOURCES["coco"], expected={"train2014": 3, "val2014": 7}, sizes={})
    assert dd.coco(data, tiny) == {"train2014": 3, "val2014": 7, "dataset_coco.json": 10}
    assert len(load_karpathy_split(data / "coco/dataset_coco.json", data / "coco/images", "test")) == 4
    assert (data / "flickr30k" / "dataset_flickr30k.json").is_file()
    assert dd.coco(data, tiny)["val2014"] == 7                            # again: nothing to do, same counts
    assert dd.main(["coco", str(data)]) == 2                              # the real counts: an error naming them
    assert ("dataset_coco.json: it holds train+restval 5, val 1, test 4 images, Karpathy's dataset_coco.json "
            "train+restval 113,287, val 5,000, test 5,000") in capsys.readouterr().err     # the splits, before the zips
    with pytest.raises(DataError, match="holds 3 JPEGs after extracting train2014.zip, expected 82,783"):
        dd.coco(data, replace(tiny, expected={**SPLITS, "train2014": 82_783, "val2014": 7}))
    with pytest.raises(DataError, match=r"train2014.zip needs about 2,000,000.0 GB free under .*; [\d,.]+ GB are"):
        dd.coco(tmp_path / "elsewhere", replace(tiny, sizes={"train2014.zip": 10 ** 15}))


def test_coco_names_an_image_its_json_names_and_no_archive_holds(mirror, tmp_path):
    _coco_mirror(mirror, tmp_path, drop="COCO_val2014_000000000005.jpg")
    tiny = replace(ds.SOURCES["coco"], expected={"train2014": 3, "val2014": 6}, sizes={})
    with pytest.raises(DataError, match=r"1 of the 10 images dataset_coco.json names .*COCO_val2014_000000000005"):
        dd.coco(tmp_path / "data", tiny)


def test_flickr30k_from_the_request_form_archive(mirror, tmp_path):
    flickr = _coco_mirror(mirror, tmp_path)
    archive = tmp_path / "flickr30k-images.tar.gz"
    members = {f"flickr30k-images/{p.name}": p.read_bytes() for p in (flickr / "flickr30k-images").iterdir()}
    _tar(archive, {**members, "flickr30k-images/readme.txt": b"terms of use"}, "w:gz")
    data = tmp_path / "data"
    tiny = replace(ds.SOURCES["flickr30k"], expected={"flickr30k-images": 5})
    assert dd.flickr30k(data, archive, tiny) == {"flickr30k-images": 5, "dataset_flickr30k.json": 5}
    assert len(load_karpathy_split(data / "flickr30k/dataset_flickr30k.json", data / "flickr30k/flickr30k-images",
                                   "test")) == 3
    with pytest.raises(DataError, match="archive not found: .*shannon.cs.illinois.edu"):
        dd.flickr30k(data, tmp_path / "absent.tar.gz", tiny)


VALPREP = """mkdir -p n01440764
mkdir -p n01443537
touch pwned
mv ILSVRC2012_val_00000001.JPEG n01440764/
mv ILSVRC2012_val_00000002.JPEG n01443537/
mv ILSVRC2012_val_00000003.JPEG n01443537/
mv ILSVRC2012_val_00000004.JPEG n01440764/
mv ILSVRC2012_val_00000005.JPEG n01440764/
mv ILSVRC2012_val_00000006.JPEG n01443537/
"""


def test_imagenet_is_sorted_by_the_parsed_valprep_script_never_run(mirror, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (mirror / "valprep.sh").write_text(VALPREP)
    archive = tmp_path / "ILSVRC2012_img_val.tar"
    _tar(archive, {f"ILSVRC2012_val_{k:08d}.JPEG": jpeg_bytes(k, (12, 10)) for k in range(1, 7)})
    data = tmp_path / "data"
    tiny = replace(ds.SOURCES["imagenet"], expected={"classes": 2, "per_class": 3})
    assert dd.imagenet(data, archive, tiny) == {"classes": 2, "images": 6}
    val = data / "imagenet" / "val"
    assert sorted(p.name for p in (val / "n01440764").iterdir()) == \
        ["ILSVRC2012_val_00000001.JPEG", "ILSVRC2012_val_00000004.JPEG", "ILSVRC2012_val_00000005.JPEG"]
    assert not list(tmp_path.rglob("pwned"))                              # parsed, not executed
    flat = tmp_path / "val"                                              # the tar extracted already: a folder
    with tarfile.open(archive) as tar:
        tar.extractall(flat, filter="data")
    assert dd.imagenet(tmp_path / "data2", flat, tiny) == {"classes": 2, "images": 6}
    assert dd.imagenet(tmp_path / "data3", val, tiny) == {"classes": 2, "images": 6}   # or sorted into classes
    assert sorted(p.name for p in (tmp_path / "data2" / "imagenet" / "val" / "n01440764").iterdir()) == \
        sorted(p.name for p in (val / "n01440764").iterdir())
    with pytest.raises(DataError, match=r"2 class folders \(expected 2\), 2 of them without 4 images"):
        dd.imagenet(data, archive, replace(tiny, expected={"classes": 2, "per_class": 4}))
    with pytest.raises(DataError, match="folders it never makes: \\['n09999999'\\]"):
        dd.parse_valprep("mkdir -p n01440764\nmv ILSVRC2012_val_00000001.JPEG n09999999/\n")


def _shards(mirror, prefix: str, indices, per_shard: int = 4) -> None:
    for s in indices:
        write_shard(mirror / f"{prefix}-train-{s:04d}.tar",
                    {f"{s:04d}{k:03d}": {"jpg": jpeg_bytes(10 * s + k, (16, 16)), "txt": f"shard {s} pair {k}"}
                     for k in range(per_shard)})


def test_cc3m_stops_at_n_pairs_and_writes_the_shard_list_training_reads(mirror, tmp_path, capsys):
    _shards(mirror, "cc3m", range(5))
    data = tmp_path / "data"
    assert dd.main(["cc3m", str(data), "--pairs", "10"]) == 0
    out = capsys.readouterr().out
    assert "cc3m: 3 shards, 12 usable pairs" in out and f"wds:{data / 'cc3m' / 'shards.txt'}@10" in out
    listing = data / "cc3m" / "shards.txt"
    assert listing.read_text().split() == ["cc3m-train-0000.tar", "cc3m-train-0001.tar", "cc3m-train-0002.tar"]
    assert not (data / "cc3m" / "cc3m-train-0003.tar").exists()           # stopped as soon as N was reached
    records, report = load_shards(f"{listing}@10")
    assert len(records) == 10 and report.shards == 3


def test_a_missing_or_broken_shard_is_skipped_and_counted(mirror, tmp_path):
    _shards(mirror, "cc3m", [0, 3, 4])                                    # 0001 missing; 0002 is not a tar
    (mirror / "cc3m-train-0002.tar").write_bytes(b"<html>Entry not found</html>")
    data, tiny = tmp_path / "data", replace(ds.SOURCES["cc3m"], expected={"first": 0, "last": 4})
    summary = dd.download_shards(data, "cc3m", 12, tiny, max_failed=0.5)
    assert summary == {"shards": 3, "pairs": 12, "bytes": summary["bytes"], "failed": 2, "tried": 5}
    assert (data / "cc3m" / "shards.txt").read_text().split() == \
        ["cc3m-train-0000.tar", "cc3m-train-0003.tar", "cc3m-train-0004.tar"]
    assert not (data / "cc3m" / "cc3m-train-0002.tar").exists()
    with pytest.raises(DataError, match=r"2 of the 5 cc3m shards tried failed \(more than 5%"):
        dd.download_shards(data, "cc3m", 12, tiny)
    with pytest.raises(DataError, match=r"hold 12 usable pairs, fewer than the 100 asked for"):
        dd.download_shards(data, "cc3m", 100, tiny, max_failed=0.5)


def test_a_damaged_archive_is_an_error_naming_it(tmp_path):
    archive = tmp_path / "flickr30k-images.tar.gz"
    _tar(archive, {f"flickr30k-images/{k}.jpg": jpeg_bytes(k) for k in range(20)}, "w:gz")
    archive.write_bytes(archive.read_bytes()[:len(archive.read_bytes()) // 2])          # cut off
    with pytest.raises(DataError, match=r"flickr30k-images.tar.gz (is damaged|cannot be read)"):
        ds.extract(archive, lambda name: tmp_path / "out" / name)


def test_a_shard_cut_at_a_members_header_is_skipped_and_counted_as_failed(mirror, tmp_path):
    """Cut exactly at a member's header the shard reads as a complete tar; its missing end-of-archive blocks make it
    a failed shard, skipped, deleted and counted like one cut mid-member."""
    import tarfile
    _shards(mirror, "cc3m", [0, 1, 2])
    cut = mirror / "cc3m-train-0001.tar"
    with tarfile.open(cut) as tar:
        offset = tar.getmembers()[4].offset                                # the third pair's first member
    with open(cut, "r+b") as f:
        f.truncate(offset)
    data, tiny = tmp_path / "data", replace(ds.SOURCES["cc3m"], expected={"first": 0, "last": 2})
    summary = dd.download_shards(data, "cc3m", 8, tiny, max_failed=0.5)
    assert (summary["shards"], summary["failed"], summary["tried"], summary["pairs"]) == (2, 1, 3, 8)
    assert (data / "cc3m" / "shards.txt").read_text().split() == ["cc3m-train-0000.tar", "cc3m-train-0002.tar"]
    assert not (data / "cc3m" / "cc3m-train-0001.tar").exists()


# ------------------------------------------------------------------- a dead link: the order, --source, second sources

def _fetched(monkeypatch) -> list[str]:
    """The file names the downloads fetch, in order (the real fetch still runs): ``obtain``'s (data/sources.py) and
    the shards' (data/download.py)."""
    names = []

    def spy(url, dest, *args, **kwargs):
        names.append(Path(dest).name)
        return fetch(url, dest, *args, **kwargs)
    for module in (ds, dd):
        monkeypatch.setattr(module, "fetch", spy)
    return names


def test_the_karpathy_splits_are_fetched_before_the_coco_zips(mirror, tmp_path, monkeypatch):
    """The small files first: Karpathy's zip before the 20 GB of COCO's, so that its dead link stops the command
    before any image archive was fetched."""
    _coco_mirror(mirror, tmp_path)
    fetched = _fetched(monkeypatch)
    assert dd.coco(tmp_path / "data", TINY)["dataset_coco.json"] == 10
    assert fetched == ["caption_datasets.zip", "train2014.zip", "val2014.zip"]
    (mirror / "caption_datasets.zip").unlink()                              # the dead link, and no second source
    fetched.clear()
    with pytest.raises(DownloadError, match=r"caption_datasets.zip: no link gave it \(.*not found \(404\).*--source "
                                            r"caption_datasets.zip=PATH_OR_URL"):
        dd.coco(tmp_path / "other", TINY)
    assert fetched == ["caption_datasets.zip", "karpathy_coco.json", "dataset_flickr30k.json"]      # no COCO zip
    assert not (tmp_path / "other" / "downloads" / "train2014.zip").exists()


def _served_mirror(server, tmp_path):
    """The 127.0.0.1 server: /mirror/ holds every file of the tiny COCO but caption_datasets.zip, /elsewhere/ that."""
    root, base = server
    (root / "mirror").mkdir()
    (root / "elsewhere").mkdir()
    _coco_mirror(root / "mirror", tmp_path)
    (root / "mirror" / "caption_datasets.zip").rename(root / "elsewhere" / "caption_datasets.zip")
    return root, base


def test_one_file_the_mirror_lacks_is_read_from_its_own_source(server, tmp_path, monkeypatch, capsys):
    """THESIS_MIRROR (served over HTTP) lacks Karpathy's zip: the download fails naming it and the way out; with
    --source for that file alone (a URL the mirror does not redirect, or a local file) it lands, checked by its
    split counts; a file of other counts given that way is refused with them."""
    root, base = _served_mirror(server, tmp_path)
    monkeypatch.setenv("THESIS_MIRROR", f"{base}/mirror/")
    with pytest.raises(DownloadError, match=rf"{base}/mirror/caption_datasets.zip\): HTTP 404.*--source"):
        dd.coco(tmp_path / "a", TINY)
    fetched = _fetched(monkeypatch)
    url = f"{base}/elsewhere/caption_datasets.zip"
    assert dd.coco(tmp_path / "a", TINY, {"caption_datasets.zip": url}) == \
        {"train2014": 3, "val2014": 7, "dataset_coco.json": 10}
    assert fetched == ["caption_datasets.zip", "train2014.zip", "val2014.zip"]
    assert (tmp_path / "a" / "downloads" / "caption_datasets.zip").read_bytes() == \
        (root / "elsewhere" / "caption_datasets.zip").read_bytes()
    assert (tmp_path / "a" / "flickr30k" / "dataset_flickr30k.json").is_file()
    local = root / "elsewhere" / "caption_datasets.zip"                    # a local file: read where it lies
    assert dd.coco(tmp_path / "b", TINY, {"caption_datasets.zip": str(local)})["dataset_coco.json"] == 10
    assert not (tmp_path / "b" / "downloads" / "caption_datasets.zip").exists()
    wrong = tmp_path / "wrong.json"                                         # Flickr30K's file given as COCO's
    wrong.write_bytes((tmp_path / "src" / "flickr30k" / "dataset_flickr30k.json").read_bytes())
    with pytest.raises(DataError, match=r"--source dataset_coco.json=.*wrong.json: it holds train\+restval 2, val 0, "
                                        r"test 3 images, Karpathy's dataset_coco.json train\+restval 5, val 1, test 4"):
        dd.coco(tmp_path / "c", TINY, {"dataset_coco.json": str(wrong), "caption_datasets.zip": url})
    assert wrong.is_file()                                                  # yours: never deleted
    monkeypatch.setattr(dd, "SOURCES", {**ds.SOURCES, "coco": TINY})       # the command line, the same
    assert dd.main(["coco", str(tmp_path / "d"), "--source", f"caption_datasets.zip={url}"]) == 0
    assert "coco: train2014 3, val2014 7, dataset_coco.json 10 (all as expected)" in capsys.readouterr().out


def test_a_file_placed_in_downloads_is_used_and_checked(mirror, tmp_path, monkeypatch):
    """Every file placed in DATA/downloads/ by hand is read from there, nothing fetched (the mirror is empty); a
    placed split file of other counts stops the command naming it, and is kept."""
    (tmp_path / "files").mkdir()
    _coco_mirror(tmp_path / "files", tmp_path)
    data = tmp_path / "data"
    (data / "downloads").mkdir(parents=True)
    for p in (tmp_path / "files").iterdir():
        p.rename(data / "downloads" / p.name)
    fetched = _fetched(monkeypatch)
    assert dd.coco(data, TINY) == {"train2014": 3, "val2014": 7, "dataset_coco.json": 10}
    assert fetched == []
    other = tmp_path / "other"
    (other / "downloads").mkdir(parents=True)
    placed = other / "downloads" / "dataset_coco.json"
    placed.write_bytes((tmp_path / "src" / "flickr30k" / "dataset_flickr30k.json").read_bytes())
    with pytest.raises(DataError, match=r"downloads/dataset_coco.json \(already in .*: it holds train\+restval 2"):
        dd.coco(other, TINY)
    assert placed.is_file() and fetched == []
    placed.write_bytes((tmp_path / "src" / "coco" / "dataset_coco.json").read_bytes())   # the right ones: used as is
    (other / "downloads" / "dataset_flickr30k.json").write_bytes(
        (tmp_path / "src" / "flickr30k" / "dataset_flickr30k.json").read_bytes())
    with pytest.raises(DownloadError, match="train2014.zip: no link gave it"):           # (the zips are not there)
        dd.coco(other, TINY)
    assert (other / "coco" / "dataset_coco.json").read_bytes() == placed.read_bytes()


def test_the_second_sources_of_the_splits_and_of_flickr30k(mirror, tmp_path):
    """Karpathy's zip gone: each JSON from its second source (its file name on the hub, read here from the mirror),
    checked by its split counts — one of other counts is deleted and named; Flickr30K's images without --archive from
    the hub's flickr30k-images.zip, counted like the request form's archive."""
    flickr = _coco_mirror(mirror, tmp_path)
    (mirror / "caption_datasets.zip").unlink()
    assert [file_name(u) for u in ds.links(TINY, "dataset_coco.json")] == ["karpathy_coco.json"]
    (mirror / "karpathy_coco.json").write_bytes((tmp_path / "src" / "coco" / "dataset_coco.json").read_bytes())
    (mirror / "dataset_flickr30k.json").write_bytes((flickr / "dataset_flickr30k.json").read_bytes())
    data = tmp_path / "data"
    assert dd.karpathy(data, TINY) == {"dataset_coco.json": SPLITS["dataset_coco.json"],
                                       "dataset_flickr30k.json": SPLITS["dataset_flickr30k.json"]}
    assert (data / "coco" / "dataset_coco.json").read_bytes() == (mirror / "karpathy_coco.json").read_bytes()
    _zip(mirror / "flickr30k-images.zip", {f"flickr30k-images/{p.name}": p.read_bytes()
                                           for p in (flickr / "flickr30k-images").iterdir()})
    tiny = replace(ds.SOURCES["flickr30k"], expected={"flickr30k-images": 5, **SPLITS})
    assert dd.flickr30k(data, None, tiny) == {"flickr30k-images": 5, "dataset_flickr30k.json": 5}
    assert (data / "downloads" / "flickr30k-images.zip").is_file()
    (mirror / "karpathy_coco.json").write_bytes((flickr / "dataset_flickr30k.json").read_bytes())   # not COCO's
    with pytest.raises(DownloadError, match=r"karpathy_coco.json \(from https://huggingface.co/datasets/openflamingo/"
                                            r".*: it holds train\+restval 2, val 0, test 3 images"):
        dd.karpathy(tmp_path / "again", TINY)
    assert not (tmp_path / "again" / "downloads" / "karpathy_coco.json").exists()      # fetched and wrong: deleted


def test_source_names_a_file_of_the_set_and_a_local_shard(mirror, tmp_path, capsys):
    for argv, said in [(["coco", "d", "--source", "train2015.zip=/x"],
                        "--source train2015.zip: coco reads no file of that name (its files: caption_datasets.zip"),
                       (["coco", "d", "--source", "train2014.zip"], "--source train2014.zip: give NAME=PATH_OR_URL"),
                       (["cc3m", "d", "--pairs", "4", "--source", "cc3m-train-9999.tar=/x"],
                        "(its files: cc3m-train-0000.tar, cc3m-train-0001.tar, cc3m-train-0002.tar, …, "
                        "cc3m-train-0575.tar)"),
                       (["flickr30k", "d", "--archive", "a.zip", "--source", "flickr30k-images.zip=b.zip"],
                        "--archive and --source flickr30k-images.zip name the same file")]:
        with pytest.raises(SystemExit) as stop:
            dd.main(argv)
        assert stop.value.code == 2 and said in capsys.readouterr().err.splitlines()[-1], argv
    _shards(mirror, "cc3m", [0, 2])                                         # 0001 only elsewhere, on this disk
    (tmp_path / "elsewhere").mkdir()
    _shards(tmp_path / "elsewhere", "cc3m", [1])
    data, tiny = tmp_path / "data", replace(ds.SOURCES["cc3m"], expected={"first": 0, "last": 2})
    given = {"cc3m-train-0001.tar": str(tmp_path / "elsewhere" / "cc3m-train-0001.tar")}
    summary = dd.download_shards(data, "cc3m", 12, tiny, given=given)
    assert (summary["shards"], summary["failed"], summary["pairs"]) == (3, 0, 12)
    assert (data / "cc3m" / "cc3m-train-0001.tar").read_bytes() == Path(given["cc3m-train-0001.tar"]).read_bytes()


def test_fetch_reads_a_local_file_or_a_url_past_the_mirror(mirror, server, tmp_path):
    root, base = server
    (root / "f.bin").write_bytes(b"served")
    (tmp_path / "local.bin").write_bytes(b"local")
    assert fetch(str(tmp_path / "local.bin"), tmp_path / "a.bin", mirror=False)[0] == 5
    assert fetch(f"{base}/f.bin", tmp_path / "b.bin", mirror=False)[0] == 6          # the mirror has no f.bin
    with pytest.raises(DownloadError, match=r"nowhere.bin: not found \(404\): no such file"):
        fetch(str(tmp_path / "nowhere.bin"), tmp_path / "c.bin", mirror=False)
