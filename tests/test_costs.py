"""costs.py: what each mechanism adds to the model, in parameters and forward FLOPs (notebook 05's cost table)."""
import pytest

from thesis_lib.costs import cost_table
from thesis_lib.study import grids
from thesis_lib.variants import VARIANT_LABELS


@pytest.fixture(scope="module")
def costs():
    return cost_table("smoke", grids.DUAL + grids.FUSION)


def test_cost_table_counts_what_each_mechanism_adds(costs):
    base, ls, mome, joint, switch, sib = (costs.loc[VARIANT_LABELS[v]] for v in grids.DUAL + grids.FUSION)
    D = 32
    assert ls["parameters (student)"] - base["parameters (student)"] == 3 * D       # TTE (2D) + LayerScale (D)
    assert mome["parameters (student)"] - base["parameters (student)"] == 2 * D + 2 * 4 * D * D + 4 * D + D
    # routing, not mixing: MoME runs one expert per token, so its FLOPs equal the baseline's
    assert mome["MFLOPs / image + caption"] == base["MFLOPs / image + caption"]
    assert base["MFLOPs / scored pair (fusion)"] == 0 < joint["MFLOPs / scored pair (fusion)"]
    assert joint["fusion head"] < switch["fusion head"] < sib["fusion head"]       # switchers add parameters
