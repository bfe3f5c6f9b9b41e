"""thesis_lib.study.claims.table (results/claims.csv) and the README's first screen rendered from it
(thesis_lib.study.pages.front): the committed table is what the result files give; its primary rows recompute from the
per-seed JSON files with scipy and statsmodels; the README's block is the template filled from the table, and a cell
changed in the table changes the README; the first screen reads the table, never the statistics code."""
import ast
import json
import math

import numpy as np
import pandas as pd
import pytest
import scipy.stats as sps
from statsmodels.stats.multitest import multipletests

from thesis_lib.paths import ROOT
from thesis_lib.study import reference, runs
from thesis_lib.study.claims import designs
from thesis_lib.study.claims import table as claims_table
from thesis_lib.study.pages import front, report


@pytest.fixture(scope="module")
def committed() -> pd.DataFrame:
    return claims_table.read()


def test_the_committed_table_is_what_the_result_files_give(committed):
    computed = claims_table.csv_text(claims_table.claims_table(runs.study_params("demo", need_data=False)))
    assert computed == claims_table.PATH.read_text(), "results/claims.csv is stale: run `make figures`"
    assert {"design", "seeds", "n", "machines", "width", "parameters", "baseline_mean", "difference", "half95",
            "eq_low", "eq_high", "margin", "thesis_aug", "thesis_final", "thesis_carried", "ratio", "ratio_low",
            "ratio_high", "p", "p_holm", "verdict", "status", "seeds_to_decide", "tte_share",
            "can_test"} <= set(committed.columns)


def _store(design_name: str):
    return ROOT / "results" if design_name == "study" else ROOT / "results" / "_designs" / design_name / "results"


def _per_seed(design_name: str, claim, metric: str, seeds) -> list[float]:
    """The claim's contrast per seed, read from the JSON files alone (its arms' weights from the declaration)."""
    out = []
    for s in seeds:
        total = 0.0
        for (variant, mode), weight in claim.contrast:
            path = _store(design_name) / "demo" / variant / f"seed{s}.json"
            if not path.exists():                                       # a design's shared arm: the study's runs
                path = _store("study") / "demo" / variant / f"seed{s}.json"
            result = json.loads(path.read_text())
            value = result["metrics"][metric] if mode == "none" else result["tte_ablation"][mode][metric]
            total += weight * value
        out.append(total)
    return out


def _seeds(spec: str) -> list[int]:
    return [s for part in spec.split(", ") for a, _, b in [part.partition("-")] for s in range(int(a), int(b or a) + 1)]


def _claims():
    declared = {c.text: c for c in reference.CLAIMS}
    for d in designs.DESIGNS.values():
        declared.update({c.text: c for c in d.claims + d.descriptive})
    return declared


def test_every_decided_row_recomputes_from_the_per_seed_files_with_scipy_and_statsmodels(committed):
    claims, checked = _claims(), 0
    rows = committed[committed.primary & committed.status.ne("pending")]
    for _, row in rows.iterrows():
        d = np.array(_per_seed(row.design, claims[row.claim], row.metric, _seeds(row.seeds)))
        assert len(d) == row.n
        assert row.difference == pytest.approx(d.mean(), rel=1e-5, abs=1e-9)
        if d.std(ddof=1) < 0.02:             # at a metric's resolution the test floors the SD (stats.PairedTest)
            continue
        half = sps.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / math.sqrt(len(d))
        assert row.half95 == pytest.approx(half, rel=1e-5)
        assert row.p == pytest.approx(sps.ttest_1samp(d, 0.0).pvalue, rel=1e-4, abs=1e-9)
        checked += 1
    assert checked >= 10
    families = 0
    for (design, family), group in rows.groupby(["design", "family"]):   # Holm within each family shown whole
        members = [c for c in claims.values() if c.family == family]
        if len(group) == len(members) and group.p.notna().all() and len(group) > 1:
            assert group.p_holm.tolist() == pytest.approx(list(multipletests(group.p, method="holm")[1]), rel=1e-4)
            families += 1
    assert families >= 3


def test_a_fixed_n_family_short_of_its_seeds_hides_its_numbers(committed):
    pending = committed[committed.status.eq("pending")]
    assert (pending.verdict == "pending").all()
    assert pending[list(claims_table.HIDDEN)].isna().all().all()


def test_the_readme_block_is_the_template_filled_from_the_committed_table(committed):
    text = report.results_markdown(runs.study_params("demo", need_data=False), committed)
    readme = (ROOT / "README.md").read_text()
    assert f"{report.START}\n{text}\n{report.END}" in readme, "README results block is stale: run `make figures`"


def test_a_cell_changed_in_the_table_changes_the_readme_the_results_page_and_the_headline(committed):
    """One row's difference and ratio changed in the table: the README's first screen, docs/results.md's table of the
    thesis beside us and the headline figure's row all show the new values (each reads the table, nothing else)."""
    from thesis_lib.study.pages import headline
    scale = report.scale("demo")
    helps = front.nearest(committed, "helps")
    changed = committed.copy()
    where = changed.claim.eq(helps.claim) & changed.regime.eq(helps.regime) & changed.primary
    changed.loc[where, ["difference", "ratio"]] = [1.234, 7.0]
    before, after = front.markdown(committed, scale), front.markdown(changed, scale)
    assert before != after and "+1.23" in after and "+1.23" not in before
    beside_before, beside_after = front.results_beside(committed), front.results_beside(changed)
    assert "+1.23" in beside_after and "+1.23" not in beside_before
    drawn = [headline.frame(t) for t in (committed, changed)]
    rows = [f[f.regime.eq(helps.regime) & f.label.str.startswith(headline.LABELS["helps"])] for f in drawn]
    assert len(rows[0]) == 1 and 7.0 not in set(rows[0].ratio) and 7.0 in set(rows[1].ratio)


def _fixture_table() -> pd.DataFrame:
    base = {"primary": True, "can_test": True, "in_thesis": True, "steps": 5952, "n": 8, "margin": 0.17,
            "half95": 0.05, "ratio_low": -0.5, "ratio_high": 0.5, "seeds_to_decide": pd.NA, "seeds_declared": "1-8",
            "regime": "summed learning rate, record", "thesis_aug": 0.3, "thesis_final": 0.33, "status": "decided"}
    rows = [dict(base, topic="before", verdict="undecided", difference=-0.2, ratio=1.1, thesis_carried=-0.17,
                 seeds_to_decide=31),
            dict(base, topic="layernorm", verdict="confirmed", difference=-1.5, ratio=9.0, thesis_carried=-0.17,
                 in_thesis=False, thesis_aug=None, thesis_final=None),
            dict(base, topic="helps", verdict="equivalent", difference=0.01, ratio=0.06, thesis_carried=0.17),
            dict(base, topic="used", verdict="pending", status="pending", difference=None, ratio=None,
                 thesis_carried=-0.17, in_thesis=False, thesis_aug=None, thesis_final=None)]
    return pd.DataFrame(rows).astype({"seeds_to_decide": "Int64"})


def test_the_template_renders_a_small_fixture_table():
    text = front.render(_fixture_table(), {"width": 96, "parameters": 640_000, "thesis_parameters": 132_000_000,
                                           "steps": 600, "batch": 128, "pictures": 4000,
                                           "test_sets": {"coco": (5000, 0), "flickr": (1000, 0),
                                                         "imagenet": (10080, 48)}})
    assert "| TTE' helps (Table 2) | +0.30 / +0.33 | +0.170 | +0.010 ± 0.050 (8 seeds, 5,952 steps)" in text
    assert "**undecided**: ≈ 31 seeds would decide" in text and "pending: its seeds are still training" in text
    assert "**not reproduced**" in text and "**confirmed**" in text and "– (0 of 1-8)" in text


READERS = ("front.py", "headline.py")   # the pages that read the claims table alone (the others: docs/results.md's)


@pytest.mark.parametrize("page", READERS)
def test_a_page_that_reads_the_table_imports_no_statistics_code(page):
    """A lint of the pages converted to the claims table (the first screen, its templates' renderer; the headline
    figure): they import the table's reader, plotting and the model's config, never the modules that compute claims."""
    tree = ast.parse((ROOT / "thesis_lib" / "study" / "pages" / page).read_text())
    imported = {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    names = {a.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) for a in node.names}
    forbidden = {"paired", "stats", "verdicts", "sequential", "designs", "results", "runs"}
    assert not forbidden & names and not any(m.split(".")[-1] in forbidden for m in imported), imported | names


def test_the_first_screen_is_short_opens_with_its_table_and_bolds_only_our_answers():
    """Title to the first section: at most 400 words (comments aside), a Markdown table within its first 40 lines,
    and every bold phrase written in the template (our answers), none a claim of the thesis restated."""
    import re
    readme = (ROOT / "README.md").read_text()
    first = re.sub(r"<!--.*?-->", "", readme[:readme.index("\n## ")], flags=re.S)
    assert len(first.split()) <= 400
    assert any(line.startswith("|---") for line in readme.splitlines()[:40])
    template = (front.TEMPLATES / "readme_answer.j2").read_text()
    bold = re.findall(r"\*\*(.+?)\*\*", first)
    assert bold and all(b in template or re.sub(r"\w+$", "", b) in template for b in bold)
    thesis_claims = {c.text for c in reference.CLAIMS if c.in_thesis}
    assert not any(b in thesis_claims for b in bold)
