"""The notebooks' generated conclusions (thesis_lib/study/pages/conclusion.py), from the committed demo results."""
import pytest

from thesis_lib.study import grids, runs
from thesis_lib.study.claims import table2
from thesis_lib.study.pages import conclusion
from thesis_lib.study.claims import paired
from thesis_lib.study import results


@pytest.fixture(scope="module")
def frame():
    return results.results_frame(runs.study_params("demo", need_data=False), grids.CLAIMED)


def test_notebook_03s_conclusion_says_whether_its_regime_could_test_the_claim():
    """Notebook 03's conclusion is its template filled from the claims table: the 600-step regime's "too small a dose"
    comes from the table's ``can_test`` column, and the TTE budget's regime reads as one that can answer."""
    from thesis_lib.study import reference
    from thesis_lib.study.claims import table as claims_table
    from thesis_lib.study.pages import front
    table = claims_table.read()
    short = front.conclusion(table, reference.TABLE2, "600 steps")
    share = table[table.family.eq(reference.TABLE2) & table.design.eq("study") & table.primary].tte_share.iloc[0]
    assert f"{share:.3g} %" in short and "too small a dose to test the claim" in short
    assert "a dose at which the claim can be tested" in front.conclusion(table, reference.BUDGET, "TTE budget")
    flipped = table.assign(can_test=True)                       # one column of the table decides the sentence
    assert "too small a dose" not in front.conclusion(flipped, reference.TABLE2, "600 steps")


def test_table1_names_the_layernorm_only_where_the_2x2_shows_it(frame):
    said = conclusion.table1(frame, 600)
    assert "places the drop on the skipped input LayerNorm" in said
    same = frame.copy()                                     # without the LayerNorm's drop
    for noln, ln in ((grids.NOLN, grids.BASELINE), (grids.TTE_BEFORE_NOLN, grids.TTE_BEFORE)):
        base = same[same.variant.eq(ln)].set_index("seed")["coco_mean"]
        rows = same.variant.eq(noln)
        same.loc[rows, "coco_mean"] = same.loc[rows, "seed"].map(base).to_numpy() + 0.001
    assert "places the drop" not in conclusion.table1(same, 600)


def test_layerscale_reads_the_budget_arm(frame):
    params = runs.study_params("demo", need_data=False)
    budget = table2.budget_rows(params)
    said = conclusion.layerscale(frame, budget)
    assert f"on {budget.iloc[-2].seeds} fresh seeds" in said and budget.iloc[-1].verdict in said


def test_layerscale_leads_with_the_long_confirmation_once_it_is_decided(frame):
    """Trained as long as the thesis is the regime nearest the thesis's: its verdicts come right after the question,
    with the seeds and differences of the confirmation's own rows; without them the conclusion points to where they
    will be."""
    params = runs.study_params("demo", need_data=False)
    budget, long = table2.budget_rows(params), table2.confirmation(params)
    assert long is not None                                        # the committed confirmation holds its n
    sentences = conclusion.layerscale(frame, budget, long).split(". ")
    helps, used = long.iloc[0], long.iloc[1]
    assert sentences[1].startswith(f"With every parameter trained to the thesis's summed learning rate, "
                                   f"on {helps.seeds} fresh seeds, \"helps\" is {helps.verdict} "
                                   f"({helps['difference (95 % CI)']} COCO retrieval points against "
                                   f"{helps['smallest effect of interest']}) and "
                                   f"\"is used\" is {used.verdict} ({used['difference (95 % CI)']})")
    assert "Trained as long" not in conclusion.layerscale(frame, budget)
    assert conclusion.layerscale(frame, budget).endswith("the long schedule's confirmation (docs/results.md) is the "
                                                         "nearest this demo comes.")


def test_the_ablation_note_names_a_removal_that_raises_a_metric():
    params = runs.study_params("demo", need_data=False)
    df = results.results_frame(params, grids.CLAIMED + grids.TTE_USED)
    t = paired.paired_test(df, (grids.TTE_AFTER, "removed"), (grids.TTE_AFTER, "none"), "imagenet_top1")
    said = conclusion.ablation_note(df)
    assert (t.mean - t.half95 > 0) == ("raises ImageNet top-1" in said)
    assert conclusion.ablation_note(df, variants=(grids.TTE_AFTER_LS,)).startswith(
        "Removing the TTE at evaluation raises no")


def test_the_rerank_note_follows_the_verdicts():
    import pandas as pd
    table = pd.DataFrame({"re-ranked − dual encoder (95 % CI)": ["-1.16 ± 0.28", "0.10 ± 0.50"], "seeds": [3, 3],
                          "verdict": ["worse", "undecided"]}, index=pd.Index(["joint", "switch"], name="variant"))
    said = conclusion.rerank_note(table)
    assert "worse for joint (-1.16 ± 0.28 points, 3 seeds)" in said and "switch" not in said
    assert conclusion.rerank_note(table.assign(verdict="undecided")).startswith("Re-ranking changes no run")


def test_the_mechanisms_conclusion_counts_the_undecided_and_names_the_decided():
    import pandas as pd
    dual = pd.DataFrame({"comparison": ["MoME − TTE'", "MoME − TTE'"], "metric": ["COCO retrieval", "Flickr retrieval"],
                         "difference (95 % CI)": ["0.50 ± 0.20", "0.10 ± 0.30"], "seeds": [3, 3],
                         "verdict": ["better", "undecided"]})
    said = conclusion.mechanisms(dual, None)
    assert "MoME − TTE' is better on COCO retrieval (0.50 ± 0.20 points)" in said
    assert "1 of the 2 dual-encoder comparisons are undecided on 3 seeds" in said
