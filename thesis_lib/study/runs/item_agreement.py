"""How alike two models are item by item on the same test set: each model's hit (right or wrong) on every test item,
and the correlation of two models' hits (the φ coefficient). Two models evaluated on the same items are not two
independent samples of the test set: their difference has the variance

    Var(p̂_a − p̂_b) = [p_a(1 − p_a) + p_b(1 − p_b) − 2 φ √(p_a(1 − p_a) p_b(1 − p_b))] / n,

so where p_a ≈ p_b the paired SE is √(1 − φ) times the independent-samples one (φ = 0): smaller when the models
agree item by item (φ > 0), larger when they disagree (the variance of a difference of correlated proportions;
McNemar 1947, *Psychometrika* 12(2)). ``verdicts.thesis_noise``
carries the φ measured here between paired demo variants to the thesis's single runs.
"""
from __future__ import annotations

import math

import torch

from thesis_lib.analysis import evaluating
from thesis_lib.metrics import IMAGENET_TOP1, key
from thesis_lib.evaluation import EvalContext, embed_images, embed_texts, test_set, zero_shot_classifier


def item_hits(model, retrieval, zero_shot, ctx: EvalContext) -> dict:
    """{item kind: bool tensor}: ImageNet top-1 per image ("imagenet_top1"), and per retrieval set its R@1 per
    caption (text → image, "<set>_ir@1") and per image (image → text, "<set>_tr@1")."""
    with evaluating(model):
        classes = zero_shot_classifier(model, zero_shot, ctx.pad_id, ctx.device, ctx.batch_size, ctx.amp)
        logits = embed_images(model, zero_shot.images, ctx) @ classes.T
        out = {IMAGENET_TOP1: (logits.argmax(1) == zero_shot.labels.to(logits.device)).cpu()}
        for rs in retrieval:
            img = embed_images(model, rs.images, ctx)
            txt = embed_texts(model, rs.tokens, ctx.pad_id, ctx.device, ctx.batch_size, ctx.amp)
            sims, own = txt @ img.T, rs.text_to_image.to(img.device)
            out[key(test_set(rs), "ir@1")] = (sims.argmax(1) == own).cpu()
            out[key(test_set(rs), "tr@1")] = (own[sims.argmax(0)] == torch.arange(len(img), device=img.device)).cpu()
        return out


def phi(a: torch.Tensor, b: torch.Tensor) -> float:
    """The φ coefficient of two hit vectors (Pearson's r of 0/1 values, held in [−1, 1] against rounding: a model
    against itself gave 1 + 2e-16, and √(1 − φ) then failed); nan where either is constant."""
    x, y = a.double(), b.double()
    sx, sy = x.std(unbiased=False).item(), y.std(unbiased=False).item()
    if sx == 0 or sy == 0:
        return math.nan
    return min(1.0, max(-1.0, float(((x - x.mean()) * (y - y.mean())).mean().item() / (sx * sy))))


def agreement(hits_a: dict, hits_b: dict) -> dict:
    """{item kind: {"phi", "p_a", "p_b", "n"}} for the kinds both models were scored on."""
    return {k: {"phi": phi(hits_a[k], hits_b[k]), "p_a": float(hits_a[k].double().mean()),
                "p_b": float(hits_b[k].double().mean()), "n": len(hits_a[k])} for k in hits_a if k in hits_b}
