"""Which variants each part of the study compares, declared once: the thesis's tables, the controls and doses, and
what each notebook trains; and which metrics (``thesis_lib.metrics`` keys) a table shows where that is the study's
choice. Notebooks, figures, the claims and the README's results block read these names; a variant group is never
listed a second time, and a variant's name is spelled only here and where it is declared (``thesis_lib.variants``:
what each changes); elsewhere it is one of the names below.

The chapter's rows are its Tables 1-2 (TTE chapter Eqs. 1-5); notebook 05's groups go beyond the chapter (VLMo,
arXiv:2111.02358; Switch-BERT, ECCV 2022).
"""
from thesis_lib import metrics

TTE = ("baseline", "tte_before", "tte_after", "tte_after_ls")       # the chapter's rows (the README's first table)
TABLE1 = ("baseline", "tte_before", "noln", "tte_before_noln")      # Table 1 as a 2 × 2 (notebook 02)
BASELINE, TTE_BEFORE, TTE_AFTER, TTE_AFTER_LS = TTE                # the chapter's rows by name
_, _, NOLN, TTE_BEFORE_NOLN = TABLE1                               # the 2 × 2's control arms by name
TABLE2 = ("baseline", "tte_after_ls")       # what Table 2's claims compare (notebook 03, the main job); the final
                                            # text's third row, TTE after without LayerScale, is notebook 04's
CONTROLS = ("tte_before_noln", "noln", "tte_shared")
DOSE = ("tte_after_ls", "tte_after_ls_init1e-3", "tte_after_ls_init1e-1", "tte_after_ls_init1")   # γ's initial value
BUDGET = ("baseline", "tte_after_ls_budget")  # the TTE' given the thesis's learning-rate budget (notebook 04)
TABLE2_REGIMES = {   # notebook 03's parameter ``regime`` -> what it trains: the 600-step default, or the TTE' given
    "600 steps": TABLE2,   # the thesis's learning-rate budget within the 600 steps (`make demo`: a regime that can
    "TTE budget": BUDGET,  # test the claim at the demo's cost; the 600-step TTE is too small a dose to test it)
}
DOSE_ARMS = ("baseline", *DOSE)           # what the γ-init claims compare (notebook 04's dose-response)
TTE_USED = ("tte_after", "tte_after_ls", "tte_after_ls_budget", "tte_shared")  # ablated at evaluation: is the TTE used?
TTE_CONTRIBUTION = (*DOSE, "tte_after_ls_budget", "tte_after")   # γ rising: its start, its budget, no LayerScale
WHY = (*DOSE_ARMS, "tte_after_ls_budget", "tte_after")           # notebook 04's two measurements beside the verdicts
CLAIMED = tuple(dict.fromkeys(TTE + CONTROLS + TABLE1 + DOSE + BUDGET))      # every variant some claim reads
THESIS_DIFFERENCES = (("tte_before", "baseline"), ("tte_after", "baseline"), ("tte_after_ls", "baseline"))  # Tables 1-2
PRECISION = ("tte_before", "tte_after_ls")  # whose paired difference to the baseline has a precision target
PROBED = ("baseline", "tte_after_ls")       # the modality probe on the shared block's input (notebook 04)

DUAL = ("baseline", "tte_after_ls", "mome")                         # notebook 05, dual-encoder use
FUSION = ("fusion_joint", "switch", "switch_sib")                   # notebook 05, + image-text matching, re-ranking
FUSION_TRAINED = ("fusion_joint", "switch_sib")   # notebook 05's default fusion_variants (its parameters cell)
SWITCHES = ("switch", "switch_sib")                                 # the fusion heads with switches
DUAL_PAIRS = (("mome", "tte_after_ls"), ("mome", "baseline"), ("tte_after_ls", "baseline"))   # one Holm family

VERIFIED = ("baseline", "tte_before", "tte_after_ls", "tte_after_ls_budget", "tte_before_noln", "mome",
            "switch_sib")   # `make verify` retrains seed 0 of each: one variant of every family (model code path)

NOTEBOOKS = {  # notebook -> the variants it trains (01 trains the baseline alone; 05 adds its parameter
    #             fusion_variants, a subset of FUSION)
    "02": TABLE1,
    "03": TABLE2,
    "04": ("baseline", "tte_after", "tte_after_ls", "tte_shared", *DOSE[1:], *BUDGET[1:]),
    "05": DUAL,
}

# metric groups a table shows (the metrics themselves, their labels and roles: thesis_lib.metrics; notebook 05's
# dual-encoder comparisons show metrics.HEADLINE)
FUSION_METRICS = (metrics.FLICKR_ITM_RANDOM, metrics.FLICKR_ITM, metrics.FLICKR_MEAN,
                  metrics.FLICKR_RERANK_MEAN)                                            # + fusion heads
FUSION_COMPARED_METRICS = (metrics.FLICKR_ITM_RANDOM, metrics.FLICKR_ITM, metrics.FLICKR_RERANK_MEAN)  # between heads
NOISE_SEED_FROM = (("tte_after_ls", "tte_after"),)   # whose seed noise the thesis-noise table carries for a row: the
                                                 # TTE' barely trains at the demo's budget, TTE after without LS does
# the thesis's differences against noise: the chapter's table metrics, the retrieval means first
NOISE_METRICS = tuple(sorted(metrics.TABLE, key=lambda m: metrics.METRICS[m].test_set == "imagenet"))
WHY_METRICS = (metrics.PROBE_VECTOR, metrics.PROBE_NORM, metrics.TTE_SHARE_IMAGE, metrics.TTE_SHARE_TEXT)  # notebook 04
