"""thesis_lib/metrics.py: one declaration per metric. Resolution and chance follow from a metric's definition and
its test set's size (not its name), evaluation stores only registered keys, and what the study does with each metric
(claims, tables, ablation, precision) is read from its entry."""
import math

import pytest
import torch

from thesis_lib import metrics
from thesis_lib.metrics import METRICS, PROBE_VECTOR, RECALLS, TTE_SHARE_IMAGE, key, keyed


SIZES = {"coco": (5000, 25010), "flickr": (1000, 5000), "imagenet": (50000, 1000)}


def test_resolution_is_one_test_item_of_the_metrics_definition():
    assert METRICS["coco_tr@1"].resolution(SIZES) == 100 / 5000             # an image (not 6 × smaller)
    assert METRICS["coco_ir@1"].resolution(SIZES) == 100 / 25010            # a caption
    assert METRICS["coco_mean"].resolution(SIZES) == 100 / (6 * 25010)      # one caption in the mean of six
    assert METRICS["flickr_rerank_mean"].resolution(SIZES) == METRICS["flickr_mean"].resolution(SIZES)
    assert METRICS["flickr_itm_acc"].resolution(SIZES) == 100 / (2 * 1000)  # ties count ½
    assert METRICS["imagenet_top5"].resolution(SIZES) == 100 / 50000
    assert METRICS["coco_tr@1"].resolution({"coco": (10, 50)}) == 10.0     # from the sizes given
    for name in (PROBE_VECTOR, TTE_SHARE_IMAGE):                              # no test items behind them
        with pytest.raises(ValueError, match="has no test-set resolution"):
            METRICS[name].resolution(SIZES)


def test_chance_is_what_a_random_ranking_scores():
    n_img, per = 20, 3
    for k in (1, 5, 10):       # text retrieval: 1 − P(none of an image's captions among the first k of n)
        exact = 100 * (1 - math.comb(n_img * per - per, k) / math.comb(n_img * per, k))
        assert math.isclose(METRICS[f"coco_tr@{k}"].chance({"coco": (n_img, n_img * per)}), exact)
        assert METRICS[f"coco_ir@{k}"].chance({"coco": (n_img, n_img * per)}) == 100 * k / n_img
    sizes = {"coco": (n_img, n_img * per)}
    mean = sum(METRICS[key("coco", r)].chance(sizes) for r in RECALLS) / 6
    assert math.isclose(METRICS["coco_mean"].chance(sizes), mean)
    assert METRICS["imagenet_top5"].chance({"imagenet": (480, 48)}) == 100 * 5 / 48
    assert METRICS["flickr_itm_acc"].chance() == 50.0 and METRICS["coco_mean"].chance() is None


def test_chance_on_a_test_set_smaller_than_k_is_every_item_found():
    """k at or beyond the candidates: the top k holds them all (100 %, not k / n above it, nor a division by 0)."""
    for n_img, per in ((8, 5), (2, 5), (1, 5), (3, 1)):
        sizes = {"coco": (n_img, n_img * per)}
        for k in (1, 5, 10):
            exact_tr = 100.0 if k >= n_img * per else 100 * (1 - math.comb(n_img * per - per, k)
                                                             / math.comb(n_img * per, k))
            assert math.isclose(METRICS[f"coco_tr@{k}"].chance(sizes), exact_tr)
            assert METRICS[f"coco_ir@{k}"].chance(sizes) == 100 * min(k, n_img) / n_img
        assert METRICS["coco_mean"].chance(sizes) <= 100


def test_chance_levels_of_evaluation_come_from_the_registry():
    from thesis_lib.data.eval_sets import RetrievalSet, ZeroShotSet
    from thesis_lib.evaluation import chance_levels
    t2i = torch.arange(12).repeat_interleave(5)
    sets = [RetrievalSet(name, None, torch.zeros(60, 4), t2i) for name in ("coco", "flickr30k")]
    zs = ZeroShotSet(None, torch.zeros(96, dtype=torch.long), [str(i) for i in range(48)], ["a"], torch.zeros(48, 4))
    got = chance_levels(sets, zs)
    assert list(got) == list(metrics.TABLE)
    assert got["flickr_mean"] == METRICS["flickr_mean"].chance({"flickr": (12, 60)})
    assert got["imagenet_top1"] == 100 / 48


def test_evaluation_stores_only_registered_keys():
    stored = {**keyed("coco", dict.fromkeys((*RECALLS, "mean"))),
              **keyed("flickr", dict.fromkeys(("itm_acc", "itm_acc_random", "rerank_mean",
                                               *(f"rerank_{r}" for r in RECALLS))))}
    assert set(stored) <= set(METRICS)
    assert metrics.retrieval("flickr") == tuple(key("flickr", r) for r in (*RECALLS, "mean"))


def test_labels_are_unique_and_the_study_roles_are_read_from_the_entries():
    labels = [m.label for m in METRICS.values()]
    assert len(labels) == len(set(labels))
    assert metrics.PRIMARY == "coco_mean" and metrics.CLAIMED[0] == metrics.PRIMARY
    assert set(metrics.HEADLINE) == set(metrics.CLAIMED)
    assert set(metrics.ABLATED) <= set(METRICS) and set(metrics.PRECISION) <= set(metrics.TABLE)
