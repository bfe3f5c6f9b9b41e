"""Every figure the full-scale guide quotes from the recipe's own computation, rendered from it.

The run table, the days and the per-run figures (GPU-hours, the thesis's pace, a checkpoint's size, the shards' size)
that docs/full_scale.md and BENCHMARKS.md state are computed by ``full_scale.cost`` and ``full_scale.recipe``;
a document marks each where it quotes it, and ``python -m thesis_lib.full_scale.guide`` rewrites the marked text
from the computation (``make figures`` runs it after the measured figures, on which the days depend). ``--check``
changes nothing and exits 1 listing every marked figure that differs from its computation or names no figure.

Markers are HTML comments, as for the measured figures (``measured``) but ``c:`` (computed): in prose
``<!-- c:checkpoint.gb_baseline -->1.59<!-- /c -->``; a block (a table and the assumption below it) on lines of its
own, a blank line inside each marker, so that the table renders as a table (the days, as the command prints them,
in a fence: a comment inside a fence would show)::

    <!-- c:run_table -->

    | notebook | ... |

    <!-- /c -->
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

from thesis_lib.full_scale import cost, recipe
from thesis_lib.paths import ROOT
from thesis_lib.full_scale import measured

PAGES = ("docs/full_scale.md", "BENCHMARKS.md")
SPAN = re.compile(r"<!-- c:([\w.-]+) -->(.*?)<!-- /c -->", re.S)
BLOCKS = ("run_table", "days_table")


def _largest_checkpoint() -> tuple[float, str]:
    return max((cost.checkpoint_gb(job["variant"]), job["variant"]) for _, job in recipe.planned_jobs())


def _totals(most: bool = False) -> dict:
    """``cost.totals`` of the recipe's runs: without notebook 02's later looks, or with all of them (``most``)."""
    seeds = recipe.sequential.TABLE1_PRIMARY.looks[-1] if most else None
    return cost.totals([job["variant"] for _, job in recipe.planned_jobs(seeds)])


FIGURES = {   # key → the text the documents quote, computed when asked
    "run_table": recipe.table,
    "days_table": lambda: f"```\n{recipe.days_table()}\n```",    # as the command prints it
    "thesis_run.gpu_hours": lambda: f"{cost.run_hours()[0]:.1f}",
    "thesis_run.hours": lambda: f"{cost.THESIS_HOURS}",
    "thesis_run.gpus": lambda: f"{cost.THESIS_GPUS}",
    "thesis_run.pairs_per_s": lambda: f"{cost.THESIS_PAIRS_PER_S:.0f}",
    "h100_goal": lambda: f"{cost.H100_PAIRS_PER_S:,}",
    "checkpoint.bytes_per_parameter": lambda: f"{cost.BYTES_PER_PARAMETER}",
    "checkpoint.parameters_m": lambda: f"{cost.parameters('baseline') / 1e6:.1f}",
    "checkpoint.gb_baseline": lambda: f"{cost.checkpoint_gb('baseline'):.2f}",
    "checkpoint.gb_largest": lambda: f"{_largest_checkpoint()[0]:.2f}",
    "checkpoint.largest": lambda: f"`{_largest_checkpoint()[1]}`",
    "shards_gb": lambda: f"{cost.SHARDS_GB}",
    "runs": lambda: f"{len(recipe.planned_jobs())}",
    "checkpoint.writes": lambda: f"{cost.checkpoint_writes('baseline')[0]}",
    "checkpoint.writes_gb": lambda: f"{cost.checkpoint_writes('baseline')[1]:.0f}",
    "totals.disk_gb": lambda: f"{_totals()['disk_gb']:,.0f}",
    "totals.disk_gb_most": lambda: f"{_totals(most=True)['disk_gb']:,.0f}",
    "totals.archives_gb": lambda: f"{_totals()['archives_gb']:,.0f}",
    "totals.inodes": lambda: f"{_totals()['inodes'] / 1e3:,.0f}k",
    "totals.writes_tb": lambda: f"{_totals()['writes_tb']:,.1f}",
    "totals.writes_tb_most": lambda: f"{_totals(most=True)['writes_tb']:,.1f}",
}


def _line(text: str, at: int) -> int:
    return text.count("\n", 0, at) + 1


def render(text: str, doc: str = "") -> tuple[str, list[str]]:
    """``text`` with every marked figure rendered from its computation, and what was not current."""
    problems = []

    def span(m: re.Match) -> str:
        key, old = m.group(1), m.group(2)
        if key not in FIGURES:
            problems.append(f"{doc}:{_line(text, m.start())}: {key}: no such computed figure (full_scale/guide.py)")
            return m.group(0)
        lead = text[text.rfind("\n", 0, m.start()) + 1:m.start()]
        if key not in BLOCKS and not lead.strip(" \t-*+>0123456789.)"):
            problems.append(f"{doc}:{_line(text, m.start())}: {key}: a marker begins the line (it would show as raw "
                            f"HTML): move it past the line's first word")
        new = FIGURES[key]()
        if key in BLOCKS:
            new = f"\n\n{new}\n\n"
        if old == new or (key not in BLOCKS and old.split() == new.split()):       # a wrapped span is current
            return m.group(0)
        problems.append(f"{doc}:{_line(text, m.start())}: {key}: the document says {' '.join(old.split())[:60]!r}, "
                        f"the code computes {' '.join(new.split())[:60]!r}")
        return f"<!-- c:{key} -->{new}<!-- /c -->"

    return SPAN.sub(span, text), problems


def check(root: Path | None = None) -> list[str]:
    """What is not current in the pages under ``root`` (default: this repository)."""
    root = root or ROOT
    return [p for doc in PAGES for p in render((root / doc).read_text(encoding="utf-8"), doc)[1]]


def write(root: Path | None = None) -> list[str]:
    """Render the pages under ``root`` in place; the pages rewritten. A marker naming no figure stops it."""
    return measured.rewrite(root or ROOT, PAGES, render, "no such computed figure")


def main(argv: list[str] | None = None) -> int:
    return measured.command(argv, "python -m thesis_lib.full_scale.guide", __doc__.split("\n")[0], check, write,
                            f"every computed figure of {', '.join(PAGES)} is current", "the recipe's computation")


if __name__ == "__main__":
    sys.exit(main())
