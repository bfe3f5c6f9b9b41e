"""Check a folder of downloaded thesis checkpoints before a GPU run: each file's size and SHA-256, which release it
is, and whether the thesis preset's loaders accept it (the same strict key and shape checks a run does).

    python -m thesis_lib.models.download CKPT       # fetches the files below into CKPT, checks them, writes the lock
    python -m thesis_lib.models.check CKPT          # prints one table, exit 1 on a problem
    python -m thesis_lib.models.check CKPT --no-lock
    python -m thesis_lib.models.check CKPT --add-to-lock     # records the files the lock file has no entry for

The files and the URLs they come from are declared once, in ``thesis_lib.models.download`` (``URLS``):

* ``base_imagenet.pt``: data2vec 2.0 ViT-B/16, no fine-tuning, fairseq ``examples/data2vec`` (data2vec 2.0 →
  Vision).
* ``nlp_base.pt``: the data2vec **2.0** text base model. fairseq also publishes a data2vec **1.0** text model under
  the same file name (``…/fairseq/data2vec/nlp_base.pt``, a RoBERTa-style ``encoder.sentence_encoder.*`` layout): it
  is recognised and refused.
* ``beitv2_base_patch16_224_pt1k.pth``: BEiT v2 ViT-B/16 self-supervised on ImageNet-1K (the ``pt1k`` file of
  microsoft/unilm ``beit2``'s README), not one of the fine-tuned ``pt1k_ft*`` files: a fine-tuned file is refused.
* ``encoder.json``, ``vocab.bpe``, ``dict.txt``: GPT-2's BPE in fairseq's dictionary order. ``encoder.json`` and
  ``vocab.bpe`` are OpenAI's GPT-2 files, whose SHA-256 openai/tiktoken publishes (``tiktoken_ext/openai_public.py``);
  they are compared here (a difference is a problem for the downloader, a remark for this check, which also reads the
  tiny stand-ins of the tests).

fairseq and unilm publish no checksums for the model files: the first check that passes writes
``CKPT/checkpoints.lock.json`` (``models/lock.py``: each file's size and SHA-256), and every later check compares the
files with it, so that a file that changed is named (``--no-lock``: neither read nor written). A file the lock file
has no entry for is a problem too (it could not be compared): ``--add-to-lock`` records it, once every check passes,
and prints what it added.
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

from ..config import get_config
from ..config_checks import parse_sets
from ..errors import ThesisError
from ..fetch import file_sha256
from .checkpoints import D2V1_TEXT, D2V2_TEXT, model_state, text_release, torch_load
from .lock import LOCK, add_to_lock, compare, lock_path, read_lock, write_lock
from .sources import THESIS_FILES

TOKENIZER_FILES = ("encoder.json", "vocab.bpe", "dict.txt")
KNOWN_SHA256 = {  # openai/tiktoken, tiktoken_ext/openai_public.py, gpt2()
    "encoder.json": "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783",
    "vocab.bpe": "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5",
}


@dataclass
class FileCheck:
    name: str
    size: int | None = None
    sha256: str = ""
    release: str = ""
    problem: str = ""
    unlocked: bool = False          # present and checked, but the lock file has no entry for it (``--add-to-lock``)


def describe(part: str, path: Path) -> str:
    """A one-line description of what a model file holds, read from its keys."""
    state = model_state(torch_load(path), path)
    keys = [k for k in state if k != "_ema"]
    if part == "text":
        release = text_release(state)
        if release == "1.0":
            raise ThesisError(f"{path.name} is the data2vec 1.0 text model ({D2V1_TEXT}); the thesis uses data2vec "
                              f"2.0's, published under the same name: {D2V2_TEXT}")
        return (f"data2vec {release or '?'} text, "
                f"{len({k.split('.')[1] for k in keys if k.startswith('blocks.')})} blocks")
    if part == "image":
        prenet = {k.split(".")[4] for k in keys if ".context_encoder.blocks." in k}
        blocks = {k.split(".")[1] for k in keys if k.startswith("blocks.")}
        return (f"data2vec 2.0 image, {len(prenet)} prenet + {len(blocks)} blocks, "
                f"EMA {'yes' if '_ema' in state else 'no'}")
    pretraining = any(k.startswith("cls_pt_layers.") for k in keys)
    head = "head.weight" in keys or "fc_norm.weight" in keys
    release = "pretraining (pt1k)" if pretraining else "fine-tuned (a pt1k_ft* file?)" if head else "?"
    return f"BEiT v2, {len({k.split('.')[1] for k in keys if k.startswith('blocks.')})} blocks, {release}"


def check_file(name: str, path: Path, require: dict | None = None, sha256: str | None = None) -> FileCheck:
    """One file: present, hashed, and described (a model file) or compared with its published SHA-256 (a tokenizer
    file). ``require`` (name -> SHA-256): the files whose SHA-256 must be exactly this (the downloader's check);
    ``sha256``: the file's, where already known (the downloader hashes while it fetches)."""
    row = FileCheck(name)
    if not path.exists():
        row.problem = "missing"
        return row
    row.size, row.sha256 = path.stat().st_size, sha256 or file_sha256(path)
    part = next((p for p, n in THESIS_FILES.items() if n == name), None)
    if part:
        try:
            row.release = describe(part, path)
        except ThesisError as err:
            row.problem = str(err)
        if part == "teacher" and row.release and not row.release.endswith("pretraining (pt1k)"):
            row.problem = ("not BEiT v2's self-supervised pretraining file (no cls_pt_layers.*); the thesis's teacher "
                           "is beitv2_base_patch16_224_pt1k.pth, not a fine-tuned pt1k_ft* file")
        return row
    known = KNOWN_SHA256.get(name)
    row.release = "GPT-2 (SHA-256 as published)" if known == row.sha256 else "not OpenAI's GPT-2 file" if known else ""
    if require and name in require and require[name] != row.sha256:
        row.problem = f"SHA-256 {row.sha256[:12]}… is not the published {require[name][:12]}…"
    return row


def check_folder(folder: Path, overrides: dict | None = None, use_lock: bool = True,
                 checked: dict[str, FileCheck] | None = None, add_to_lock: bool = False) -> list[FileCheck]:
    """Every thesis file in ``folder``: present, hashed, described, compared with ``checkpoints.lock.json`` when it
    exists (``use_lock``; a file it has no entry for is a problem, or with ``add_to_lock`` a row marked
    ``unlocked``), and loaded by the thesis preset's loaders (``overrides``: config fields, e.g. a shrunk model for
    tiny test files). ``checked``: files ``check_file`` has just checked (not hashed again)."""
    from ..data.tokenizer import load_tokenizer
    from .sources import load_encoders, load_teacher
    cfg = get_config("thesis", overrides={**(overrides or {}), "weights.checkpoint_dir": str(folder)})
    rows = [(checked or {}).get(name) or check_file(name, folder / name)
            for name in (*THESIS_FILES.values(), *TOKENIZER_FILES)]
    locked = read_lock(folder) if use_lock else None
    if locked is not None:
        compare(rows, locked, add=add_to_lock)
    if not any(r.problem for r in rows):
        for what, load in (("encoders", lambda: load_encoders(cfg)), ("teacher", lambda: load_teacher(cfg)),
                           ("tokenizer", lambda: load_tokenizer(cfg, folder))):
            try:
                load()
            except ThesisError as err:
                rows.append(FileCheck(f"(thesis loader: {what})", problem=str(err)))
    return rows


def table(rows: list[FileCheck]) -> str:
    lines = ["| file | size | SHA-256 | what it is | problem |", "|---|---:|---|---|---|"]
    for r in rows:
        size = f"{r.size / 2 ** 20:,.1f} MiB" if r.size is not None else ""
        lines.append(f"| {r.name} | {size} | {r.sha256} | {r.release} | {r.problem} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m thesis_lib.models.check", description=__doc__.split("\n\n")[0])
    p.add_argument("folder", type=Path, help="the folder passed as --checkpoints / checkpoints")
    p.add_argument("--no-lock", action="store_true", help=f"neither compare with nor write {LOCK}")
    p.add_argument("--add-to-lock", action="store_true",
                   help=f"record in {LOCK} the files it has no entry for (else each is a problem), once every check "
                        "passes")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="a config field of the thesis preset the loaders are checked with (as in training.run)")
    args = p.parse_args(argv)
    if args.no_lock and args.add_to_lock:
        p.error("--add-to-lock writes the lock file, --no-lock neither reads nor writes it: give one of them")
    try:
        had_lock = not args.no_lock and read_lock(args.folder) is not None
        rows = check_folder(args.folder, parse_sets(args.set), not args.no_lock, add_to_lock=args.add_to_lock)
    except ThesisError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(table(rows))
    bad = [r for r in rows if r.problem]
    print(f"\n{len(bad)} problem(s)" if bad else "\nall files present, and the thesis preset's loaders accept them")
    added = [r for r in rows if r.unlocked]
    if not bad and added:
        path = add_to_lock(args.folder, added)
        for r in added:
            print(f"added {r.name} to {path} (--add-to-lock): {r.size:,} bytes, SHA-256 {r.sha256}")
        print(f"every other file's size and SHA-256 as recorded in {path}")
    elif not bad and had_lock:
        print(f"every file's size and SHA-256 as recorded in {lock_path(args.folder)}")
    elif not bad and not args.no_lock:
        print(f"wrote {write_lock(args.folder, rows)}: each file's size and SHA-256; later checks compare with it")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
