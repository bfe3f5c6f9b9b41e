"""Download the thesis's checkpoints and tokenizer files into one folder, check each as it lands, then check the
folder as a run would and write its lock file.

    python -m thesis_lib.models.download CKPT      # then: python -m thesis_lib.models.check CKPT (seconds)

Files already in CKPT are not downloaded again. Each file that lands is checked with ``models.check``
(``check_file``: which release a model file is, the published SHA-256 of OpenAI's GPT-2 BPE files); a wrong file
stops the download with the reason, and is moved aside to ``<name>.refused`` (kept for a look, never under the name a
run loads; the next run fetches it again). When every file is there, the full ``check_folder`` runs (a file the
thesis preset's loaders refuse, fetched now, is moved aside likewise) and ``CKPT/checkpoints.lock.json`` is written
(``models/lock.py``), with the URL each file came from. ``THESIS_MIRROR`` reads every file from a mirror folder
instead (``thesis_lib/fetch.py``).

Where the files come from (``URLS``, the one place they are declared; each file's links are tried in order):

* data2vec 2.0 (fairseq ``examples/data2vec``): ``base_imagenet.pt``, ``nlp_base.pt`` and the tokenizer files
  ``encoder.json``, ``vocab.bpe``, ``dict.txt`` under https://dl.fbaipublicfiles.com/fairseq/data2vec2/.
* BEiT v2 ``beitv2_base_patch16_224_pt1k.pth`` (microsoft/unilm ``beit2``). First the link of the current
  ``beit2/README.md`` (unilm commit 768a3c8; the link came with edf2b0a, 2024-04, "fix beit-2"), a GitHub release
  asset; when it fails, the read-signed Azure blob link of the same README at commits 99a26f3 / b50baec (signature
  valid to 2033-06-09): the same file name from the same authors. The unsigned blob URL (without the query string)
  answers 409 PublicAccessNotPermitted since 2023. timm's ``beitv2_base_patch16_224.*`` hub weights are NOT a
  fallback: they are fine-tuned on ImageNet, a different teacher than the self-supervised ``pt1k`` file.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from ..errors import CheckpointError, DownloadError, ThesisError
from ..fetch import fetch, say
from .check import KNOWN_SHA256, TOKENIZER_FILES, check_file, check_folder, table
from .lock import lock_path, read_lock, write_lock
from .sources import THESIS_FILES

DATA2VEC2 = "https://dl.fbaipublicfiles.com/fairseq/data2vec2/"
BEIT_V2 = "https://github.com/addf400/files/releases/download/BEiT-v2/beitv2_base_patch16_224_pt1k.pth"
BEIT_V2_SIGNED = ("https://conversationhub.blob.core.windows.net/beit-share-public/beitv2/"
                  "beitv2_base_patch16_224_pt1k.pth?sv=2021-10-04&st=2023-06-08T11%3A16%3A02Z"
                  "&se=2033-06-09T11%3A16%3A00Z&sr=c&sp=r&sig=N4pfCVmSeq4L4tS8QbrFVsX6f6q844eft8xSuXdxU48%3D")
URLS: dict[str, tuple[str, ...]] = {   # file name in CKPT -> its links, tried in order
    THESIS_FILES["image"]: (DATA2VEC2 + "base_imagenet.pt",),
    THESIS_FILES["text"]: (DATA2VEC2 + "nlp_base.pt",),
    THESIS_FILES["teacher"]: (BEIT_V2, BEIT_V2_SIGNED),
    **{name: (DATA2VEC2 + name,) for name in TOKENIZER_FILES},
}


def fetch_first(links: tuple[str, ...], dest: Path) -> tuple[str, str]:
    """Fetch ``dest`` from the first of ``links`` that answers; returns that link and the file's SHA-256."""
    failures = []
    for url in links:
        try:
            return url, fetch(url, dest)[1]
        except DownloadError as err:
            failures.append(str(err))
            if url != links[-1]:
                say(f"{dest.name}: {err}; trying the next link")
    raise DownloadError(f"{dest.name}: no link answered: " + " | ".join(failures))


LOADED_BY = {"(thesis loader: encoders)": (THESIS_FILES["image"], THESIS_FILES["text"]),   # check_folder's rows
             "(thesis loader: teacher)": (THESIS_FILES["teacher"],), "(thesis loader: tokenizer)": TOKENIZER_FILES}


def refuse(path: Path) -> Path:
    """A file downloaded now that failed its check, moved beside it as ``<name>.refused``: kept for a look, never
    under the name a run loads; where it went."""
    aside = path.with_name(path.name + ".refused")
    os.replace(path, aside)
    return aside


def download_checkpoints(folder: Path, urls: dict = URLS, require: dict = KNOWN_SHA256,
                         overrides: dict | None = None) -> list:
    """Fetch every file of ``urls`` missing from ``folder``, check each as it lands (``require``: the SHA-256 a file
    must have), then ``check_folder`` (``overrides``: config fields of its loaders) and, when everything passes and
    the folder has no lock file yet, write it. Returns the check's rows; a wrong file raises ``CheckpointError``."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    came_from, checked = {}, {}
    for name, links in urls.items():
        path, sha = folder / name, None
        if path.exists():
            say(f"{name}: already in {folder}, not downloaded again")
        else:
            came_from[name], sha = fetch_first(links, path)
        row = checked[name] = check_file(name, path, require, sha)
        if row.problem:
            kept = f"refused: moved to {refuse(path)}" if name in came_from else "delete the file to fetch it again"
            raise CheckpointError(f"{path}: {row.problem} (came from {came_from.get(name, 'an earlier download')}; "
                                  f"{kept})")
        say(f"{name}: {row.size / 2 ** 20:,.1f} MiB, {row.release or 'present'}")
    had_lock = read_lock(folder) is not None
    rows = check_folder(folder, overrides, checked=checked)
    for row in (r for r in rows if r.problem):
        aside = [str(refuse(folder / n)) for n in LOADED_BY.get(row.name, (row.name,)) if n in came_from]
        row.problem += f" (refused, downloaded now: moved to {', '.join(aside)})" if aside else ""
    if not had_lock and not any(r.problem for r in rows):
        write_lock(folder, rows, came_from)
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m thesis_lib.models.download", description=__doc__.split("\n\n")[0])
    p.add_argument("folder", type=Path, help="the checkpoint folder (created; later passed as --checkpoints)")
    args = p.parse_args(argv)
    try:
        rows = download_checkpoints(args.folder)
    except ThesisError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(table(rows))
    bad = [r for r in rows if r.problem]
    if bad:
        print(f"\n{len(bad)} problem(s)")
        return 1
    print(f"\nall files present, and the thesis preset's loaders accept them; lock file: {lock_path(args.folder)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
