"""The documents' figures against the code.

Every measured figure README.md, BENCHMARKS.md and docs/*.md quote (a time, a count of tests or runs, a date, a machine)
has one source, benchmarks/measured.json, which thesis_lib.full_scale.measured renders into the documents and
tests/test_measured.py holds them to; every figure the full-scale guide computes (the run table, the days, a run's
GPU-hours, the checkpoints' size) is thesis_lib.full_scale.guide's rendering of the recipe's code, held by
tests/test_guide.py; the README's results block and docs/results.md are generated from results/ and tests/test_study.py
holds them current; tests/test_layout.py holds that every file a document names exists. No test matches a document's
prose by pattern but the lints of its structure, each saying so (tests/test_layout.py, the glossary lint
tests/test_terms.py, the full-scale guide's step headings in tests/test_recipe.py). What stays here: the run counts of a
measurement that the code defines, so that a change of what a command trains fails here until the measurement is redone
(and its entry in the data file with it).
"""
from __future__ import annotations

import pytest

from thesis_lib.study import SEEDS, grids
from thesis_lib.full_scale import measured

WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10}


def count(text: str) -> int:
    """A count as the data file quotes it: 8, 97, seven."""
    return WORDS[text] if text in WORDS else int(text.replace(",", ""))


@pytest.fixture(scope="module")
def data() -> dict:
    return measured.load()


def test_make_demo_trains_table2s_variants_times_the_seeds(data):
    runs = len(grids.TABLE2_REGIMES["TTE budget"]) * len(SEEDS)          # make demo's regime (the Makefile)
    assert count(data["make_demo"]["runs"]) == runs
    for comparison in ("make_demo_vs_former",):
        assert count(data[comparison]["compared"]) == runs, comparison
        assert count(data[comparison]["equal"]) <= runs, comparison


def test_make_verify_retrains_one_run_of_each_verified_family(data):
    families = len(grids.VERIFIED)
    assert count(data["make_verify"]["runs"]) == families
    assert count(data["make_verify"]["replays"]) <= families
    assert count(data["verify_vendors"]["runs"]) == families
    assert count(data["verify_vendors"]["replays"]) + count(data["verify_vendors"]["failed_runs"]) == families
