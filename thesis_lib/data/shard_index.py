"""Index the webdataset shards of a training mixture once, in one process, before a multi-process launch::

    python -m thesis_lib.data.shard_index "coco,wds:$DATA/cc3m/shards.txt@1516133,wds:$DATA/cc12m/shards.txt@1181988"

The argument is the value of ``--set data.train_sets=...``; entries other than ``wds:`` are skipped. Each shard set
is read as training reads it (``data/shards.py``: the same shards, stopping at ``@N``) and its index cached under
``THESIS_DATA/shard-index/`` (``thesis_lib.paths.data_dir()``: ``$THESIS_DATA``, else ``data/`` in the repository):
run it with the ``THESIS_DATA`` the training processes get, on a file system they all see, and every rank reads the
cache instead of indexing the shards itself. Prints, for each set, the shards read, missing and cut short, the
pairs, the broken samples of each kind and the time taken; exits 1 if a set fails (its error is printed), 0
otherwise.
"""
from __future__ import annotations

import argparse
import sys
import time

from ..errors import DataError
from ..paths import data_dir
from .shards import BROKEN, ShardReport, load_shards


def wds_sets(train_sets: str) -> list[str]:
    """The ``wds:`` entries of a comma-separated ``data.train_sets`` value, in order."""
    return [name.strip() for name in train_sets.split(",") if name.strip().startswith("wds:")]


def summary(name: str, report: ShardReport, seconds: float) -> str:
    """One line on what a shard set held (what ``train.shards`` of a run's result records)."""
    missing = (f" ({', '.join(report.missing_shard_names[:3])}{', …' if report.missing_shards > 3 else ''})"
               if report.missing_shards else "")
    if report.cut_shards:
        missing += (f", {report.cut_shards:,} cut short ({', '.join(report.cut_shard_names[:3])}"
                    f"{', …' if report.cut_shards > 3 else ''}; no end-of-archive blocks: samples lost)")
    asked = f" of {report.requested:,} requested" if report.requested is not None else ""
    broken = ", ".join(f"{getattr(report, kind):,} {kind}" for kind in BROKEN)
    return (f"{name}: {report.shards:,} shards read, {report.missing_shards:,} missing{missing}; {report.pairs:,} "
            f"pairs{asked} from {report.samples:,} samples; broken: {broken}; {seconds:.1f} s")


def index_sets(train_sets: str) -> int:
    """Index every ``wds:`` set of a mixture; the exit status (1 if a set failed)."""
    sets, failed = wds_sets(train_sets), 0
    if not sets:
        print(f"no wds: set in {train_sets!r}: nothing to index", file=sys.stderr)
        return 0
    print(f"shard index cache: {data_dir() / 'shard-index'}", file=sys.stderr)
    for name in sets:
        start = time.perf_counter()
        print(f"{name}: indexing …", file=sys.stderr)
        try:
            _, report = load_shards(name[4:], progress=_progress(name))
        except (DataError, OSError) as err:
            failed += 1
            print(f"{name}: FAILED after {time.perf_counter() - start:.1f} s: {err}", flush=True)
            continue
        print(summary(name, report, time.perf_counter() - start), flush=True)
    if failed:
        print(f"{failed} of {len(sets)} shard sets failed", file=sys.stderr)
    return 1 if failed else 0


def _progress(name: str, every: float = 30.0):
    """A progress line to stderr at most every ``every`` seconds."""
    last = [time.perf_counter()]

    def report(read: int, listed: int, pairs: int) -> None:
        if time.perf_counter() - last[0] >= every:
            last[0] = time.perf_counter()
            print(f"{name}: {read:,} of {listed:,} shards read, {pairs:,} pairs", file=sys.stderr, flush=True)
    return report


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m thesis_lib.data.shard_index",
                                description="Index the webdataset shards of a training mixture once, in one process, "
                                            "before a multi-process launch (cached under THESIS_DATA/shard-index/).")
    p.add_argument("train_sets", help="the data.train_sets value, e.g. 'coco,wds:/data/cc3m/shards.txt@1516133'")
    return index_sets(p.parse_args(argv).train_sets)


if __name__ == "__main__":
    sys.exit(main())
