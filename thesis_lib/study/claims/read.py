"""What the pages read (stage 4 imports this module of the claims stage and no other): the claims table as
results/claims.csv holds it, and the claims stage's other data (the tables and sentence values of docs/results.md's
sections), each computed from the result files. The pages format what they are given; they compute nothing.
"""
from __future__ import annotations

import pandas as pd

from ..runs import SEEDS, study_params  # noqa: F401 (the parameters a page's command line reads)
from . import sections, table, table2


def claims(params) -> pd.DataFrame:
    """The claims table of ``params``'s results as results/claims.csv would hold it (what every page reads)."""
    return table.read(table.csv_text(table.claims_table(params)))


def table2_sections(params) -> dict:
    """docs/results.md's sections on Table 2's designs, as data (``table2.facts``)."""
    return table2.facts(params)


def table2_summary(params) -> dict:
    """The values of the README's sentence on Table 2's designs (``table2.summary_facts``)."""
    return table2.summary_facts(params)


def overfit(params, design=None) -> list[dict]:
    """The held-out curve's end against its best, per variant (``table2.overfit``; the long record's by default)."""
    return table2.overfit(params) if design is None else table2.overfit(params, design)


def write_claims(params) -> pd.DataFrame:
    """Compute the claims table from the result files, write results/claims.csv, and return it as written."""
    return table.write(params)


def opening(params) -> dict:
    """The values of docs/results.md's opening (``sections.summary``), which the README's block shows while a claim's
    runs are missing."""
    return sections.summary(sections.Verdicts(params))


def page(params) -> dict:
    """docs/results.md's data (``sections.page``): its opening ``v``, tables ``t``, sentences' values ``s``."""
    return sections.page(params)


def scale(preset: str) -> dict:
    """The scale of every answer (``sections.scale``)."""
    return sections.scale(preset)


def shipped_text(preset: str = "demo") -> str:
    """results/shipped.csv's text (``sections.shipped_text``)."""
    return sections.shipped_text(preset)


def tolerances(preset: str = "demo") -> dict:
    """``make verify``'s tolerances on the committed results (``sections.tolerances``)."""
    return sections.tolerances(preset)


SHIPPED_STORE = sections.SHIPPED_STORE
