"""Tiny files in the real formats the thesis scale reads, written by the repository itself: the three checkpoints in
their original key layouts (random weights) with what the originals pickle beside their tensors (fairseq's trainer
state and argparse ``args``, unilm's argparse ``args``: only the guarded unpickler reads them), GPT-2 BPE tokenizer
files in fairseq's dictionary order, Karpathy-format COCO and Flickr30K (JSON + JPEGs), ImageNet-1K's 1,000 class
folders read with the shipped class names, and img2dataset-style webdataset shards with the broken samples a real
download holds, one of which is only found when a training batch decodes it. ``make rehearsal``
(full_scale/rehearsal.py) and the tests use them; the key layouts are documented in docs/sources.md §7.5.
"""
from __future__ import annotations

import argparse
import io
import json
import math
import sys
import tarfile
import types
from pathlib import Path

import numpy as np
import torch
from PIL import Image

IMG = "modality_encoders.IMAGE."
TXT = "modality_encoders.TEXT."
IMAGENET_CLASSES = 1000     # ImageNet-1K's class folders, named by the shipped class-name list (no classnames.json)


# ------------------------------------------------------------------------------------------------- checkpoints

def foreign_object(module: str, name: str, state: dict):
    """An object that pickles as an instance of ``module.name``, a class of a package this repository never installs
    (fairseq's, unilm's): what the original files hold beside their tensors. The class and its module exist only
    while the file is written (``_save_with_foreign_classes``)."""
    cls = type(name, (), {"__module__": module, "__qualname__": name})
    obj = cls.__new__(cls)
    obj.__dict__.update(state)
    return obj


def _save_with_foreign_classes(obj, path, *foreign) -> None:
    """``torch.save(obj, path)`` while the modules of the ``foreign`` objects' classes are importable (pickle looks
    a class up by its module path); sys.modules is restored afterwards."""
    fake = {}
    for o in foreign:
        parts = type(o).__module__.split(".")
        for k in range(1, len(parts) + 1):
            fake.setdefault(".".join(parts[:k]), types.ModuleType(".".join(parts[:k])))
        setattr(fake[type(o).__module__], type(o).__name__, type(o))
    saved = {k: sys.modules.get(k) for k in fake}
    sys.modules.update(fake)
    try:
        torch.save(obj, path)
    finally:
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v


def fairseq_trainer_state(best: float = 3.25, updates: int = 400_000) -> tuple[dict, object]:
    """What fairseq's trainer writes beside ``model`` and ``cfg`` (``Trainer.state_dict``): the optimiser history
    and the extra state, with numpy scalars and a fairseq class (its meters) as a real file has them; neither the
    plain ``torch.load(weights_only=True)`` nor any loader without fairseq can read these, so they make the file
    need the guarded unpickler (``models.checkpoints.torch_load``). Returns the entries and the fairseq object."""
    meters = foreign_object("fairseq.logging.meters", "MetersDict", {"priorities": {"loss": (0, 0)}})
    return {"criterion": {}, "optimizer_history": [{
        "criterion_name": "ModelCriterion", "optimizer_name": "FairseqAdam", "num_updates": updates,
        "lr_scheduler_state": {"best": np.float64(best)}}],
        "task_state": {}, "extra_state": {"epoch": 800, "previous_best": np.float64(best),
                                          "train_iterator": {"epoch": 800, "iterations_in_epoch": 0, "shuffle": True},
                                          "metrics": {"train": meters}}}, meters

def _block_keys(prefix, D, g):
    t = {}
    for norm in ("norm1", "norm2"):
        t[prefix + f"{norm}.weight"] = 1 + 0.1 * torch.randn(D, generator=g)
        t[prefix + f"{norm}.bias"] = 0.1 * torch.randn(D, generator=g)
    shapes = {"attn.qkv.weight": (3 * D, D), "attn.qkv.bias": (3 * D,), "attn.proj.weight": (D, D),
              "attn.proj.bias": (D,), "mlp.fc1.weight": (4 * D, D), "mlp.fc1.bias": (4 * D,),
              "mlp.fc2.weight": (D, 4 * D), "mlp.fc2.bias": (D,)}
    for k, s in shapes.items():
        t[prefix + k] = 0.2 * torch.randn(*s, generator=g) / math.sqrt(s[-1])
    return t


def sincos(D, grid):
    omega = 1 / 10000 ** (torch.arange(D // 4, dtype=torch.float64) / (D / 4))
    out = []
    for r in range(grid):
        for c in range(grid):
            out.append(torch.cat([torch.sin(c * omega), torch.cos(c * omega),
                                  torch.sin(r * omega), torch.cos(r * omega)]))
    return torch.stack(out).float()


def d2v_image_file(path, D=32, H=2, P=0, L=4, img=32, patch=8, fp16=True, seed=0):
    g = torch.Generator().manual_seed(seed)
    sd = {IMG + "extra_tokens": 0.1 * torch.randn(1, 1, D, generator=g),
          IMG + "local_encoder.proj.weight": 0.05 * torch.randn(D, 3, patch, patch, generator=g),
          IMG + "local_encoder.proj.bias": 0.1 * torch.randn(D, generator=g),
          IMG + "fixed_positional_encoder.positions": sincos(D, img // patch)[None],
          IMG + "context_encoder.norm.weight": 1 + 0.1 * torch.randn(D, generator=g),
          IMG + "context_encoder.norm.bias": 0.1 * torch.randn(D, generator=g)}
    for i in range(P):
        sd.update(_block_keys(IMG + f"context_encoder.blocks.{i}.", D, g))
    for j in range(3):
        sd[IMG + f"decoder.blocks.{j}.0.weight"] = torch.randn(D, D // 4, 3, 3, generator=g)
        sd[IMG + f"decoder.blocks.{j}.0.bias"] = torch.randn(D, generator=g)
    sd[IMG + "decoder.proj.weight"] = torch.randn(D, D, generator=g)
    sd[IMG + "decoder.proj.bias"] = torch.randn(D, generator=g)
    for n in range(L):
        sd.update(_block_keys(f"blocks.{n}.", D, g))
    ema = {k: v.float() + 0.01 for k, v in sd.items() if "decoder" not in k}
    if fp16:
        sd = {k: v.half() for k, v in sd.items()}
    sd["_ema"] = ema
    cfg = {"model": {"depth": L, "embed_dim": D, "num_heads": H, "norm_eps": 1e-6, "layer_norm_first": False,
                     "supported_modality": "IMAGE", "modalities": {"image": {
                         "prenet_depth": P, "num_extra_tokens": 1, "patch_size": patch, "input_size": img,
                         "embed_dim": D}}}}
    trainer, meters = fairseq_trainer_state()
    _save_with_foreign_classes({"model": sd, "args": None, "cfg": cfg, **trainer}, path, meters)
    return {k: (v.float() if torch.is_tensor(v) else v) for k, v in sd.items()}


def d2v_text_file(path, D=32, H=2, V=60, M=20, L=3, seed=1):
    g = torch.Generator().manual_seed(seed)
    tok = 0.1 * torch.randn(V, D, generator=g)
    tok[1] = 0
    pos = 0.1 * torch.randn(M + 2, D, generator=g)
    pos[1] = 0
    sd = {TXT + "local_encoder.embed_tokens.weight": tok, TXT + "local_encoder.embed_positions.weight": pos,
          TXT + "local_encoder.layernorm_embedding.weight": 1 + 0.1 * torch.randn(D, generator=g),
          TXT + "local_encoder.layernorm_embedding.bias": 0.1 * torch.randn(D, generator=g),
          TXT + "decoder.blocks.0.0.weight": torch.randn(D, D, 9, generator=g),
          TXT + "decoder.blocks.0.0.bias": torch.randn(D, generator=g),
          TXT + "decoder.proj.0.weight": torch.randn(2 * D, D, generator=g)}
    for n in range(L):
        sd.update(_block_keys(f"blocks.{n}.", D, g))
    sd["_ema"] = {k[len("blocks."):]: v for k, v in sd.items() if k.startswith("blocks.")}
    cfg = {"model": {"depth": L, "embed_dim": D, "num_heads": H, "norm_eps": 1e-5,
                     "modalities": {"text": {"prenet_depth": 0, "max_source_positions": M}}}}
    trainer, meters = fairseq_trainer_state(best=2.5, updates=1_000_000)
    args = argparse.Namespace(task="masked_lm", arch="data2vec_multi", max_positions=M, fp16=True,  # fairseq's
                              lr=[np.float64(2e-4)], seed=1)                  # pre-hydra checkpoints' "args"
    _save_with_foreign_classes({"model": sd, "args": args, "cfg": cfg, **trainer}, path, meters)
    return sd


def beit_relative_index(w):
    """unilm BEiT's relative_position_index for a w × w grid plus the CLS token."""
    coords = torch.stack(torch.meshgrid(torch.arange(w), torch.arange(w), indexing="ij")).flatten(1)
    rel = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0) + (w - 1)
    n_dist = (2 * w - 1) ** 2 + 3
    idx = torch.zeros(w * w + 1, w * w + 1, dtype=torch.long)
    idx[1:, 1:] = rel[..., 0] * (2 * w - 1) + rel[..., 1]
    idx[0, :], idx[:, 0], idx[0, 0] = n_dist - 3, n_dist - 2, n_dist - 1
    return idx


def beitv2_file(path, D=32, H=2, L=2, img=32, patch=8, vocab=16, seed=2):
    g = torch.Generator().manual_seed(seed)
    w = img // patch
    sd = {"cls_token": 0.1 * torch.randn(1, 1, D, generator=g), "mask_token": torch.randn(1, 1, D, generator=g),
          "patch_embed.proj.weight": 0.05 * torch.randn(D, 3, patch, patch, generator=g),
          "patch_embed.proj.bias": 0.1 * torch.randn(D, generator=g),
          "rel_pos_bias.relative_position_bias_table": 0.5 * torch.randn((2 * w - 1) ** 2 + 3, H, generator=g),
          "rel_pos_bias.relative_position_index": beit_relative_index(w),
          "norm.weight": 1 + 0.1 * torch.randn(D, generator=g), "norm.bias": 0.1 * torch.randn(D, generator=g),
          "lm_head.weight": torch.randn(vocab, D, generator=g), "lm_head.bias": torch.randn(vocab, generator=g)}

    def block(prefix):
        b = {k: v for k, v in _block_keys(prefix, D, g).items() if not k.endswith("attn.qkv.bias")}
        b[prefix + "attn.q_bias"] = 0.1 * torch.randn(D, generator=g)
        b[prefix + "attn.v_bias"] = 0.1 * torch.randn(D, generator=g)
        b[prefix + "gamma_1"] = 0.1 + 0.05 * torch.randn(D, generator=g)
        b[prefix + "gamma_2"] = 0.1 + 0.05 * torch.randn(D, generator=g)
        return b
    for n in range(L):
        sd.update(block(f"blocks.{n}."))
    for n in range(2):
        sd.update(block(f"cls_pt_layers.{n}."))
    args = argparse.Namespace(model="beit_base_patch16_224_8k_vocab_cls_pt", input_size=img, layer_scale_init_value=0.1,
                              lr=np.float64(1.5e-3), epochs=1600, seed=0)       # unilm beit2's argparse options
    torch.save({"model": sd, "optimizer": None, "epoch": 1599, "args": args,
                "scaler": {"scale": 65536.0, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 2000,
                           "_growth_tracker": 1234}}, path)                    # beit2 utils.save_model's keys
    return sd


def _bytes_to_unicode():  # GPT-2's reversible byte -> printable character map
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


def gpt2_tokenizer_files(folder: Path) -> list[int]:
    """A tiny GPT-2 BPE (256 byte symbols + 4 merges) and a fairseq dict.txt in frequency (not id) order (plus one
    madeupword line, as the real file has). Returns the GPT-2 id of each dict line."""
    alphabet = _bytes_to_unicode()
    vocab = {alphabet[b]: b for b in range(256)}
    merges = ["h e", "l l", "he ll", "Ġ w"]
    for m in merges:
        vocab[m.replace(" ", "")] = len(vocab)
    (folder / "encoder.json").write_text(json.dumps(vocab))
    (folder / "vocab.bpe").write_text("#version: 0.2\n" + "\n".join(merges) + "\n")
    order = list(range(len(vocab)))[::-1]                     # line k holds GPT-2 id order[k]
    (folder / "dict.txt").write_text("".join(f"{g} {1000 - k}\n" for k, g in enumerate(order)) + "madeupword0000 0\n")
    return order


# --------------------------------------------------------------------------------------------------------- data

def jpeg_bytes(seed: int, size=(20, 24)) -> bytes:
    rgb = np.random.default_rng(seed).integers(0, 255, size=(*size, 3), dtype=np.uint8)
    buf = io.BytesIO()
    Image.fromarray(rgb).save(buf, "JPEG", quality=90)
    return buf.getvalue()


def undecodable_jpeg(seed: int) -> bytes:
    """A JPEG that looks whole (its start and end markers, its first header) but whose segments are zeros: PIL cannot
    decode it, and no cheap check at indexing finds that."""
    good = jpeg_bytes(seed)
    return good[:20] + bytes(len(good) - 22) + b"\xff\xd9"


def _sentences(imgid, n, first_sentid):
    return [{"tokens": ["a", "caption"], "raw": f"caption {k} of image {imgid}", "imgid": imgid,
             "sentid": first_sentid + k} for k in range(n)]


def karpathy_coco(root: Path) -> Path:
    """A Karpathy-format COCO: 3 train, 2 restval, 1 val, 4 test images (one test image with 6 captions, one
    test image listed twice under the same cocoid), JPEGs under images/train2014/ and images/val2014/."""
    images, sentid = [], 0
    plan = [("train", 5)] * 3 + [("restval", 5)] * 2 + [("val", 5)] + [("test", 6)] + [("test", 5)] * 3
    for imgid, (split, n) in enumerate(plan):
        folder = "train2014" if split == "train" else "val2014"
        entry = {"filepath": folder, "filename": f"COCO_{folder}_{imgid:012d}.jpg", "imgid": imgid,
                 "cocoid": 500 + imgid, "split": split, "sentences": _sentences(imgid, n, sentid)}
        entry["sentids"] = [s["sentid"] for s in entry["sentences"]]
        sentid += n
        images.append(entry)
        path = root / "images" / folder / entry["filename"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(jpeg_bytes(imgid))
    dup = json.loads(json.dumps(images[-1]))          # the same cocoid again, with one more caption
    dup["imgid"], dup["sentences"] = len(images), _sentences(len(images), 1, sentid)
    images.append(dup)
    (root / "dataset_coco.json").write_text(json.dumps({"images": images, "dataset": "coco"}))
    return root


def karpathy_flickr(root: Path) -> Path:
    """A Karpathy-format Flickr30K: 2 train and 3 test images with 5 captions each, flat image folder."""
    images = []
    for imgid, split in enumerate(["train", "train", "test", "test", "test"]):
        entry = {"filename": f"{1000 + imgid}.jpg", "imgid": imgid, "split": split,
                 "sentences": _sentences(imgid, 5, 5 * imgid), "sentids": list(range(5 * imgid, 5 * imgid + 5))}
        images.append(entry)
        path = root / "flickr30k-images" / entry["filename"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(jpeg_bytes(100 + imgid))
    (root / "dataset_flickr30k.json").write_text(json.dumps({"images": images, "dataset": "flickr30k"}))
    return root


def imagenet_val(root: Path, classes: int = IMAGENET_CLASSES) -> Path:
    """ImageNet-style validation class folders (``val/<wnid>/*.JPEG``), one tiny image in each, and no
    ``classnames.json``: the loader names the 1,000 classes from the shipped list, as at the full scale. The folders
    are named ``n00000000`` … in class-index order (the real wnids sort the same way; they are not shipped)."""
    for label in range(classes):
        folder = root / "val" / f"n{label:08d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"ILSVRC2012_val_{label + 1:08d}.JPEG").write_bytes(jpeg_bytes(label, (12, 10)))
    return root


def write_shard(path: Path, samples: dict) -> None:
    """One img2dataset-style tar: samples maps key -> {"jpg": bytes, "txt": str, "json": dict}, any part optional."""
    with tarfile.open(path, "w") as tar:
        for key, parts in samples.items():
            for ext, value in parts.items():
                data = value if isinstance(value, bytes) else (json.dumps(value) if ext == "json" else value).encode()
                info = tarfile.TarInfo(f"{key}.{ext}")
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))


def web_shards(folder: Path, name: str, shards: int = 2, per_shard: int = 8, seed: int = 0) -> str:
    """A webdataset shard set as img2dataset writes it; the last shard also holds the broken samples of a real
    download (an error page instead of a JPEG, an empty caption, a failed download, a missing caption, a truncated
    JPEG), counted at indexing, and one complete JPEG (both markers) that does not decode, which indexing cannot see:
    a training batch meets it (data/train_pairs.py replaces its pair). Returns the brace pattern of
    ``data.train_sets`` (``wds:<pattern>``)."""
    folder.mkdir(parents=True, exist_ok=True)
    for s in range(shards):
        samples = {f"{s:05d}{k:04d}": {"jpg": jpeg_bytes(seed + 10 * s + k, (48, 64)), "txt": f"{name} {k} of {s}",
                                       "json": {"url": "x", "status": "success"}} for k in range(per_shard)}
        if s == shards - 1:
            samples[f"{s:05d}89"] = {"jpg": undecodable_jpeg(seed + 96),
                                     "txt": f"{name}: a picture that does not decode"}
            samples[f"{s:05d}90"] = {"jpg": b"<html>not an image</html>", "txt": "an error page"}
            samples[f"{s:05d}91"] = {"jpg": jpeg_bytes(seed + 99), "txt": "   "}
            samples[f"{s:05d}92"] = {"txt": "no image", "json": {"status": "failed_to_download"}}
            samples[f"{s:05d}93"] = {"jpg": jpeg_bytes(seed + 98)}
            samples[f"{s:05d}94"] = {"jpg": jpeg_bytes(seed + 97, (48, 64))[:400], "txt": "a download cut short"}
        write_shard(folder / f"{s:05d}.tar", samples)
    return str(folder / f"{{00000..{shards - 1:05d}}}.tar")


TEXT_VOCAB = 4 + 261 + 1     # fairseq's specials + the dict.txt lines of the tiny GPT-2 BPE + <mask>


def checkpoint_folder(folder: Path) -> Path:
    """The thesis's checkpoint folder in miniature (width 32): what ``SHRINK`` below fits."""
    folder.mkdir(parents=True, exist_ok=True)
    d2v_image_file(folder / "base_imagenet.pt", D=32, L=4)
    d2v_text_file(folder / "nlp_base.pt", D=32, V=TEXT_VOCAB, M=20, L=3)
    beitv2_file(folder / "beitv2_base_patch16_224_pt1k.pth", D=32, L=2)
    gpt2_tokenizer_files(folder)
    return folder


SHRINK = {  # the thesis preset at the fixtures' width; everything else (loaders, views, tokenizer) is the thesis's
    "model.dim": 32, "model.num_heads": 2, "model.image.img_size": 32, "model.image.patch_size": 8,
    "model.image_depth": 2, "model.text_depth": 2, "model.text.vocab_size": TEXT_VOCAB, "model.text.max_len": 16,
    "model.text.max_positions": 20, "model.text.mask_id": TEXT_VOCAB - 1, "teacher.dim": 32, "teacher.depth": 2,
    "teacher.num_heads": 2, "teacher.patch_size": 8, "train.batch_size": 8, "train.steps": 1,
    "data.num_workers": 2, "eval.batch_size": 16}


def download_mirror(mirror: Path, work: Path, shards: int = 3, per_shard: int = 4) -> dict:
    """A mirror folder of what the downloads fetch (``THESIS_MIRROR``: every link read by its file name), in
    miniature: the six checkpoint files, COCO's two zips and Karpathy's ``caption_datasets.zip``, the hub's
    ``flickr30k-images.zip``, ``valprep.sh`` for 2 classes, and ``shards`` pixparse-named shards of CC3M and of CC12M;
    the archive a user brings (ImageNet's validation tar) is written to ``work``. Returns the counts each set must
    reach."""
    import zipfile
    mirror.mkdir(parents=True, exist_ok=True)
    checkpoint_folder(mirror)
    coco, flickr = karpathy_coco(work / "coco"), karpathy_flickr(work / "flickr30k")
    counts = {}
    for split in ("train2014", "val2014"):
        files = sorted((coco / "images" / split).iterdir())
        counts[split] = len(files)
        with zipfile.ZipFile(mirror / f"{split}.zip", "w") as z:
            for f in files:
                z.writestr(f"{split}/{f.name}", f.read_bytes())
    with zipfile.ZipFile(mirror / "caption_datasets.zip", "w") as z:
        z.writestr("dataset_coco.json", (coco / "dataset_coco.json").read_bytes())
        z.writestr("dataset_flickr30k.json", (flickr / "dataset_flickr30k.json").read_bytes())
    images = sorted((flickr / "flickr30k-images").iterdir())
    counts["flickr30k-images"] = len(images)
    with zipfile.ZipFile(mirror / "flickr30k-images.zip", "w") as z:          # the hub's copy
        for f in images:
            z.writestr(f"flickr30k-images/{f.name}", f.read_bytes())
    wnids = ("n01440764", "n01443537")
    (mirror / "valprep.sh").write_text("".join(f"mkdir -p {w}\n" for w in wnids) + "".join(
        f"mv ILSVRC2012_val_{k:08d}.JPEG {wnids[k % 2]}/\n" for k in range(1, 5)))
    with tarfile.open(work / "ILSVRC2012_img_val.tar", "w") as tar:
        for k in range(1, 5):
            data = jpeg_bytes(k, (12, 10))
            info = tarfile.TarInfo(f"ILSVRC2012_val_{k:08d}.JPEG")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    counts.update(classes=len(wnids), per_class=2)
    for name in ("cc3m", "cc12m"):
        for s in range(shards):
            write_shard(mirror / f"{name}-train-{s:04d}.tar", {
                f"{s:04d}{k:03d}": {"jpg": jpeg_bytes(10 * s + k, (48, 64)), "txt": f"{name} {k} of shard {s}"}
                for k in range(per_shard)})
    counts.update(last=shards - 1)
    return counts
