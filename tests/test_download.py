"""fetch.py, models/download.py and data/download.py on tiny fixtures written here: THESIS_MIRROR points at a folder
of them (or a local HTTP server answers), so nothing leaves the machine. The expected counts and the links are
passed in (``Source``, ``urls``) where the tiny sets differ from the real ones."""
import http.server
import io
import json
import tarfile
import threading
import zipfile
from dataclasses import replace
from functools import partial

import pytest
import torch

from thesis_lib.data import download as dd
from thesis_lib.data.datasets import load_karpathy_split
from thesis_lib.data.shards import load_shards
from thesis_lib.errors import CheckpointError, DataError, DownloadError
from thesis_lib.fetch import fetch, file_name, file_sha256
from thesis_lib.models import download as md
from thesis_lib.models.lock import read_lock
from thesis_lib.study.full_scale.fixtures import (SHRINK, checkpoint_folder, jpeg_bytes, karpathy_coco, karpathy_flickr,
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
        elif self.path.startswith("/short/"):
            self.send_response(200)
            self.send_header("Content-Length", "1000")
            self.end_headers()
            self.wfile.write(b"x" * 100)
            self.close_connection = True
        else:
            super().do_GET()


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
    with pytest.raises(DownloadError, match=r"/short/big.zip: cut off after 100 of 1,000 bytes"):
        fetch(f"{base}/short/big.zip", tmp_path / "big.zip")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt", "served"]       # no dest, no .part
    monkeypatch.setenv("THESIS_MIRROR", f"{base}/m/")                       # a mirror served over HTTP
    assert fetch("https://dl.fbaipublicfiles.com/fairseq/data2vec2/dict.txt", tmp_path / "b.txt")[0] == 8


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
    checkpoint_folder(mirror)
    with pytest.raises(CheckpointError, match=r"vocab.bpe: SHA-256 .* is not the published 000000000000"):
        md.download_checkpoints(tmp_path / "b", require={"vocab.bpe": "0" * 64}, overrides=SHRINK)
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


def test_coco_lands_in_the_layout_the_loaders_read_and_is_counted(mirror, tmp_path, capsys):
    _coco_mirror(mirror, tmp_path)
    data = tmp_path / "data"
    tiny = replace(dd.SOURCES["coco"], expected={"train2014": 3, "val2014": 7}, sizes={})
    assert dd.coco(data, tiny) == {"train2014": 3, "val2014": 7, "dataset_coco.json": 10}
    assert len(load_karpathy_split(data / "coco/dataset_coco.json", data / "coco/images", "test")) == 4
    assert (data / "flickr30k" / "dataset_flickr30k.json").is_file()
    assert dd.coco(data, tiny)["val2014"] == 7                            # again: nothing to do, same counts
    assert dd.main(["coco", str(data)]) == 2                              # the real counts: an error naming them
    assert "holds 3 JPEGs after extracting train2014.zip, expected 82,783" in capsys.readouterr().err
    with pytest.raises(DataError, match=r"train2014.zip needs about 2,000,000.0 GB free under .*; [\d,.]+ GB are"):
        dd.coco(tmp_path / "elsewhere", replace(tiny, sizes={"train2014.zip": 10 ** 15}))


def test_coco_names_an_image_its_json_names_and_no_archive_holds(mirror, tmp_path):
    _coco_mirror(mirror, tmp_path, drop="COCO_val2014_000000000005.jpg")
    tiny = replace(dd.SOURCES["coco"], expected={"train2014": 3, "val2014": 6}, sizes={})
    with pytest.raises(DataError, match=r"1 of the 10 images dataset_coco.json names .*COCO_val2014_000000000005"):
        dd.coco(tmp_path / "data", tiny)


def test_flickr30k_from_the_request_form_archive(mirror, tmp_path):
    flickr = _coco_mirror(mirror, tmp_path)
    archive = tmp_path / "flickr30k-images.tar.gz"
    members = {f"flickr30k-images/{p.name}": p.read_bytes() for p in (flickr / "flickr30k-images").iterdir()}
    _tar(archive, {**members, "flickr30k-images/readme.txt": b"terms of use"}, "w:gz")
    data = tmp_path / "data"
    tiny = replace(dd.SOURCES["flickr30k"], expected={"flickr30k-images": 5})
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
    tiny = replace(dd.SOURCES["imagenet"], expected={"classes": 2, "per_class": 3})
    assert dd.imagenet(data, archive, tiny) == {"classes": 2, "images": 6}
    val = data / "imagenet" / "val"
    assert sorted(p.name for p in (val / "n01440764").iterdir()) == \
        ["ILSVRC2012_val_00000001.JPEG", "ILSVRC2012_val_00000004.JPEG", "ILSVRC2012_val_00000005.JPEG"]
    assert not list(tmp_path.rglob("pwned"))                              # parsed, not executed
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
    data, tiny = tmp_path / "data", replace(dd.SOURCES["cc3m"], expected={"first": 0, "last": 4})
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
        dd.extract(archive, lambda name: tmp_path / "out" / name)


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
    data, tiny = tmp_path / "data", replace(dd.SOURCES["cc3m"], expected={"first": 0, "last": 2})
    summary = dd.download_shards(data, "cc3m", 8, tiny, max_failed=0.5)
    assert (summary["shards"], summary["failed"], summary["tried"], summary["pairs"]) == (2, 1, 3, 8)
    assert (data / "cc3m" / "shards.txt").read_text().split() == ["cc3m-train-0000.tar", "cc3m-train-0002.tar"]
    assert not (data / "cc3m" / "cc3m-train-0001.tar").exists()
