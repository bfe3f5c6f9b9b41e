"""The sentences under the pages' tables, rendered from ``templates/sentences.j2`` (one macro a sentence, written by
people): the functions here gather each sentence's values from the claims' and results' tables; none writes a word
of it."""
from __future__ import annotations

import pandas as pd

from thesis_lib.metrics import COCO_MEAN, FLICKR_MEAN, IMAGENET_TOP1, label
from ..claims import verdicts
from . import front


def say(macro: str, *args, **values) -> str:
    """Macro ``macro`` of ``templates/sentences.j2`` with ``values``, as one paragraph (its lines joined)."""
    return front.say("sentences.j2", macro, *args, **values)


def sensitivity_note(table: pd.DataFrame) -> str:
    """How many primary verdicts change under some other margin convention (``verdicts.sensitivity``'s table)."""
    return say("sensitivity", **verdicts.sensitivity_changed(table)) if len(table) else ""


def thesis_noise_note(table: pd.DataFrame) -> str:
    """What one run per variant could show (``verdicts.thesis_noise``'s table)."""
    return say("thesis_noise", verdicts.thesis_noise_counts(table)) if len(table) else ""


def procedure_note(p: dict) -> str:
    """The sequential claim's procedure as run (``verdicts.procedure_rows``)."""
    return say("procedure", p, verdicts.WORST_RATIOS) if p else ""


def gamma_travel_note(df: pd.DataFrame) -> str:
    """How far γ travelled against how far AdamW could move it (``verdicts.gamma_travel``)."""
    rows = verdicts.gamma_travel(df)
    return say("gamma_travel", rows, rows[-1]["eps"]) if rows else ""


def tolerance_sentence(tolerance: dict[str, float]) -> str:
    """The tolerances docs/reproducibility.md quotes (``verify.tolerances``; written there by ``make figures``)."""
    smallest = min(tolerance, key=tolerance.get)
    return say("tolerances", tolerance[COCO_MEAN], tolerance[FLICKR_MEAN], tolerance[IMAGENET_TOP1],
               tolerance[smallest], label(smallest))


def conclusions(df: pd.DataFrame, family: str) -> list[str]:
    """One line per claim of ``family`` (``verdicts.conclusion_rows``): claim, verdict, difference, seeds."""
    return [say("conclusion", r) for r in verdicts.conclusion_rows(df, family)]
