"""The README's first screen and the notebooks' conclusions: the claims table (``claims.table``, results/claims.csv)
rendered through templates that people write (``templates/readme_answer.j2``, ``templates/conclusion_03.j2``).
This module picks the rows a page shows and formats numbers; every sentence lives in a template, and no judgement is
made here: the verdict, the status and whether a regime could test a claim are the table's columns.
"""
from __future__ import annotations

import functools
import math
from pathlib import Path

import jinja2
import pandas as pd

TEMPLATES = Path(__file__).parent / "templates"
FIRST_SCREEN = ("before", "layernorm", "helps", "used")   # the topics of the first screen's table, in its order


def nearest(table: pd.DataFrame, topic: str) -> pd.Series | None:
    """The topic's row on the primary metric in the regime nearest the thesis's (the table's order) that could test
    it and holds a verdict; a pending row where every such regime is pending; None where none has the topic."""
    rows = table[table.topic.eq(topic) & table.primary]
    for wanted in (rows.can_test.eq(True) & rows.status.ne("pending"), rows.status.eq("pending")):
        if wanted.any():
            return _plain(rows[wanted].iloc[0])
    return None


def _digits(row) -> int:
    """Enough decimals to show the interval: three where it is under 0.1 points (two without one: a single seed)."""
    return 3 if _known(row.half95) and row.half95 < 0.1 else 2


def _known(x) -> bool:
    return x is not None and not (isinstance(x, float) and math.isnan(x))


def _num(x: float) -> str:
    return "0" if abs(x) < 0.005 else f"{x:.2g}".replace("-", "−")


def signed(x, digits: int = 2) -> str:
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:+.{digits}f}".replace("-", "−")


def difference(row) -> str:
    """'−0.04 ± 0.07' in the row's digits (three below an interval of 0.1); no interval from a single seed."""
    d = _digits(row)
    return f"{signed(row.difference, d)} ± {row.half95:.{d}f}" if _known(row.half95) else signed(row.difference, d)


def times(row) -> str:
    """Our effect over the thesis's, '0.8 × (−0.6 … 2.3)'; '–' where the thesis gives no effect."""
    if not _known(row.ratio) or not _known(row.ratio_low):
        return "–"
    return f"{_num(row.ratio)} × ({_num(row.ratio_low)} … {_num(row.ratio_high)})"


def complete(table: pd.DataFrame) -> bool:
    """Whether the table holds a verdict (a row not pending) of every topic the first screen shows."""
    return len(table) > 0 and all((row := nearest(table, t)) is not None and row.status != "pending"
                                  for t in FIRST_SCREEN)


@functools.cache
def environment() -> jinja2.Environment:
    """The templates' environment: undefined values raise; filters format numbers (``fmt``: a format spec, ``pct``:
    a fraction as percent with so many decimals, ``count``: thousands separated)."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=False)
    env.filters.update(signed=signed, difference=difference, times=times, count=lambda n: f"{int(n):,}",
                       fmt=format, pct=lambda x, d=2: f"{x * 100:.{d}f}",
                       capitalize_first=lambda s: s[:1].upper() + s[1:])
    return env


def say(template: str, macro: str, *args, **values) -> str:
    """Macro ``macro`` of ``template`` (a file of ``TEMPLATES``) with its values, as one line (its lines joined)."""
    return " ".join(str(getattr(environment().get_template(template).module, macro)(*args, **values)).split())


def _plain(row: pd.Series) -> pd.Series:
    return pd.Series({k: None if pd.isna(v) else v for k, v in row.items()})


def render(table: pd.DataFrame, scale_facts: dict, template: str = "readme_answer.j2") -> str:
    rows = {t: nearest(table, t) for t in FIRST_SCREEN}
    return environment().get_template(template).render(rows=rows, scale=scale_facts, table=table).strip()


def results_beside(table: pd.DataFrame) -> str:
    """docs/results.md's "The thesis beside us": every primary row of the chapter's claims (and the 2 × 2's other
    factor), by topic, nearest regime first, with the lists of where this scale disagrees, is undecided or cannot
    test (the table's ``reading``)."""
    rows = table[table.primary & table.topic.isin(("before", "code", "layernorm", "helps", "used"))]
    return environment().get_template("results_beside.j2").render(
        rows=[_plain(r) for _, r in rows.iterrows()]).strip()


def conclusion(table: pd.DataFrame, family: str, regime: str, template: str = "conclusion_03.j2") -> str:
    """A notebook's conclusion: its family's primary rows of the claims table (the study's own runs) through its
    template; a line saying so where none has runs yet."""
    rows = table[table.family.eq(family) & table.design.eq("study") & table.primary]
    if rows.empty:
        return f"No claim of {family} has runs of both arms yet."
    return environment().get_template(template).render(rows=[_plain(r) for _, r in rows.iterrows()],
                                                        regime=regime).strip()


def markdown(table: pd.DataFrame, scale_facts: dict) -> str:
    return render(table, scale_facts)


def table_markdown(df: pd.DataFrame) -> str:
    """A table as GitHub markdown, its index the first column (docs/results.md, the README's block)."""
    cols = list(df.columns)
    head = "| " + " | ".join([df.index.name or ""] + cols) + " |"
    sep = "|" + "---|" * (len(cols) + 1)
    def cell(v):
        return str(v).replace("|", "\\|")
    rows = ["| " + " | ".join([cell(i)] + [cell(v) for v in r]) + " |"
            for i, r in zip(df.index, df.itertuples(index=False))]
    return "\n".join([head, sep, *rows])
