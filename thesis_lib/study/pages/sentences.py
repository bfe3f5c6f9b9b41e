"""The sentences under the pages' tables, rendered from ``templates/sentences.j2`` (one macro a sentence, written by
people) with the values the claims stage computed; none of these functions writes a word of it."""
from __future__ import annotations

from thesis_lib.metrics import COCO_MEAN, FLICKR_MEAN, IMAGENET_TOP1, label
from . import front


def say(macro: str, *args, **values) -> str:
    """Macro ``macro`` of ``templates/sentences.j2`` with ``values``, as one paragraph (its lines joined)."""
    return front.say("sentences.j2", macro, *args, **values)


def sensitivity_note(changed: dict | None) -> str:
    """How many primary verdicts change under some other margin convention (``verdicts.sensitivity_changed``)."""
    return say("sensitivity", **changed) if changed else ""


def thesis_noise_note(counts: dict | None) -> str:
    """What one run per variant could show (``verdicts.thesis_noise_counts``)."""
    return say("thesis_noise", counts) if counts else ""


def tolerance_sentence(tolerance: dict[str, float]) -> str:
    """The tolerances docs/reproducibility.md quotes (``verify.tolerances``; written there by ``make figures``)."""
    smallest = min(tolerance, key=tolerance.get)
    return say("tolerances", tolerance[COCO_MEAN], tolerance[FLICKR_MEAN], tolerance[IMAGENET_TOP1],
               tolerance[smallest], label(smallest))


def conclusions(rows: list[dict]) -> list[str]:
    """One line per claim (``verdicts.conclusion_rows``): claim, verdict, difference, seeds."""
    return [say("conclusion", r) for r in rows]
