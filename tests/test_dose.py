"""Table 2's claims against the TTE's dose (thesis_lib/study/pages/dose.py, ``04_effect_vs_dose``), read from the
committed claims table (results/claims.csv)."""
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.transforms import Bbox  # noqa: E402

from thesis_lib.study.claims import table as claims_table  # noqa: E402
from thesis_lib.study.pages import dose  # noqa: E402


@pytest.fixture(scope="module")
def table():
    return claims_table.read()


@pytest.fixture(scope="module")
def points(table):
    return dose.frame(table, 1e-5)


def test_every_point_is_a_primary_row_of_the_claims_table_with_its_numbers(table, points):
    """One point per primary row of "helps", "is used" and the γ-init doses with a TTE share: its share, ratio,
    interval, seeds, verdict and can_test are the table's, none computed here."""
    rows = table[table.primary & table.status.ne("pending")
                 & (table.topic.isin(("helps", "used")) | table.topic.str.startswith("dose"))]
    assert len(points) == len(rows) >= 10 and set(points.panel) == {dose.HELPS, dose.USED}
    for p, (_, r) in zip(points.itertuples(), rows.iterrows()):
        assert (p.regime, p.share, p.ratio, p.low, p.high, p.seeds, p.can_test) == \
            (r.regime, r.tte_share, r.ratio, r.ratio_low, r.ratio_high, r.n, r.can_test)
        assert p.panel == (dose.USED if r.topic == "used" else dose.HELPS) and r.verdict.startswith(p.verdict)
    budget = points[points.regime.eq("TTE budget, confirmation") & points.panel.eq(dose.USED)].iloc[0]
    assert budget.seeds == 20 and budget.low > 0 and budget.verdict == "trivial"      # "is used" at the budget
    assert not points[points.regime.eq("default") & points.claim.str.startswith("the TTE'")].can_test.any()
    assert set(points[points.regime.eq("default")].claim) == {"the TTE' (γ init 1e-5)", "γ init 1e-3",
                                                               "γ init 1e-1", "γ init 1"}
    assert dose.spread(points) > 40                                   # the demo's TTE' to the budget arm: ≈ 47 ×


def test_points_at_nearly_the_same_share_form_one_cluster():
    assert dose.clusters(np.array([2.26, 0.05, 2.51, 0.21, 0.048, 2.258])) == [[4, 1], [3], [5, 0, 2]]   # ascending


def test_the_figure_draws_each_point_with_its_interval_its_label_and_its_verdict(points):
    """Every point drawn once, at its ratio with the table's 95 % interval, hollow where the regime could not test
    the claim; each labelled in the plot with its regime and claim (no colour legend), its verdict beside it; the
    lines at 0 and 1 named; the x axis logarithmic, every point within ``STEP`` ** 2 of its share."""
    fig = dose.draw(points, title="t")
    axes = fig.axes
    assert len(axes) == 2 and all(ax.get_xscale() == "log" for ax in axes)
    drawn = []
    for ax, panel in zip(axes, (dose.HELPS, dose.USED)):
        sub = points[points.panel.eq(panel)]
        rows = {f"{r.regime}|{r.claim}": r for r in sub.itertuples()}
        marks = [line for line in ax.lines if line.get_gid() in rows and line.get_marker() == "o"]   # not the caps
        assert len(marks) == len(sub)
        labels = [t.get_text() for t in ax.texts if t.get_gid() == "point_label"]
        verdicts = [t for t in ax.texts if t.get_gid() == "verdict"]
        assert sorted(labels) == sorted(f"{r.regime}\n{r.claim}, {r.seeds} seeds" for r in sub.itertuples())
        assert sorted(t.get_text().split(" (")[0] for t in verdicts) == sorted(sub.verdict)
        for line in marks:
            r = rows[line.get_gid()]
            x, y = line.get_xdata()[0], line.get_ydata()[0]
            assert y == r.ratio and abs(np.log(x / r.share)) < 2 * np.log(dose.STEP)
            assert (line.get_markerfacecolor() == "white") == (not r.can_test)
            drawn.append((panel, line.get_gid()))
        bars = [c for c in ax.collections if c.get_gid() in rows]
        assert len(bars) == len(sub)
        for bar in bars:
            r = rows[bar.get_gid()]
            assert sorted(np.asarray(bar.get_segments()[0])[:, 1]) == pytest.approx([r.low, r.high])
        gids = {t.get_gid(): t.get_text() for t in ax.texts}
        assert "thesis's effect" in gids["label_1"] and "no effect" in gids["label_0"]
    assert len(set(drawn)) == len(points)
    assert not any(r in t.get_text() for r in set(points.regime) for t in fig.legends[0].get_texts())   # no key
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    for ax in axes:                                  # no point's label (its name and verdict) covers another's
        names, verdicts = ([t.get_window_extent(renderer) for t in ax.texts if t.get_gid() == gid]
                           for gid in ("point_label", "verdict"))
        boxes = [Bbox.union(pair) for pair in zip(names, verdicts)]
        assert len(boxes) == len(points[points.panel.eq(dose.HELPS if ax is axes[0] else dose.USED)])
        assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])
    plt.close(fig)
    with pytest.raises(ValueError):
        dose.draw(points.iloc[:0])
