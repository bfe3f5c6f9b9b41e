"""study/reference.py: the chapter's claims are named once, and each name stands for the contrast it says (the
names are unpacked from ``CLAIMS`` by position, so a reordered tuple fails here, not in a page)."""
from thesis_lib.study import reference
from thesis_lib.study.grids import BASELINE, NOLN, TTE_AFTER_LS, TTE_BEFORE, TTE_BEFORE_NOLN
from thesis_lib.study.reference import half, vs


def _claim(text: str) -> reference.Claim:
    return next(c for c in reference.CLAIMS if c.text == text)


def test_each_named_claim_is_the_contrast_its_name_says():
    expected = {
        reference.BEFORE_HURTS: (vs(TTE_BEFORE, BASELINE), -1),
        reference.CODE_HURTS: (vs(TTE_BEFORE_NOLN, BASELINE), -1),
        reference.TTE_MAIN_EFFECT: (half((TTE_BEFORE, BASELINE), (TTE_BEFORE_NOLN, NOLN)), -1),
        reference.LN_MAIN_EFFECT: (half((NOLN, BASELINE), (TTE_BEFORE_NOLN, TTE_BEFORE)), -1),
        reference.HELPS: (vs(TTE_AFTER_LS, BASELINE), +1),
        reference.USED: (vs(TTE_AFTER_LS, TTE_AFTER_LS, "removed"), -1),
    }
    for text, (contrast, direction) in expected.items():
        claim = _claim(text)
        assert (claim.contrast, claim.direction) == (contrast, direction), text


def test_the_interaction_is_the_difference_of_the_two_tte_effects():
    arms = dict(_claim(reference.INTERACTION).contrast)
    assert arms == {(TTE_BEFORE_NOLN, "none"): 1.0, (NOLN, "none"): -1.0, (TTE_BEFORE, "none"): -1.0,
                    (BASELINE, "none"): 1.0}


def test_the_names_are_distinct_claims():
    names = [reference.BEFORE_HURTS, reference.CODE_HURTS, reference.TTE_MAIN_EFFECT, reference.LN_MAIN_EFFECT,
             reference.INTERACTION, reference.HELPS, reference.USED]
    assert len(set(names)) == len(names)
