import pandas as pd
import pytest

from thesis_lib import study
from thesis_lib.study import grids
from thesis_lib.study.pages import mechanisms
from thesis_lib.variants import VARIANT_LABELS


@pytest.fixture(scope="module")
def costs():
    return mechanisms.cost_table("smoke")


def test_cost_table_counts_what_each_mechanism_adds(costs):
    base, ls, mome, joint, switch, sib = (costs.loc[VARIANT_LABELS[v]] for v in grids.DUAL + grids.FUSION)
    D = 32
    assert ls["parameters (student)"] - base["parameters (student)"] == 3 * D       # TTE (2D) + LayerScale (D)
    assert mome["parameters (student)"] - base["parameters (student)"] == 2 * D + 2 * 4 * D * D + 4 * D + D
    # routing, not mixing: MoME runs one expert per token, so its FLOPs equal the baseline's
    assert mome["MFLOPs / image + caption"] == base["MFLOPs / image + caption"]
    assert base["MFLOPs / scored pair (fusion)"] == 0 < joint["MFLOPs / scored pair (fusion)"]
    assert joint["fusion head"] < switch["fusion head"] < sib["fusion head"]       # switchers add parameters


def test_comparisons_and_summary_tables():
    df = pd.DataFrame({"variant": ["mome"] * 3 + ["baseline"] * 3, "seed": [0, 1, 2] * 2,
                       "imagenet_top1": [12.0, 13.0, 14.0, 10.0, 11.0, 12.0]})
    table = mechanisms.comparisons(df, [("mome", "baseline")], ("imagenet_top1",))
    assert table.loc[0, "difference (95 % CI)"] == "2.00 ± 0.00" and table.loc[0, "verdict"] == "better"
    for column in ("p (unadjusted)", "p (Holm, this table)"):                   # fixed notation (stats.fmt_p)
        assert table[column].str.fullmatch(r"< 0\.001|[01]\.\d{3}").all()
    assert study.summary(df, ["mome"], ("imagenet_top1",)).iloc[0]["seeds"] == 3
