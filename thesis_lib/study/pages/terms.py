"""The terms the README's first screen and the figures' labels use, declared once: each must have an entry in
docs/glossary.md (tests/test_terms.py checks it against the generated first screen and the drawn figures' text).
A term is matched as written, case-sensitive, on word boundaries where it begins or ends with a letter."""
from __future__ import annotations

import re

TERMS = (
    # the model and the chapter's question
    "EMKUM", "TTE", "TTE'", "LayerScale", "γ", "KD", "ITC", "shared block", "input LayerNorm",
    # how long and how hard it trains
    "summed learning rate", "learning-rate budget", "budget", "dose", "long schedule", "600 steps",
    "share of the shared block's input",
    # how a claim is decided
    "paired", "seed", "fresh seeds", "margin", "smallest effect of interest", "carried to this scale", "2 × 2",
    "main effect", "Holm", "TOST", "95 % interval", "90 % interval",
    # the verdict words (stats.WORDS) and the ratio a reproduced effect carries
    "equivalent", "trivial", "undecided", "reproduced", "in direction", "contradicted", "confirmed", "refuted",
    "better", "worse", "descriptive", "pending",
)


def used(text: str, terms=TERMS) -> list[str]:
    """The terms of ``terms`` that ``text`` uses."""
    def pattern(term: str) -> str:
        left = r"(?<![\w'])" if term[0].isalnum() else ""
        right = r"(?![\w'])" if term[-1].isalnum() or term[-1] == "'" else ""
        return left + re.escape(term) + right
    return [t for t in terms if re.search(pattern(t), text)]


def glossary_entries(markdown: str) -> set[str]:
    """The terms docs/glossary.md defines: each entry's bold head (``* **term** — …``), split on " / " and ", "."""
    heads = re.findall(r"^\* \*\*(.+?)\*\*", markdown, re.M)
    return {part.strip() for head in heads for part in re.split(r" / |, ", head)}
