"""thesis_lib.full_scale.guide: the figures docs/full_scale.md and BENCHMARKS.md quote from the recipe's computation
(the run table, the days, the per-run GPU-hours, the checkpoints' and the shards' sizes) are its rendering, compared
as generated text with the code that computes them; a stale, unknown or misplaced marker is found and rewritten."""
import shutil

import pytest

from thesis_lib.full_scale import cost, guide, recipe
from thesis_lib.paths import ROOT


def test_the_pages_are_the_rendering_of_what_the_recipe_computes():
    assert guide.check() == []
    quoted = {key for doc in guide.PAGES for key, _ in guide.SPAN.findall((ROOT / doc).read_text(encoding="utf-8"))}
    assert quoted == set(guide.FIGURES), "a computed figure no page quotes, or a page quoting none"


def test_the_figures_are_the_costs_and_the_blocks_the_commands_output():
    figures = {key: make() for key, make in guide.FIGURES.items()}
    assert figures["run_table"] == recipe.table()
    assert figures["days_table"] == f"```\n{recipe.days_table()}\n```"
    thesis_h, _ = cost.run_hours()
    assert float(figures["thesis_run.gpu_hours"]) == pytest.approx(thesis_h, abs=0.05)
    assert float(figures["checkpoint.gb_baseline"]) == pytest.approx(cost.checkpoint_gb("baseline"), abs=0.005)
    largest = max(cost.checkpoint_gb(job["variant"]) for _, job in recipe.planned_jobs())
    assert float(figures["checkpoint.gb_largest"]) == pytest.approx(largest, abs=0.005)
    assert float(figures["checkpoint.gb_largest"]) > float(figures["checkpoint.gb_baseline"])


@pytest.fixture
def copy_root(tmp_path):
    for doc in guide.PAGES:
        (tmp_path / doc).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / doc, tmp_path / doc)
    return tmp_path


def test_a_stale_figure_or_table_is_listed_then_rewritten(copy_root):
    page = copy_root / "docs" / "full_scale.md"
    text = page.read_text(encoding="utf-8")
    gb = guide.FIGURES["checkpoint.gb_baseline"]()
    stale = text.replace(f"<!-- c:checkpoint.gb_baseline -->{gb}<!-- /c -->",
                         "<!-- c:checkpoint.gb_baseline -->9.99<!-- /c -->", 1)
    stale = stale.replace("| **all, at most** |", "| **all, at the very most** |")
    page.write_text(stale, encoding="utf-8")
    problems = guide.check(copy_root)
    assert [p.split(": ")[1] for p in problems] == ["run_table", "checkpoint.gb_baseline"], problems
    assert "'9.99'" in problems[1] and f"'{gb}'" in problems[1]
    assert guide.write(copy_root) == ["docs/full_scale.md"]
    assert page.read_text(encoding="utf-8") == text and guide.check(copy_root) == []


def test_an_unknown_key_stops_the_rewrite_and_a_marker_beginning_a_line_is_listed(copy_root):
    page = copy_root / "BENCHMARKS.md"
    text = page.read_text(encoding="utf-8")
    page.write_text(text + "\nthe shards take\n<!-- c:shards_gb -->260<!-- /c --> GB, "
                    "and <!-- c:no_such -->1<!-- /c --> more\n", encoding="utf-8")
    problems = guide.check(copy_root)
    assert len(problems) == 2
    assert "shards_gb: a marker begins the line" in problems[0] and "no_such: no such computed figure" in problems[1]
    with pytest.raises(SystemExit, match="no_such"):
        guide.write(copy_root)
    assert page.read_text(encoding="utf-8").endswith("more\n")                             # nothing written


def test_the_command_checks_and_exits_1_on_a_stale_page(copy_root, monkeypatch, capsys):
    monkeypatch.setattr(guide, "ROOT", copy_root)
    assert guide.main(["--check"]) == 0
    page = copy_root / "BENCHMARKS.md"
    page.write_text(page.read_text(encoding="utf-8").replace("| 1 | 1gpu |", "| 1 | one gpu |"), encoding="utf-8")
    assert guide.main(["--check"]) == 1
    assert "BENCHMARKS.md" in capsys.readouterr().out
