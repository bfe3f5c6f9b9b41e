"""The metrics, as data: one ``Metric`` per key a result stores (``evaluate``, ``analysis``) or a table shows. Its
label, its resolution (the smallest change one test item makes) and its chance level come from its definition and
the test set's size, never from its name; what the study does with it (decides claims, is a column of the chapter's
tables, is evaluated again with the TTE ablated, has a precision target) is a field. Evaluation, the analyses, the
result checks, the tables, the claims and the figures read this module; which metrics a table of the study shows
is ``thesis_lib.study.grids``.

Definitions (docs/sources.md §4): zero-shot top-k accuracy over the test images; retrieval R@K both ways (text
retrieval: an image finds one of its captions; image retrieval: a caption finds its image) and the mean of the six,
the chapter's single retrieval number; the fusion heads' pairwise ITM accuracy (ties count ½, chance 50 %).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

SETS = {"imagenet": "ImageNet", "coco": "COCO", "flickr": "Flickr"}     # test set -> its name in a label
RECALLS = ("tr@1", "tr@5", "tr@10", "ir@1", "ir@5", "ir@10")           # what evaluate.retrieval_recalls returns


@dataclass(frozen=True)
class Metric:
    """One metric. ``kind`` is its definition:

    accuracy      zero-shot top-``k`` accuracy over the test images (percent); chance k / classes
    text recall   R@``k`` of image → text (an image finds one of its captions); one item: an image
    image recall  R@``k`` of text → image (a caption finds its image); one item: a caption
    recall mean   the mean of the six recalls; one caption moves it by 100 / (6 · captions)
    pairwise      ITM accuracy: an image's caption scored above one true negative (ties ½); chance 50 %
    probe         a balanced held-out accuracy of the modality probe (chance 50 %)
    share         a ratio the analyses measure (no test-set resolution, no chance)

    ``claims``: "primary" (decides every claim) or "secondary" (reported beside it); ``table``: a column of the
    chapter's tables (every run's chance level is stored for it); ``ablated``: evaluated again with the TTE removed
    and swapped (``analysis.tte_ablation_metrics``); ``precision``: the 95 % half-width (points) a paired
    difference to the baseline should reach; ``digits``: decimals a table shows; ``short``: the name where a
    column is narrow ("" = ``label``)."""
    key: str
    label: str
    test_set: str
    kind: str
    k: int = 0
    short: str = ""
    claims: str = ""
    table: bool = False
    ablated: bool = False
    precision: float | None = None
    digits: int = 2

    def resolution(self, sizes: dict) -> float:
        """The smallest change of the metric (points): one test item. ``sizes``: {test set: (images, captions)}
        (ImageNet: (images, classes))."""
        if self.kind in ("probe", "share"):                                  # no test items behind them
            raise ValueError(f"metric {self.key} ({self.kind}) has no test-set resolution")
        images, captions = sizes[self.test_set]
        if self.kind in ("accuracy", "text recall"):
            return 100.0 / images
        if self.kind == "image recall":
            return 100.0 / captions
        if self.kind == "recall mean":
            return 100.0 / (6 * max(images, captions))
        if self.kind == "pairwise":
            return 100.0 / (2 * images)
        raise ValueError(f"metric {self.key}: unknown kind {self.kind!r}")

    def chance(self, sizes: dict | None = None) -> float | None:
        """What a scorer that ranks at random gets (percent); None where it depends on test sets ``sizes`` lacks."""
        if self.kind in ("pairwise", "probe"):
            return 50.0
        if self.kind == "share" or self.test_set not in (sizes or {}):
            return None
        images, other = sizes[self.test_set]
        if self.kind == "accuracy":
            return 100 * min(self.k, other) / other                 # other: the classes
        tr = [100 * (1 - _none_in_top(other, other / images, k)) for k in (1, 5, 10)]
        ir = [100 * min(k, images) / images for k in (1, 5, 10)]
        if self.kind == "recall mean":
            return (sum(tr) + sum(ir)) / 6
        return (tr if self.kind == "text recall" else ir)[(1, 5, 10).index(self.k)]


def _none_in_top(n: int, good: float, k: int) -> float:
    """P(no relevant item among the first k of a random ranking of n items with ``good`` relevant ones)."""
    p = 1.0
    for i in range(min(k, n)):                   # k ≥ n: the whole ranking is the top
        p *= max(0.0, (n - good - i) / (n - i))
    return p


def key(test_set: str, measure: str) -> str:
    """The stored key of a test set's measure (``coco`` + ``tr@1`` -> ``coco_tr@1``): the one place it is spelled."""
    return f"{test_set}_{measure}"


def keyed(test_set: str, values: dict) -> dict:
    """{measure: value} of one test set as {stored key: value}."""
    return {key(test_set, m): v for m, v in values.items()}


def _retrieval(test_set: str, prefix: str = "", suffix: str = "") -> list[Metric]:
    """R@1/5/10 both ways and their mean on one test set (``prefix`` "rerank_": after the ITM head re-ranks)."""
    name = SETS[test_set]
    out = [Metric(key(test_set, prefix + r), f"{name} {'text' if r[0] == 't' else 'image'} retrieval R@{r[3:]}{suffix}",
                  test_set, "text recall" if r[0] == "t" else "image recall", int(r[3:])) for r in RECALLS]
    return out + [Metric(key(test_set, prefix + "mean"), f"{name} retrieval{suffix}", test_set, "recall mean")]


def _itm(test_set: str) -> list[Metric]:
    return [Metric(key(test_set, "itm_acc"), f"{SETS[test_set]} ITM acc. (hard negative)", test_set, "pairwise"),
            Metric(key(test_set, "itm_acc_random"), f"{SETS[test_set]} ITM acc. (random)", test_set, "pairwise")]


# The keys other modules name, spelled here only (a lint: tests/test_layout.py)
IMAGENET_TOP1, IMAGENET_TOP5 = key("imagenet", "top1"), key("imagenet", "top5")
COCO_MEAN, FLICKR_MEAN, COCO_TR1 = key("coco", "mean"), key("flickr", "mean"), key("coco", "tr@1")
FLICKR_ITM, FLICKR_ITM_RANDOM = key("flickr", "itm_acc"), key("flickr", "itm_acc_random")
FLICKR_RERANK_MEAN = key("flickr", "rerank_mean")
PROBE_VECTOR, PROBE_NORM = "probe_accuracy_vector", "probe_accuracy_norm"
TTE_SHARE = {m: f"tte_ratio_{m}" for m in ("image", "text")}    # the TTE's share of the shared block's input
TTE_SHARE_IMAGE, TTE_SHARE_TEXT = TTE_SHARE.values()

ROLES = {  # what the study does with a metric; the others are reported only
    # COCO-5K retrieval decides every claim, declared before any run: the largest test set (fewest ties, least
    # sampling noise), and the only metric on which both versions of the thesis move the same way for both
    # performance claims (before: -0.3 / -0.87, after + LayerScale: +0.3 / +0.33)
    COCO_MEAN: dict(claims="primary", table=True, ablated=True, precision=0.5),
    IMAGENET_TOP1: dict(claims="secondary", table=True, ablated=True, precision=0.5),
    IMAGENET_TOP5: dict(table=True, ablated=True),
    FLICKR_MEAN: dict(claims="secondary", table=True, ablated=True, precision=0.75),
}
_DECLARED = [
    Metric(IMAGENET_TOP1, "ImageNet top-1", "imagenet", "accuracy", 1),
    Metric(IMAGENET_TOP5, "ImageNet top-5", "imagenet", "accuracy", 5),
    *_retrieval("coco"), *_retrieval("flickr"),
    *_itm("coco"), *_itm("flickr"),                                  # fusion heads: eval.rerank_sets
    *_retrieval("coco", "rerank_", ", re-ranked"), *_retrieval("flickr", "rerank_", ", re-ranked"),
    Metric(PROBE_VECTOR, "modality probe, vector (held-out acc. %)", "", "probe"),
    Metric(PROBE_NORM, "modality probe, norm only (held-out acc. %)", "", "probe"),
    Metric(TTE_SHARE_IMAGE, "TTE share ‖γ ⊙ t_type‖ / ‖H_L‖, image tokens", "", "share",
           short="‖γ⊙t‖/‖H‖ image", digits=4),
    Metric(TTE_SHARE_TEXT, "TTE share ‖γ ⊙ t_type‖ / ‖H_L‖, caption tokens", "", "share",
           short="‖γ⊙t‖/‖H‖ text", digits=4),
]
METRICS = {m.key: dataclasses.replace(m, **ROLES.get(m.key, {})) for m in _DECLARED}

PRIMARY = next(k for k, m in METRICS.items() if m.claims == "primary")
SECONDARY = tuple(k for k, m in METRICS.items() if m.claims == "secondary")
CLAIMED = (PRIMARY, *SECONDARY)          # what the claims read, the deciding one first
HEADLINE = tuple(k for k, m in METRICS.items() if m.claims)   # the same in the tables' order: every result holds them
TABLE = tuple(k for k, m in METRICS.items() if m.table)       # the chapter's tables' columns
ABLATED = tuple(k for k, m in METRICS.items() if m.ablated)
PRECISION = {k: m.precision for k, m in METRICS.items() if m.precision is not None}   # 95 % half-width, points


def label(metric: str) -> str:
    return METRICS[metric].label


def short(metric: str) -> str:
    return METRICS[metric].short or METRICS[metric].label


def retrieval(test_set: str) -> tuple:
    """The keys of R@1/5/10 both ways and their mean on one test set, in the order evaluation stores them."""
    return tuple(key(test_set, m) for m in (*RECALLS, "mean"))
