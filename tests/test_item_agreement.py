"""Two models' item-by-item agreement (thesis_lib/study/runs/item_agreement.py): φ against numpy's correlation, the SE
of a paired difference against a simulation of correlated hits, and the hits of a smoke model against its metrics."""
import math

import numpy as np
import pytest
import torch

from thesis_lib.study.runs import item_agreement as ia


def test_phi_is_pearsons_r_of_the_hits():
    rng = np.random.default_rng(0)
    a = rng.random(500) < 0.6
    b = np.where(rng.random(500) < 0.7, a, rng.random(500) < 0.6)
    assert ia.phi(torch.tensor(a), torch.tensor(b)) == pytest.approx(np.corrcoef(a, b)[0, 1])
    assert math.isnan(ia.phi(torch.ones(5, dtype=torch.bool), torch.tensor(a[:5])))
    same = [ia.phi(x, x) for x in torch.rand(200, 1714, generator=torch.Generator().manual_seed(0)) < 0.6]
    assert max(same) == 1.0 and ia.phi(torch.tensor(a), ~torch.tensor(a)) == -1.0   # rounding held to [−1, 1]


@pytest.mark.parametrize("share", [0.0, 0.5, 0.9])
def test_paired_se_equals_a_simulation_of_correlated_hits(share):
    """Model b copies model a's hit on a share of the items and draws its own elsewhere (same rate p): φ = share.
    The SD of p̂_a − p̂_b over 4,000 simulated test sets of 1,000 items equals the independent SE (√2 × one model's
    binomial SE) times √(1 − φ) at the measured φ (within 5 %): the paired SE ``verdicts.thesis_noise`` uses."""
    rng, p, n = np.random.default_rng(1), 0.3, 1000
    a = rng.random((4000, n)) < p
    b = np.where(rng.random((4000, n)) < share, a, rng.random((4000, n)) < p)
    phi = ia.phi(torch.tensor(a[0]), torch.tensor(b[0]))
    simulated = (a.mean(1) - b.mean(1)).std()
    assert math.sqrt(2 * p * (1 - p) / n) * math.sqrt(1 - phi) == pytest.approx(simulated, rel=0.05)


def test_item_hits_give_the_run_metrics(smoke_model_and_sets):
    """The hits' means are the model's ImageNet top-1 and COCO R@1 both ways, as ``evaluate`` computes them."""
    from thesis_lib.evaluation import evaluate
    model, sets, ctx = smoke_model_and_sets
    hits = ia.item_hits(model, *sets, ctx)
    metrics = evaluate(model, *sets, ctx)
    assert 100 * hits["imagenet_top1"].double().mean().item() == pytest.approx(metrics["imagenet_top1"])
    assert 100 * hits["coco_ir@1"].double().mean().item() == pytest.approx(metrics["coco_ir@1"])
    assert 100 * hits["coco_tr@1"].double().mean().item() == pytest.approx(metrics["coco_tr@1"])
    same = ia.agreement(hits, hits)
    assert all(v["phi"] == pytest.approx(1.0) or math.isnan(v["phi"]) for v in same.values())


@pytest.fixture(scope="module")
def smoke_model_and_sets():
    from thesis_lib import get_config
    from thesis_lib.data.eval_sets import build_eval_sets
    from thesis_lib.data.tokenizer import load_tokenizer
    from thesis_lib.evaluation import EvalContext
    from thesis_lib.models.emkum import build_model
    from thesis_lib.training.prepare import prepare_assets
    cfg = get_config("smoke")
    root = prepare_assets(cfg, pretrained=False)
    tok = load_tokenizer(cfg, root)
    torch.manual_seed(0)
    model = build_model(cfg, pretrained=False).eval()
    return model, build_eval_sets(cfg, tok, root), EvalContext.of(cfg, torch.device("cpu"), tok.pad_id)
