"""Table 2's claims against the TTE's dose (thesis_lib/study/pages/dose.py), read from the committed demo results."""
import matplotlib.pyplot as plt
import pytest

from thesis_lib.study import runs
from thesis_lib.study.pages import dose
from thesis_lib.study import results


@pytest.fixture(scope="module")
def points():
    return dose.frame(runs.study_params("demo", need_data=False))


def test_every_regime_with_runs_has_both_claims_at_its_measured_share(points):
    params = runs.study_params("demo", need_data=False)
    regimes = dose.regimes(params)
    assert len(regimes) >= 6 and set(points.claim) == {dose.HELPS, dose.USED}
    for name, df, variant in regimes:
        rows = points[points.regime.eq(name)]
        assert len(rows) == 2
        assert rows["share %"].iloc[0] == pytest.approx(results.runs_of(df, variant).tte_ratio_image.mean() * 100)
    budget = points[points.regime.str.contains("seeds 4-23") & points.claim.eq(dose.USED)].iloc[0]
    assert budget.seeds == 20 and budget.low > 0                       # "is used" at the budget: trivial, above 0
    assert dose.spread(points) > 40                                   # the demo's TTE' to the budget arm: ≈ 47 ×


def test_points_at_nearly_the_same_share_are_spread_apart():
    x = dose.spread_apart([1.0, 1.05, 2.0, 1.1])
    assert x[0] == 1.0 and x[1] == pytest.approx(1.05 * dose.STEP) and x[2] == 2.0
    assert x[3] == pytest.approx(1.1 * dose.STEP ** 2)


def test_the_figure_draws_one_interval_per_row(points):
    fig = dose.draw(points)
    assert sum(len(ax.containers) for ax in fig.axes) == len(points)        # one errorbar container per row
    plt.close(fig)
    with pytest.raises(ValueError):
        dose.draw(points.iloc[:0])
