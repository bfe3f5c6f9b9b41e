"""What Table 2's two designs show, formatted from the claims stage's data (``claims/table2.py``, read through
``claims.read``): docs/results.md renders ``markdown`` (``templates/table2.j2``); the README's block, ``sentence``.
"""
from __future__ import annotations

import pandas as pd

from thesis_lib.metrics import PRIMARY, label
from ..claims import read
from . import front, sentences


def overfit_sentence(params, design=None) -> str:
    """Whether the held-out score falls late in the long schedule (``read.overfit``); empty without curves."""
    return _overfit(read.overfit(params) if design is None else read.overfit(params, design))


def _overfit(parts: list) -> str:
    return sentences.say("overfit", label(PRIMARY), parts) if parts else ""


def _text(key, value):
    """The sections' data as ``table2.j2`` reads it: frames as Markdown, sentences from their values."""
    if key == "overfit":
        return _overfit(value)
    if key == "pilot":
        return sentences.say("pilot", *value) if value else ""
    if key == "machines":
        return sentences.say("machines", value)
    if isinstance(value, pd.DataFrame):
        return front.table_markdown(value)
    return {k: _text(k, v) for k, v in value.items()} if isinstance(value, dict) else value


def markdown(params) -> str:
    """docs/results.md's sections on Table 2's designs and the long 2 × 2 (empty before any of their runs exist)."""
    return front.environment().get_template("table2.j2").render(**_text(None, read.table2_sections(params))).strip()


def sentence(params) -> str:
    """One sentence on what the two designs let the repository say about Table 2, and what they do not."""
    facts = read.table2_summary(params)
    return sentences.say("table2_summary", **facts) if facts["budget"] or facts["long"] else ""
