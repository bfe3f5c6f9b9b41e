"""The thesis beside us (docs/results.md's opening: the claims table through templates/results_beside.j2) and
Table 2's designs on their pages, read from the committed demo results."""
import pandas as pd

from thesis_lib.study import runs
from thesis_lib.study.claims import table as claims_table
from thesis_lib.study.claims import table2
from thesis_lib.study.pages import front
from thesis_lib.study.pages import table2 as table2_page


def test_every_thesis_claim_has_its_numbers_and_ours_in_each_regime():
    table = claims_table.read()
    page = front.results_beside(table)
    helps = table[table.topic.eq("helps") & table.primary]
    assert len(helps) >= 4 and set(helps.regime) >= {"summed learning rate, confirmation", "default"}
    assert "| The TTE' helps (Table 2) |" in page and "| +0.30 / +0.33 |" in page
    for _, row in helps[helps.status.ne("pending")].iterrows():
        assert front.difference(row) in page
    assert "the thesis's \"helps slightly\" is not reproduced here" in page


def test_a_declared_design_without_runs_reads_pending():
    table = claims_table.read()
    confirm = table[table.design.eq("thesis-lr-sum-confirm") & table.primary]
    assert len(confirm) == 2
    assert all(v == "pending" or n > 0 for v, n in zip(confirm.verdict, confirm.n))


def test_a_pending_claim_shows_neither_its_verdict_nor_its_difference():
    table = pd.DataFrame({"seeds": [6, 32], "difference (95 % CI)": ["-0.05 ± 0.10", "0.01 ± 0.05"],
                          "equivalence interval": ["-0.05 ± 0.08 (TOST α 0.05)", "0.01 ± 0.04 (TOST α 0.05)"],
                          "p (Holm, family)": ["0.300", "0.700"], "verdict": ["undecided", "equivalent"],
                          "seeds to decide": ["40", "–"]}, index=["short of n", "at n"])
    shown = table2.pending(table.copy(), 32)            # one look for the family: no claim is read before it
    assert shown.loc["short of n"].tolist() == [6, "–", "–", "–", "pending (6 of 32 seeds)", "–"]
    assert shown.loc["at n"].tolist() == [32, "–", "–", "–", "pending (6 of 32 seeds)", "–"]
    assert table2.pending(table.copy(), 32, keep=("short of n",)).equals(table)    # a kept row is not the family's
    complete = table.assign(seeds=32)
    assert table2.pending(complete.copy(), 32).equals(complete)
    no_runs = table2.pending(complete.copy(), 32, expected=("at n", "a claim without runs yet"))
    assert (no_runs.verdict == "pending (0 of 32 seeds)").all()


def test_the_long_2x2_short_of_its_seeds_reads_pending_everywhere(monkeypatch):
    """The long schedule's 2 × 2 is fixed at n = 4: with 2 seeds trained, neither docs/results.md's section, nor the
    thesis-beside-us rows, nor the claims table (the README's source) shows a verdict word."""
    from thesis_lib.metrics import PRIMARY
    from thesis_lib.study import results
    from thesis_lib.study.claims import designs
    from thesis_lib.study.claims import table as claims_table
    params = runs.study_params("demo", need_data=False)
    design = designs.LONG_TABLE1
    base = results.design_frame(params, designs.THESIS_LR_SUM)
    base = base[base.variant.eq("baseline") & base.seed.isin([1, 2])]
    fake = pd.concat([base] + [base.assign(variant=v, **{PRIMARY: base[PRIMARY] - 5.0})
                               for v in design.variants if v != "baseline"], ignore_index=True)
    real = results.design_frame
    monkeypatch.setattr(results, "design_frame", lambda p, d: fake if d is design else real(p, d))
    section = front.table_markdown(table2.long_table1(params)["rows"])
    long_rows = [line for line in section.splitlines() if "5,952 steps" in line and line.startswith("|")]
    assert len(long_rows) == 2 and all("pending (2 of 4 seeds)" in r for r in long_rows)
    assert not any(w in r for r in long_rows for w in ("undecided", "descriptive", "reproduced", "-5.0"))
    claims = claims_table.claims_table(params)
    long22 = claims[claims.design.eq(design.name)]
    assert len(long22) and long22.status.eq("pending").all() and long22.verdict.eq("pending").all()


def test_the_long_2x2s_tte_effect_is_descriptive_with_the_seeds_that_would_decide_it():
    """Declared descriptive: at its n it reads "descriptive" (not a decision word) with its seeds to decide, in
    docs/results.md's section and the beside table alike; the LayerNorm's main effect carries a decision word."""
    from thesis_lib.study.claims import designs
    params = runs.study_params("demo", need_data=False)
    found = table2.long_table1(params)
    assert found, "the long 2 × 2's runs are committed under results/_designs/thesis-lr-sum-table1"
    rows = front.table_markdown(found["rows"]).splitlines()
    steps = f"{designs.long_steps(params.preset):,} steps"
    tte = next(r for r in rows if r.startswith(f"| 2 × 2 main effect of the TTE before, {steps}"))
    ln = next(r for r in rows if r.startswith(f"| 2 × 2 main effect of skipping the input LayerNorm, {steps}"))
    assert "| descriptive |" in tte and "if the true difference is 0" in tte
    assert "| descriptive |" not in ln and "pending" not in ln
    claims = claims_table.read()
    tte = claims[claims.design.eq(designs.LONG_TABLE1.name) & claims.primary & claims.topic.eq("before")]
    assert tte.status.tolist() == ["descriptive"]


def _complete_confirmation(monkeypatch, drop_baseline: int | None = None):
    """The long confirmation as if at its n, faked from the record's runs relabelled as seeds 9-40 (so the real
    confirmation stays unseen before its one look), less the baseline run of seed ``drop_baseline``; its design and
    demo params."""
    from thesis_lib.study import results
    from thesis_lib.study.claims import designs
    params = runs.study_params("demo", need_data=False)
    design = designs.THESIS_LR_SUM_CONFIRM
    record = results.design_frame(params, designs.THESIS_LR_SUM)
    fake = pd.concat([record.assign(seed=record.seed + 8 * k) for k in range(1, 5)], ignore_index=True)
    assert sorted(set(fake.seed)) == list(design.seeds)
    fake = fake[~(fake.variant.eq("baseline") & fake.seed.eq(drop_baseline))]
    real = results.design_frame
    monkeypatch.setattr(results, "design_frame", lambda p, d: fake if d is design else real(p, d))
    return design, params


def test_the_confirmation_at_its_n_is_said_with_its_own_verdicts(monkeypatch):
    """At its n, the claims table (the README's source) holds each confirmatory verdict with its difference and Holm
    p as docs/results.md's table has them (not a fixed word), and the beside table shows them."""
    from thesis_lib.study.claims import table as claims_table
    from thesis_lib.study.claims.stats import fmt, fmt_p
    design, params = _complete_confirmation(monkeypatch)
    rows = table2.confirm_rows(params).loc[[c.text for c in design.claims]]
    assert not any(v.startswith("pending") for v in rows.verdict)
    assert rows["equivalence interval"].str.endswith("(TOST α 0.05)").all()       # the interval the rule reads
    claims = claims_table.claims_table(params)
    confirm = claims[claims.design.eq(design.name) & claims.primary].set_index("claim")
    for claim, row in rows.iterrows():
        got = confirm.loc[claim]
        assert (got.verdict, fmt(got.difference, got.half95), fmt_p(got.p_holm), got.n) == \
            (row.verdict, row["difference (95 % CI)"], row["p (Holm, family)"], 32)


def test_the_headline_and_dose_figures_gain_the_confirmation_at_its_n(monkeypatch):
    from thesis_lib.study.pages import dose, headline
    design, params = _complete_confirmation(monkeypatch)
    table = claims_table.claims_table(params)
    shown = headline.frame(table)
    shown = shown[shown.regime.eq("summed learning rate, confirmation")]
    assert len(shown) == 2 and shown.seeds.tolist() == [32, 32]
    points = dose.frame(table)                                            # and the dose figure its regime
    assert points[points.regime.eq("summed learning rate, confirmation")].seeds.tolist() == [32, 32]


def test_the_confirmations_secondaries_curves_and_sentence_appear_only_at_its_n(monkeypatch):
    """docs/results.md gives the confirmation's secondary metrics (Flickr, ImageNet; both claims) and held-out curves
    and the Table 2 sentence its two verdicts only at its one look: absent while it is short of its n, present at it."""
    from thesis_lib.metrics import PRIMARY
    from thesis_lib.study import results
    heading = "The confirmation's secondary metrics for both claims"
    params = runs.study_params("demo", need_data=False)
    short = table2.confirm_rows(params)
    if short is not None and short.verdict.str.startswith("pending").any():      # the committed runs, short of n
        assert heading not in table2_page.markdown(params) and "its confirmation on" not in table2_page.sentence(params)
    design, params = _complete_confirmation(monkeypatch)
    curve = pd.DataFrame([{"variant": v, "seed": s, "step": step, PRIMARY: 30.0 + step / 1000 + (v == "baseline")}
                          for v in design.variants for s in design.seeds for step in (2976, 5952)])
    monkeypatch.setattr(results, "curves_frame", lambda p, d: curve if d is design else pd.DataFrame())  # not the real
    page, said = table2_page.markdown(params), table2_page.sentence(params)
    section = page[page.index(heading):]
    for claim in design.claims:
        assert f"| {claim.text}: Flickr" in section and f"| {claim.text}: ImageNet" in section
    assert "| 5952 | 36.95 | 35.95 |" in section.replace(",", "") and "(mean over seeds)" in section
    rows = table2.confirm_rows(params)
    helps, used = (rows.loc[c.text] for c in design.claims)
    assert (f"its confirmation on 32 fresh seeds finds \"helps\" **{helps.verdict}** "
            f"({helps['difference (95 % CI)']} COCO points") in said and f"**{used.verdict}**" in said


def test_one_missing_baseline_keeps_the_whole_confirmation_pending_everywhere(monkeypatch):
    """32 TTE' runs and 31 baselines (the last seed's baseline still training): "is used", which reads only the TTE'
    runs, already holds 32 seeds, yet neither claim is shown anywhere before the family's one look."""
    from thesis_lib.study.claims import table as claims_table
    from thesis_lib.study.pages import dose, headline
    design, params = _complete_confirmation(monkeypatch, drop_baseline=40)
    rows = table2.confirm_rows(params).loc[[c.text for c in design.claims]]
    assert rows.seeds.tolist() == [31, 32] and (rows.verdict == "pending (31 of 32 seeds)").all()
    assert (rows[["difference (95 % CI)", "equivalence interval", "p (Holm, family)"]] == "–").all().all()
    assert table2.confirmation(params) is None
    claims = claims_table.claims_table(params)
    confirm = claims[claims.design.eq(design.name) & claims.primary]
    assert confirm.verdict.eq("pending").all() and confirm.n.tolist() == [31, 32]
    assert "secondary metrics for both claims" not in table2_page.markdown(params)
    assert "its confirmation on" not in table2_page.sentence(params)
    assert not headline.frame(claims).regime.eq("summed learning rate, confirmation").any()
    assert not dose.frame(claims).regime.eq("summed learning rate, confirmation").any()
