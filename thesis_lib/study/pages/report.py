"""The README's results block, written from the stored results (never by hand):

    python -m thesis_lib.study.pages.report [--preset demo] [--update-readme]

prints the README's block (the claims table through the first screen's template, ``front``); ``--update-readme``
writes results/claims.csv (the committed results), replaces the block between the ``<!-- results:start -->`` and
``<!-- results:end -->`` markers of README.md and writes docs/results.md, every table the claims rest on. Every value
comes from the claims stage (``claims.read``); this module formats it.
"""
from __future__ import annotations

import argparse
import re
import sys

import pandas as pd

from thesis_lib.cache import write_text_atomic
from thesis_lib.config import PRESET_SPECS
from thesis_lib.errors import ThesisError
from thesis_lib.paths import ROOT
from ..claims import read
from . import front, sentences, table2

START, END = "<!-- results:start -->", "<!-- results:end -->"
RESULTS_PAGE = ROOT / "docs" / "results.md"
REPRODUCIBILITY_PAGE = ROOT / "docs" / "reproducibility.md"
TOLERANCES = ("<!-- tolerances:start -->", "<!-- tolerances:end -->")   # its generated sentence (verify.py)
SHIPPED_TABLE = ROOT / "results" / "shipped.csv"
scale, shipped_text = read.scale, read.shipped_text


def results_markdown(params, table: pd.DataFrame | None = None) -> str:
    """The README's block: the claims table (as written) through the first screen's template (``front``); every
    line and table behind it is ``results_page``'s (docs/results.md); while a claim's runs are missing, the table of
    what exists and what is missing (``results_page.j2``'s summary)."""
    table = read.claims(params) if table is None else table
    if front.complete(table):
        return front.markdown(table, read.scale(params.preset))
    return _page(summary_only=True, v=_opening(params, read.opening(params))).strip()


def _page(**context) -> str:
    """``templates/results_page.j2`` with ``context``, each prose paragraph joined onto one line (as Markdown reads
    it; tables, lists and headings keep their lines)."""
    text = front.environment().get_template("results_page.j2").render(**context)
    blocks = [b if any(line.startswith(("|", "- ", "#")) for line in b.splitlines()) else " ".join(b.split())
              for b in re.split(r"\n\s*\n", text.strip())]
    return "\n\n".join(b for b in blocks if b.strip()) + "\n"


def _md(value):
    """A table of the claims stage as Markdown ("" or None, a table without runs, as it is)."""
    return front.table_markdown(value) if isinstance(value, pd.DataFrame) else value


def _opening(params, v: dict) -> dict:
    """The opening's values (``read.opening``) with its table and sentences formatted."""
    if v["empty"]:
        return v
    v = v | {"table": _md(v["table"])}
    if v["missing"]:
        return v
    return v | {"table2": table2.sentence(params), "alike": alike_note(v["alike"]),
                "lines": sentences.conclusions(v["lines"]), "noise": sentences.thesis_noise_note(v["noise"]),
                "sensitivity": sentences.sensitivity_note(v["sensitivity"])}


def alike_note(notes: list) -> str:
    """Beside the results table: the rows that look like a copied baseline row (``sections.alike``)."""
    return sentences.say("alike", notes) if notes else ""


def results_page(params, table: pd.DataFrame | None = None) -> str:
    """docs/results.md, generated whole (``templates/results_page.j2``): every table the claims rest on; it opens
    with the claims table (``table``, as written; computed from ``params``'s results when None) through its
    template."""
    table = read.claims(params) if table is None else table
    data = read.page(params)
    v = _opening(params, data["v"])
    if v["empty"]:
        return _page(summary_only=False, v=v)
    s, travel = data["s"], data["s"]["travel"]
    said = {"procedure": sentences.say("procedure", s["procedure"], s["worst_ratios"]) if s["procedure"] else "",
            "budget": sentences.say("budget", s["budget"]) if s["budget"] else "",
            "travel": sentences.say("gamma_travel", travel, travel[-1]["eps"]) if travel else ""}
    return _page(summary_only=False, v=v, t={k: _md(x) for k, x in data["t"].items()}, s=said, seq=data["seq"],
                 beside=front.results_beside(table), table2=table2.markdown(params))


def update_readme(text: str, path=ROOT / "README.md", marks=(START, END), joint: str = "\n") -> None:
    """Replace the block between ``marks`` in ``path`` (the README's results block; any generated block)."""
    readme, (start, end) = path.read_text(), marks
    if start not in readme or end not in readme:
        raise SystemExit(f"{path} has no {start} ... {end} block")
    write_text_atomic(path, re.sub(re.escape(start) + ".*?" + re.escape(end), lambda _: f"{start}{joint}{text}"
                                   f"{joint}{end}", readme, flags=re.S))


def tolerances_text(preset: str = "demo") -> str:
    """``make verify``'s tolerances on the committed results, as docs/reproducibility.md quotes them."""
    return sentences.tolerance_sentence(read.tolerances(preset))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m thesis_lib.study.pages.report", description=__doc__.split("\n\n")[0])
    p.add_argument("--preset", default="demo")
    p.add_argument("--seeds", default=None, help=f"default: {list(read.SEEDS)}")
    p.add_argument("--output-dir", default=None, help="read OUTPUT_DIR/results instead of the repository's results/")
    p.add_argument("--update-readme", action="store_true", help="also rewrite the README's block and docs/results.md")
    args = p.parse_args(argv)
    try:
        params = read.study_params(args.preset, args.seeds, "cpu", args.output_dir, need_data=False)
        committed = PRESET_SPECS[args.preset].committed and args.output_dir is None
        table = read.write_claims(params) if args.update_readme and committed else read.claims(params)
        if args.update_readme and committed and read.SHIPPED_STORE.exists():
            write_text_atomic(SHIPPED_TABLE, shipped_text(args.preset))
        text, page = results_markdown(params, table), results_page(params, table) if args.update_readme else ""
    except ThesisError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if args.update_readme:
        update_readme(text)
        write_text_atomic(RESULTS_PAGE, page)
        if committed:                                                         # the committed results' tolerances
            update_readme(tolerances_text(), REPRODUCIBILITY_PAGE, TOLERANCES, joint="")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
