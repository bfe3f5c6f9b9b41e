"""The width ladder (claims/designs.py ``WIDTH_LADDER``) in the claims table and its descriptive trend
(thesis_lib.study.claims.ladder), and its figure (thesis_lib.study.pages.widths): rows pending while a width is short
of its 16 seeds × 2 arms, Holm over the two widths against statsmodels, the verdicts on synthetic complete runs, the
weighted trend against statsmodels' WLS, the figure's artists on a synthetic frame. The runs are fake result files
shaped like the width-192 pilot's, written to a temporary results folder."""
import copy
import json
import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
import scipy.stats as sps  # noqa: E402
import statsmodels.api as sm  # noqa: E402
from statsmodels.stats.multitest import multipletests  # noqa: E402

from thesis_lib.metrics import CLAIMED, PRIMARY  # noqa: E402
from thesis_lib.paths import ROOT  # noqa: E402
from thesis_lib.study import runs  # noqa: E402
from thesis_lib.study.claims import designs, ladder, read, table  # noqa: E402
from thesis_lib.study.grids import BASELINE  # noqa: E402
from thesis_lib.study.pages import widths  # noqa: E402

PILOT = ROOT / "results" / "_designs" / "width-192-pilot" / "results" / "demo"
TTE = designs.BUDGET_VARIANT
SEEDS = designs.LADDER_SEEDS
Z = (lambda z: (z - z.mean()) / z.std(ddof=1))(np.random.default_rng(7).normal(size=len(SEEDS)))
"""16 fixed standard scores (mean 0, SD 1): per-seed differences mean + sd × Z have exactly that mean and SD."""


def _pilot(variant: str) -> dict:
    return json.loads((PILOT / variant / "seed0.json").read_text())


def _write(path, result: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result))


def write_runs(root, width: int, seeds, helps=(0.0, 0.1), used=(0.0, 0.1), arms=(BASELINE, TTE)) -> None:
    """Fake results of the ladder's design at ``width`` under ``root`` (a study's output folder) for ``seeds``: the
    pilot's files with the seed, width and numbers changed. Per seed i, on every claimed metric: the TTE' − the
    baseline is helps[0] + helps[1] × Z[i]; the TTE removed − kept at evaluation is −(used[0] + used[1] × Z[i])."""
    store = root / "results" / "_designs" / f"width-{width}" / "results" / "demo"
    base, tte = _pilot(BASELINE), _pilot(TTE)
    for seed in seeds:
        i = SEEDS.index(seed)
        for variant in arms:
            r = copy.deepcopy(base if variant == BASELINE else tte)
            r["seed"] = r["config"]["seed"] = seed
            r["config"]["model"]["dim"] = r["config"]["teacher"]["dim"] = width
            for m in CLAIMED:
                level = base["metrics"][m] + 0.3 * math.sin(seed)          # the seed's own level, shared by its arms
                if variant != BASELINE:
                    level += helps[0] + helps[1] * Z[i]
                    r["tte_ablation"]["removed"][m] = level - (used[0] + used[1] * Z[i])
                r["metrics"][m] = level
            _write(store / variant / f"seed{seed}.json", r)


def claims_of(root) -> pd.DataFrame:
    """The claims table of the results under ``root`` as results/claims.csv would hold it."""
    return table.read(table.csv_text(table.claims_table(runs.study_params("demo", need_data=False,
                                                                          output_dir=str(root)))))


def rows_of(t: pd.DataFrame, width: int) -> pd.DataFrame:
    return t[t.regime.eq(ladder.regime_name(width))]


@pytest.fixture
def margin_at_384(monkeypatch):
    """Width 384's margin as if its pilot's baseline were recorded (30.0 COCO retrieval)."""
    monkeypatch.setitem(designs.WIDTH_PILOT_BASELINE_COCO, 384, 30.0)


def test_partial_runs_are_pending_with_their_declaration_shown(tmp_path):
    write_runs(tmp_path, 192, SEEDS[:4], helps=(0.5, 0.05))
    write_runs(tmp_path, 192, SEEDS[4:5], arms=(BASELINE,))             # a seed whose TTE' arm is still training
    t = claims_of(tmp_path)
    at192, at384 = rows_of(t, 192), rows_of(t, 384)
    assert len(at192) == 2 * len(CLAIMED) and set(at192.topic) == {"helps", "used"}
    assert (at192.status == "pending").all() and (at192.verdict == "pending").all()
    assert at192[list(table.HIDDEN)].isna().all().all()                  # nothing read before the look
    assert set(at192.n) == {4} and set(at192.seeds) == {"41-44"} and set(at192.seeds_declared) == {"41-56"}
    assert set(at192.machines) == {"AMD EPYC (family 25 model 1)"}      # from the result files
    fields = table.model_overrides("demo", designs.WIDTH_LADDER[192])
    assert set(at192.width) == {192} and set(at192.parameters) == {table.parameters("demo", TTE, fields)}
    assert at192.margin.iloc[0] == pytest.approx(designs.margin(designs.WIDTH_LADDER[192]), rel=1e-5)   # 6 digits
    assert at192.can_test.all() and set(at192[at192.topic.eq("helps")].reading) == {"pending"}
    # width 384: no runs, no pilot's baseline yet: one pending row per claim, no margin
    assert len(at384) == 2 and (at384.status == "pending").all() and (at384.n == 0).all()
    assert at384.margin.isna().all() and set(at384.width) == {384} and set(at384.metric) == {PRIMARY}
    assert ladder.trend(t) is None


def test_a_complete_width_waits_for_the_other_before_its_verdict(tmp_path, margin_at_384):
    write_runs(tmp_path, 192, SEEDS, helps=(0.5, 0.05), used=(0.2, 0.05))
    write_runs(tmp_path, 384, SEEDS[:8], helps=(0.0, 0.05))
    t = claims_of(tmp_path)
    at192 = rows_of(t, 192)
    assert (at192.n == 16).all() and (at192.status == "pending").all()         # Holm needs both widths, and
    assert at192[list(table.HIDDEN)].isna().all().all()                        # "is used" waits for the look too
    assert (rows_of(t, 384).status == "pending").all() and (rows_of(t, 384).n == 8).all()


def _complete(root, p192: float, p384: float, sd: float = 0.2) -> None:
    """Both widths complete, each "helps" difference on every metric with the two-sided p given (n = 16)."""
    for width, p in ((192, p192), (384, p384)):
        mean = sps.t.isf(p / 2, len(SEEDS) - 1) * sd / math.sqrt(len(SEEDS))
        write_runs(root, width, SEEDS, helps=(mean, sd), used=(0.05, 0.02))


def test_holm_runs_over_the_two_widths_as_statsmodels_does(tmp_path, margin_at_384):
    _complete(tmp_path, 0.03, 0.04)
    t = claims_of(tmp_path)
    primary = pd.concat([rows_of(t, w) for w in (192, 384)])
    primary = primary[primary.primary & primary.metric.eq(PRIMARY) & primary.topic.eq("helps")]
    assert list(primary.p) == pytest.approx([0.03, 0.04], rel=1e-3)
    assert list(primary.p_holm) == pytest.approx(list(multipletests(primary.p, method="holm")[1]), rel=1e-5)
    assert (primary.status == "decided").all()
    # unadjusted each would be significant, outside its margin: "reproduced"; Holm over the two: neither is
    assert [_expected(r, r.p) for r in primary.itertuples()] == ["reproduced"] * 2
    assert [_expected(r) for r in primary.itertuples()] == list(primary.verdict) == ["undecided"] * 2
    assert list(primary.decide_alpha) == pytest.approx([0.025, 0.025])
    secondary = pd.concat([rows_of(t, w) for w in (192, 384)])
    secondary = secondary[secondary.topic.eq("helps") & secondary.metric.ne(PRIMARY)]
    assert secondary.p_holm.isna().all()                                # a secondary metric is never adjusted


def _expected(row, p: float | None = None) -> str:
    """The verdict of a complete width's primary row, from its cells alone (docs/decision_rule.md): TOST at 5 % each
    side (the 90 % interval inside ± the margin), then significance at Holm's p (or at ``p``)."""
    half90 = sps.t.ppf(0.95, row.n - 1) * row.half95 / sps.t.ppf(0.975, row.n - 1)
    inside = -row.margin < row.difference - half90 and row.difference + half90 < row.margin
    significant = (row.p_holm if p is None else p) < 0.05
    if inside:
        return "trivial" if significant else "equivalent"
    return ("reproduced" if row.difference > 0 else "contradicted") if significant else "undecided"


def test_the_verdicts_of_a_complete_ladder(tmp_path, margin_at_384):
    write_runs(tmp_path, 192, SEEDS, helps=(0.15, 0.03), used=(0.3, 0.05))     # about the thesis's size, clearly
    write_runs(tmp_path, 384, SEEDS, helps=(0.0, 0.02), used=(0.0, 0.02))      # nothing, well inside its margin
    t = claims_of(tmp_path)
    rows = {w: rows_of(t, w).set_index(["topic", "metric"]) for w in (192, 384)}
    h192, h384 = rows[192].loc[("helps", PRIMARY)], rows[384].loc[("helps", PRIMARY)]
    assert h192.verdict == "reproduced" == _expected(h192)
    assert h384.verdict == "equivalent" == _expected(h384)
    assert h384.margin == pytest.approx(designs.margin(designs.WIDTH_LADDER[384]), rel=1e-5)
    assert {h192.status, h384.status} == {"decided"} and h192.reading == "agrees" and h384.reading == "disagrees"
    diffs = 0.15 + 0.03 * Z
    assert h192.difference == pytest.approx(diffs.mean(), abs=1e-4)
    assert h192.p == pytest.approx(sps.ttest_1samp(diffs, 0).pvalue, rel=1e-3)
    assert h192.ratio == pytest.approx(h192.difference / h192.thesis_carried, rel=1e-4)    # in the thesis's units
    assert 1 / 3 < h192.ratio_low and h192.ratio_high < 3             # "reproduced" at the thesis's size
    used = rows[192].loc[("used", PRIMARY)]
    assert used.status == "descriptive" and used.difference == pytest.approx(-0.3, abs=1e-4)
    assert set(rows[192].width) == {192} and set(rows[384].width) == {384}


def _rows(ratio, low, high, n=(20, 16, 16), w=(96, 192, 384)) -> pd.DataFrame:
    return pd.DataFrame({"width": w, "ratio": ratio, "ratio_low": low, "ratio_high": high, "n": n})


def test_the_trend_is_statsmodels_wls_with_weights_one_over_se_squared():
    rows = _rows([0.03, 0.4, 0.9], [-0.19, 0.1, 0.2], [0.25, 0.7, 1.6])
    found = ladder.ladder_trend(rows)
    se = (rows.ratio_high - rows.ratio_low) / (2 * sps.t.ppf(0.975, rows.n - 1))
    assert found["points"].se.to_numpy() == pytest.approx(se.to_numpy())
    X = sm.add_constant(np.log2(rows.width.astype(float)))
    known = sm.WLS(rows.ratio, X, weights=1 / se ** 2).fit(cov_type="fixed scale")
    assert found["slope"] == pytest.approx(known.params.iloc[1])
    assert found["intercept"] == pytest.approx(known.params.iloc[0])
    assert (found["low"], found["high"]) == pytest.approx(tuple(known.conf_int(0.05).iloc[1]))
    assert found["se"] == pytest.approx(known.bse.iloc[1])
    resid = sm.WLS(rows.ratio, X, weights=1 / se ** 2).fit()
    assert (found["residual"]["low"], found["residual"]["high"]) == pytest.approx(tuple(resid.conf_int(0.05).iloc[1]))
    assert found["residual"]["dof"] == 1 and list(found["points"].width) == [96, 192, 384]


def test_the_trend_of_a_straight_line_and_of_an_incomplete_one():
    exact = ladder.ladder_trend(_rows([0.1, 0.35, 0.6], [0.0, 0.25, 0.5], [0.2, 0.45, 0.7]))
    assert exact["slope"] == pytest.approx(0.25) and exact["residual"]["se"] == pytest.approx(0, abs=1e-9)
    with pytest.raises(ValueError):
        ladder.ladder_trend(_rows([0.1, math.nan, 0.6], [0.0, math.nan, 0.5], [0.2, math.nan, 0.7]))


def synthetic_table() -> pd.DataFrame:
    """The claims table's rows of the three rungs, both claims, complete: what ``read.ladder_frame`` reads."""
    out = []
    for width, (h, u) in {96: (0.03, 0.5), 192: (0.4, 0.3), 384: (0.9, -0.1)}.items():
        for topic, ratio, carried in (("helps", h, 0.08 * width / 96), ("used", u, -0.08 * width / 96)):
            out.append({"topic": topic, "primary": True, "regime": ladder.REGIMES[width], "steps": 600,
                        "n": 20 if width == 96 else 16, "ratio": ratio, "ratio_low": ratio - 0.3,
                        "ratio_high": ratio + 0.35, "margin": 0.075 * width / 96 * 0.95, "thesis_carried": carried,
                        "verdict": "equivalent" if ratio < 0.5 else "undecided", "status": "decided",
                        "metric": PRIMARY})
    return pd.DataFrame(out)


def draw_synthetic():
    t = synthetic_table()
    frame = read.ladder_frame(t)
    return frame, widths.draw(frame, title=widths.title(frame, "COCO retrieval"), trend=read.width_trend(t))


def test_the_figure_draws_both_claims_at_each_width_with_band_and_lines():
    frame, fig = draw_synthetic()
    try:
        (ax,) = fig.axes
        assert len(frame) == 6 and list(frame.margin) == pytest.approx([0.95 * 0.075 / 0.08] * 6)
        lines = {line.get_gid(): line for line in ax.get_lines()          # the points and lines, not their caps
                 if line.get_gid() and line.get_marker() in ("o", "None")}
        for width in (96, 192, 384):
            helps, used = lines[f"helps|{width}"], lines[f"is used|{width}"]
            assert helps.get_markerfacecolor() != "white" and used.get_markerfacecolor() == "white"
            assert helps.get_xdata()[0] < width < used.get_xdata()[0]
            assert helps.get_ydata()[0] == pytest.approx(frame.set_index(["width", "claim"]).ratio[(width, "helps")])
        assert lines["thesis_effect"].get_ydata()[0] == 1 and lines["no_effect"].get_ydata()[0] == 0
        assert "trend" in lines
        (band,) = [c for c in ax.collections if c.get_gid() == "band"]
        ys = band.get_paths()[0].vertices[:, 1]
        assert ys.max() == pytest.approx(0.95 * 0.075 / 0.08)     # ± the margin in units of the thesis's effect
        assert ax.get_xscale() == "log" and [t.get_text() for t in ax.get_xticklabels()] == ["96", "192", "384"]
        title = fig._suptitle.get_text()
        assert "600 steps" in title and "learning-rate budget" in title
        texts = [t.get_text() for t in ax.texts]
        assert "1: the thesis's effect" in texts and "0: no effect" in texts
        assert sum(t.get_gid() == "verdict" for t in ax.texts) == 6
        (legend,) = fig.legends
        labels = " ".join(t.get_text() for t in legend.get_texts())
        assert "filled" in labels and "hollow" in labels and "smallest effect of interest" in labels
    finally:
        plt.close(fig)


def test_a_pending_rung_is_named_not_drawn():
    t = synthetic_table()
    t.loc[t.regime.eq(ladder.REGIMES[384]), ["ratio", "ratio_low", "ratio_high", "verdict", "status"]] = \
        [math.nan, math.nan, math.nan, "pending", "pending"]
    assert read.width_trend(t) is None
    fig = widths.draw(read.ladder_frame(t))
    try:
        (ax,) = fig.axes
        assert sum(t.get_gid() == "pending" for t in ax.texts) == 2
        assert not [line for line in ax.get_lines() if line.get_gid() in ("helps|384", "is used|384")]
    finally:
        plt.close(fig)
