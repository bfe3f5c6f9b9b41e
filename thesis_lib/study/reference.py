"""The thesis's own numbers, for the reference columns only (never mixed into our results), and the notation
chapter's errata computed against this code. Sources: docs/sources.md §5 (both versions of the TTE chapter) and §6.

Two versions exist: the August-2024 text (EMKUM = Data2Vec2 image + Data2Vec2 text; reports ImageNet top-1
and top-5, no "TTE after without LayerScale" row) and the final text (S-SMKE = Data2Vec2 image + BERT text; no
top-5, adds that row). Retrieval numbers are the mean of the six recalls R@1/5/10 both ways.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from thesis_lib.config import get_config
from thesis_lib.metrics import COCO_MEAN, FLICKR_MEAN, IMAGENET_TOP1, IMAGENET_TOP5, METRICS
from thesis_lib.variants import VARIANT_SPECS
from . import grids
from .grids import BASELINE, NOLN, TTE_AFTER, TTE_AFTER_LS, TTE_BEFORE, TTE_BEFORE_NOLN

THESIS_AUG = {  # TTE chapter, Aug-2024 version, Tables 1-2 (docs/sources.md §5)
    BASELINE: {IMAGENET_TOP1: 26.1, IMAGENET_TOP5: 50.4, COCO_MEAN: 66.3, FLICKR_MEAN: 77.83},
    TTE_BEFORE: {IMAGENET_TOP1: 25.6, IMAGENET_TOP5: 49.5, COCO_MEAN: 66.0, FLICKR_MEAN: 77.36},
    TTE_AFTER_LS: {IMAGENET_TOP1: 26.7, IMAGENET_TOP5: 50.9, COCO_MEAN: 66.6, FLICKR_MEAN: 78.09},
}
THESIS_FINAL = {  # final text tte.typ@HEAD, Tables 1-2 (BERT text encoder)
    BASELINE: {IMAGENET_TOP1: 30.4, COCO_MEAN: 66.87, FLICKR_MEAN: 77.1},
    TTE_BEFORE: {IMAGENET_TOP1: 29.6, COCO_MEAN: 66.0, FLICKR_MEAN: 76.5},
    TTE_AFTER: {IMAGENET_TOP1: 30.3, COCO_MEAN: 67.2, FLICKR_MEAN: 78.08},
    TTE_AFTER_LS: {IMAGENET_TOP1: 30.3, COCO_MEAN: 67.2, FLICKR_MEAN: 78.29},
}
THESIS = {"aug": THESIS_AUG, "final": THESIS_FINAL}
SOURCES = {"aug": "thesis, Aug 2024 chapter (Data2Vec2 text)", "final": "thesis, final text (BERT text)"}
LAYERSCALE = {  # statistics of the learned TTE LayerScale γ after training
    "aug": {"mean": 7.2e-4, "std": 1.6e-2, "max": 0.3},
    "final": {"mean": 2e-4, "max": 0.37},
    "init": 1e-5,
}


@dataclass(frozen=True)
class Claim:
    """A claim as a paired contrast over seeds: per seed, Σ weight × metric over ``contrast``'s arms, each arm a
    (variant, TTE ablation) pair (ablation "none" = the model as trained); ``direction`` +1 says higher, -1 lower.
    ``margin_from``: the thesis rows whose difference is the thesis's own effect (the smallest effect of interest,
    carried to our scale by ``sesoi``); ``family``: the claims Holm's correction runs over, wherever one is shown;
    ``in_thesis``: the thesis states it (the others are this study's questions about it); ``margin``: the smallest
    effect of interest on the primary metric (points) fixed at the claim's design (``designs``), else None: the
    thesis's relative effect times the baseline's mean over the seeds of the design's first look (``sesoi``);
    ``short``: how a figure's row names it where the text says more than the row can (a design's claims), else ""."""
    text: str
    contrast: tuple
    direction: int
    margin_from: tuple
    family: str
    in_thesis: bool = False
    margin: float | None = None
    short: str = ""

    @property
    def arms(self) -> tuple:
        return tuple(arm for arm, _ in self.contrast)

    @property
    def arms_variants(self) -> tuple:
        return tuple(dict.fromkeys(variant for variant, _ in self.arms))


def vs(treated: str, control: str, t_mode: str = "none", c_mode: str = "none") -> tuple:
    return (((treated, t_mode), 1.0), ((control, c_mode), -1.0))


def half(*pairs) -> tuple:
    """½ Σ (treated − control) over the pairs: a main effect of the 2 × 2."""
    return tuple((arm, w / 2) for t, c in pairs for arm, w in vs(t, c))


TABLE1, TABLE2, DOSE, BUDGET = "Table 1 (2 × 2)", "Table 2", "γ init (dose-response)", "TTE' at the thesis's budget"
BEFORE, AFTER = (TTE_BEFORE, BASELINE), (TTE_AFTER_LS, BASELINE)   # the thesis rows whose difference sets a margin
CLAIMS = (
    Claim("TTE before the encoders hurts", vs(*BEFORE), -1, BEFORE, TABLE1, True),
    Claim("Table 1 as the thesis code ran it (TTE before, input LayerNorm skipped) hurts",
          vs(TTE_BEFORE_NOLN, BASELINE), -1, BEFORE, TABLE1, True),
    Claim("2 × 2 main effect of the TTE before", half(BEFORE, (TTE_BEFORE_NOLN, NOLN)), -1, BEFORE, TABLE1),
    Claim("2 × 2 main effect of skipping the input LayerNorm", half((NOLN, BASELINE), (TTE_BEFORE_NOLN, TTE_BEFORE)),
          -1, BEFORE, TABLE1),
    Claim("2 × 2 interaction: the TTE before hurts more without the LayerNorm",
          vs(TTE_BEFORE_NOLN, NOLN) + tuple((arm, -w) for arm, w in vs(*BEFORE)), -1, BEFORE, TABLE1),
    Claim("TTE after the encoders with LayerScale helps", vs(*AFTER), +1, AFTER, TABLE2, True),
    Claim("The TTE' is used: removing it at evaluation costs accuracy", vs(TTE_AFTER_LS, TTE_AFTER_LS, "removed"),
          -1, AFTER, TABLE2, True),
    *(Claim(f"TTE after with γ initialised at {VARIANT_SPECS[v].layerscale_init:g} helps", vs(v, BASELINE), +1,
            AFTER, DOSE) for v in grids.DOSE[1:]),
    Claim("TTE after with LayerScale helps, given the thesis's learning-rate budget for the TTE",
          vs(*grids.BUDGET[::-1]), +1, AFTER, BUDGET),
)
FAMILIES = tuple(dict.fromkeys(c.family for c in CLAIMS))
REGIME_FAMILIES = {"600 steps": TABLE2, "TTE budget": BUDGET}   # notebook 03's regimes (grids.TABLE2_REGIMES)
BEFORE_HURTS, CODE_HURTS, TTE_MAIN_EFFECT, LN_MAIN_EFFECT, INTERACTION, HELPS, USED = (c.text for c in CLAIMS[:7])


def relative_effects(rows: tuple, metric: str) -> dict:
    """{version: the thesis's effect between two rows relative to the control row} for the versions reporting both."""
    return {v: (t[rows[0]][metric] - t[rows[1]][metric]) / t[rows[1]][metric] for v, t in THESIS.items()
            if metric in t.get(rows[0], {}) and metric in t.get(rows[1], {})}


def relative_effect(rows: tuple, metric: str) -> float | None:
    """The thesis's own effect between two rows as a fraction of the control row, the smaller of the two versions
    (signed as the version with the smaller effect reports it); None if unreported."""
    return min(relative_effects(rows, metric).values(), key=abs, default=None)


def _logit(p: float) -> float:
    return math.log(p / (1 - p))


def margin_conventions(rows: tuple, metric: str, control_mean: float) -> dict:
    """The smallest effect of interest (points, > 0, or None) under each way of carrying the thesis's effect to our
    scale: the declared one (``sesoi``: the smaller relative effect of the two versions), the other version's
    relative effect, the same change of log-odds of the score (a proportion), and the same relative change of the
    error rate (100 − score). The declared one decides; the others show how much the verdict rests on it."""
    rel = relative_effects(rows, metric)
    declared = min(rel, key=lambda v: abs(rel[v])) if rel else None
    out = {"declared": sesoi(rows, metric, control_mean)}
    other = [v for v in rel if v != declared]
    out["other version"] = abs(rel[other[0]]) * control_mean if other and rel[other[0]] else None
    if declared is None or not rel[declared]:
        return {**out, "log-odds": None, "error rate": None}
    treated, control = THESIS[declared][rows[0]][metric] / 100, THESIS[declared][rows[1]][metric] / 100
    ours = control_mean / 100
    shifted = 1 / (1 + math.exp(-(_logit(ours) + _logit(treated) - _logit(control))))
    out["log-odds"] = abs(shifted - ours) * 100
    out["error rate"] = abs((treated - control) / (1 - control)) * (100 - control_mean)
    return out


def sesoi(rows: tuple, metric: str, control_mean: float) -> float | None:
    """The smallest effect of interest at our scale (points, > 0): the thesis's relative effect times our control's
    mean, the rule of docs/decision_rule.md. A thesis effect of 0.3 pt on a COCO score of 66.3 (0.45 %) becomes
    0.077 pt on a score of 17."""
    rel = relative_effect(rows, metric)
    return None if rel is None or rel == 0 else abs(rel) * control_mean


# the real test sets (Karpathy COCO 5K, Flickr30K 1K): images, captions; ImageNet-1K val: images, classes
TEST_ITEMS = {"coco": (5000, 25010), "flickr": (1000, 5000), "imagenet": (50000, 1000)}


def binomial_se(metric: str, score: float) -> tuple[float, float]:
    """The standard error (points) of one model's score from the real test set, every recall taken to be
    ``score`` (the thesis reports only the retrieval mean): for a retrieval mean, the six recalls' errors perfectly
    correlated (the upper value) or independent (the lower); for ImageNet top-k, one binomial proportion (both)."""
    p, m = score / 100, METRICS[metric]
    images, captions = TEST_ITEMS[m.test_set]
    if m.kind == "accuracy":
        se = math.sqrt(p * (1 - p) / images) * 100
        return se, se
    if m.kind != "recall mean":
        raise ValueError(f"binomial_se: {metric} is neither a top-k accuracy nor a retrieval mean")
    per = [math.sqrt(p * (1 - p) / n) * 100 for n in (images,) * 3 + (captions,) * 3]   # image→text, text→image
    return math.sqrt(sum(x * x for x in per)) / 6, sum(per) / 6


def thesis_value(version: str, variant: str, metric: str):
    return THESIS[version].get(variant, {}).get(metric)


def notation_errata() -> list[dict]:
    """Each number the notation chapter states wrongly, beside the value this code computes (docs/sources.md §6)."""
    import torch

    from thesis_lib.models.representations import TextEmbedding, patchify
    img, text = get_config("thesis").model.image, get_config("thesis").model.text
    flat = patchify(torch.zeros(1, 3, img.img_size, img.img_size), img.patch_size).shape[-1]
    cls_pos = int(TextEmbedding(text, 8).positions(torch.tensor([[text.bos_id, 5, text.eos_id]]))[0, 0])
    return [
        {"chapter says": "v ∈ R^{3×244×244} for a 224×224 image", "stated": 244, "computed": img.img_size,
         "how": "ImageConfig.img_size of the thesis preset"},
        {"chapter says": "N = H·W/P² with P = 14 'patches per dimension'", "stated": "P = 14",
         "computed": f"P = {img.patch_size} (patch side), {img.grid} patches per side",
         "how": "N = 224²/16² only with P the patch size"},
        {"chapter says": "N = 244·244/14² = 196", "stated": f"196 (its formula gives {244 * 244 / 14 ** 2:.1f})",
         "computed": img.num_patches, "how": "ImageConfig.num_patches = (224/16)²"},
        {"chapter says": "each patch flattened into a 256-dim vector", "stated": 256, "computed": flat,
         "how": "patchify(): C·P² = 3·16·16"},
        {"chapter says": "E_w ends with [T_CLS] (second special token)", "stated": "[T_CLS]", "computed": "[T_SEP]",
         "how": "tokenizer: bos_id=T_CLS first, eos_id=T_SEP last"},
        {"chapter says": "T_CLS gets a zero positional encoding (notation Eq. 7)", "stated": "0",
         "computed": f"position row {cls_pos} (learned) in Data2Vec2 text; 'zero' is an option",
         "how": "TextEmbedding.positions, cls_position='learned'"},
        {"chapter says": "FFN = LN(GELU(h W1ᵀ + b1)) W2ᵀ + b2 (inner LayerNorm)", "stated": "inner LN",
         "computed": "no inner LN", "how": "timm Mlp in every block (BERT, ViT and the thesis code have none)"},
    ]
