"""Evaluation: ImageNet-style zero-shot classification and image-text retrieval (docs/sources.md §4).

* Zero-shot (open_clip / CLIP_benchmark recipe): class vector = renormalised mean of the L2-normalised prompt
  embeddings over the templates; logits = 100 · image · class; top-1 and top-5 in percent.
* Retrieval (BEiT-3 / VLMo, which the thesis copies): one embedding per image, every caption kept.
  Text retrieval (image -> text) R@K: share of images with at least one of their captions in the top K.
  Image retrieval (text -> image) R@K: share of captions whose image is in the top K. K = 1, 5, 10, in percent;
  ``mean`` = the mean of the six recalls, the single number of the chapter's tables.
Similarities are scored in chunks of image rows, so COCO-5K (5,000 × 25,010) never holds more than chunk × 25,010.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass

import torch
from torch.nn import functional as F

from .data.eval_sets import RetrievalSet, ZeroShotSet, image_batches
from .data.tokenizer import trim
from .data.transforms import ImageView
from .models.emkum import EMKUM
from .metrics import IMAGENET_TOP1, IMAGENET_TOP5, METRICS, RECALLS, keyed
from .models.fusion import FusionHead


@dataclass(frozen=True)
class EvalContext:
    """What evaluation needs besides the model and the sets; ``EvalContext.of(cfg, ...)`` reads it from a config."""
    device: torch.device
    pad_id: int
    view: ImageView
    batch_size: int = 256
    chunk: int = 1024
    num_workers: int = 0
    rerank_sets: tuple = ()
    rerank_k: int = 10
    amp: object = None               # an autocast context for the forward passes; None = full precision

    @classmethod
    def of(cls, cfg, device: torch.device, pad_id: int, amp=None) -> "EvalContext":
        e = cfg.eval
        return cls(device, pad_id, ImageView(cfg.model.image.img_size, cfg.data.mean, cfg.data.std), e.batch_size,
                   e.retrieval_chunk, cfg.data.num_workers, tuple(e.rerank_sets), e.rerank_k, amp)


@torch.no_grad()
def retrieval_recalls(image_emb: torch.Tensor, text_emb: torch.Tensor, text_to_image: torch.Tensor,
                      chunk: int = 2048) -> dict:
    """image_emb (N, D), text_emb (T, D) L2-normalised; text_to_image (T,): the image of each caption.

    The similarity matrix is computed once, one chunk of images at a time: each chunk gives the images' top-10
    captions (text retrieval) and is merged into every caption's running top-10 images (image retrieval)."""
    ks = (1, 5, 10)
    text_to_image = text_to_image.to(image_emb.device)
    n_img, n_txt = len(image_emb), len(text_emb)
    k_txt, k_img = min(max(ks), n_txt), min(max(ks), n_img)
    tr = torch.zeros(len(ks), device=image_emb.device)
    best_val = torch.full((n_txt, 0), float("-inf"), device=image_emb.device)
    best_idx = torch.zeros((n_txt, 0), dtype=torch.long, device=image_emb.device)
    for start in range(0, n_img, chunk):
        sims = text_emb @ image_emb[start:start + chunk].T                           # (T, c): the faster orientation
        top = sims.topk(k_txt, dim=0).indices.T                                 # (c, 10) captions per image
        own = text_to_image[top] == torch.arange(start, start + sims.shape[1], device=sims.device)[:, None]
        tr += torch.stack([own[:, :k].any(1).sum() for k in ks])
        col_val, col_idx = sims.topk(min(k_img, sims.shape[1]), dim=1)          # (T, ≤10) within this chunk
        merged_val = torch.cat([best_val, col_val], 1)
        merged_idx = torch.cat([best_idx, col_idx + start], 1)
        keep = merged_val.topk(min(k_img, merged_val.shape[1]), dim=1)
        best_val, best_idx = keep.values, merged_idx.gather(1, keep.indices)
    own = best_idx == text_to_image[:, None]
    ir = torch.stack([own[:, :k].any(1).sum() for k in ks])
    recalls = torch.cat([100 * tr / n_img, 100 * ir / n_txt]).tolist()
    out = dict(zip(RECALLS, recalls))
    out["mean"] = sum(recalls) / len(recalls)
    return out


@torch.no_grad()
def zero_shot_accuracy(image_emb: torch.Tensor, class_emb: torch.Tensor, labels: torch.Tensor) -> dict:
    """image_emb (N, D), class_emb (C, D) L2-normalised; labels (N,). Top-1 and top-5 accuracy in percent."""
    logits = 100.0 * image_emb @ class_emb.T
    top = logits.topk(min(5, class_emb.shape[0]), dim=1).indices
    hit = top == labels.to(top.device)[:, None]
    return {"top1": 100 * hit[:, 0].float().mean().item(), "top5": 100 * hit.any(1).float().mean().item()}


@torch.no_grad()
def embed_images(model: EMKUM, images, ctx: EvalContext) -> torch.Tensor:
    out = []
    for x in image_batches(images, ctx.view, ctx.batch_size, ctx.num_workers):
        with ctx.amp or torch.autocast(ctx.device.type, enabled=False):
            out.append(model.encode_image(x.to(ctx.device, non_blocking=True)).x.float())
    return torch.cat(out)


@torch.no_grad()
def embed_texts(model: EMKUM, tokens: torch.Tensor, pad_id: int, device, batch_size: int,
                autocast=None) -> torch.Tensor:
    """Captions are batched in order of length so each batch carries little padding; the output keeps the input
    order (exact: every caption is encoded on its own, pads are masked)."""
    order = tokens.ne(pad_id).sum(1).argsort()
    out = torch.empty(len(tokens), model.cfg.dim, device=device)
    for start in range(0, len(tokens), batch_size):
        idx = order[start:start + batch_size]
        t = trim(tokens[idx], pad_id).to(device, non_blocking=True)
        with autocast or torch.autocast(device.type, enabled=False):
            out[idx.to(device)] = model.encode_text(t).x.float()
    return out


@torch.no_grad()
def zero_shot_classifier(model: EMKUM, zs: ZeroShotSet, pad_id: int, device, batch_size: int, autocast=None):
    """(C, D): every prompt of every class encoded in batches, averaged per class, renormalised."""
    emb = embed_texts(model, zs.prompt_tokens, pad_id, device, batch_size, autocast)
    per_class = emb.view(len(zs.classnames), len(zs.templates), -1).mean(1)
    return torch.nn.functional.normalize(per_class, dim=-1)


@torch.no_grad()
def evaluate(model: EMKUM, retrieval_sets: list[RetrievalSet], zero_shot: ZeroShotSet, ctx: EvalContext,
             extras: dict | None = None) -> dict:
    """All metrics of the chapter's tables, flat: imagenet_top1/top5, coco_mean, coco_tr@1, ..., flickr_mean, ...
    With a fusion head also <set>_itm_acc and <set>_rerank_* for the sets in ``ctx.rerank_sets``; the switches'
    choices then go into ``extras``."""
    was_training = model.training
    model.eval()
    bs, device, pad_id, autocast = ctx.batch_size, ctx.device, ctx.pad_id, ctx.amp
    metrics = {}
    classes = zero_shot_classifier(model, zero_shot, pad_id, device, bs, autocast)
    acc = zero_shot_accuracy(embed_images(model, zero_shot.images, ctx), classes, zero_shot.labels)
    metrics.update({IMAGENET_TOP1: acc["top1"], IMAGENET_TOP5: acc["top5"]})
    for rs in retrieval_sets:
        name = test_set(rs)
        img = embed_images(model, rs.images, ctx)
        txt = embed_texts(model, rs.tokens, pad_id, device, bs, autocast)
        metrics.update(keyed(name, retrieval_recalls(img, txt, rs.text_to_image, ctx.chunk)))
        if getattr(model, "fusion", None) is not None and name in ctx.rerank_sets:
            fm = fusion_metrics(model, rs, img @ txt.t(), ctx)
            metrics.update(keyed(name, fm["metrics"]))
            if extras is not None:
                extras[f"{name}_switch_choices"] = fm["choices"]
    model.train(was_training)
    return metrics


def test_set(rs: RetrievalSet) -> str:
    """The test set a retrieval set's metrics are stored under (``thesis_lib.metrics``): coco, or flickr."""
    return "coco" if rs.name == "coco" else "flickr"


def chance_levels(retrieval_sets: list[RetrievalSet], zero_shot: ZeroShotSet) -> dict:
    """What a model that ranks at random would score (percent) on the chapter's tables' metrics
    (``metrics.Metric.chance``), to print beside the measured numbers."""
    sizes = {"imagenet": (len(zero_shot.labels), len(zero_shot.classnames))}
    sizes |= {test_set(rs): (int(rs.text_to_image.max()) + 1, len(rs.text_to_image)) for rs in retrieval_sets}
    return {k: m.chance(sizes) for k, m in METRICS.items() if m.table and m.test_set in sizes}


# ------------------------------------------------------- the fusion head: image-text matching and re-ranking

@torch.no_grad()
def token_sequences(model, images, tokens, ctx: EvalContext) -> tuple:
    """The shared part's output sequences of every image and caption of a retrieval set (captions padded to the
    longest; pads are masked wherever they go)."""
    bs, device, pad_id, amp = ctx.batch_size, ctx.device, ctx.pad_id, ctx.amp or contextlib.nullcontext()
    img = []
    for x in image_batches(images, ctx.view, bs, ctx.num_workers):
        with amp:
            img.append(model.encode_image(x.to(device)).tokens)
    T = int(tokens.ne(pad_id).sum(1).max())
    txt, pad = [], []
    for start in range(0, len(tokens), bs):
        with amp:
            f = model.encode_text(trim(tokens[start:start + bs], pad_id).to(device))
        extra = T - f.tokens.shape[1]
        txt.append(F.pad(f.tokens, (0, 0, 0, extra)))
        pad.append(F.pad(f.padding_mask, (0, extra), value=True))
    return torch.cat(img), torch.cat(txt), torch.cat(pad)


@torch.no_grad()
def match_scores(head: FusionHead, img_tok, txt_tok, txt_pad, pairs: torch.Tensor, batch: int, amp, choices=None):
    """ITM evidence logit(match) − logit(no match) of (image, caption) index pairs (P, 2), in batches; the
    switches' hard choices are summed into ``choices`` when given."""
    out = []
    for start in range(0, len(pairs), batch):
        i, t = pairs[start:start + batch].unbind(1)
        with amp:
            logits = head(img_tok[i], txt_tok[t], txt_pad[t]).float()
        out.append(logits[:, 1] - logits[:, 0])
        if choices is not None:
            for key, ws in head.choices().items():
                for layer, w in enumerate(ws):
                    choices[key][layer] = choices[key].get(layer, 0) + w.sum(0)   # on the device: no sync
    return torch.cat(out)


def itm_pairs(sims: torch.Tensor, fits: torch.Tensor, t2i: torch.Tensor):
    """Per image: its first caption, the true negative the dual encoder finds most similar, and a fixed true
    negative (the first false caption from half the set away on). ``fits`` (N_img, N_txt): caption j may describe
    image i (``RetrievalSet.fits``), so neither negative does."""
    n_img, n_txt = fits.shape
    first = (t2i[None, :] == torch.arange(n_img, device=fits.device)[:, None]).float().argmax(1)
    hardest = sims.masked_fill(fits, float("-inf")).argmax(1)
    start = first[(torch.arange(n_img, device=fits.device) + n_img // 2) % n_img]
    distance = (torch.arange(n_txt, device=fits.device)[None, :] - start[:, None]) % n_txt
    return first, hardest, distance.masked_fill(fits, n_txt).argmin(1)


@torch.no_grad()
def fusion_metrics(model, rs, sims: torch.Tensor, ctx: EvalContext) -> dict:
    """Pairwise ITM accuracy (how often the head scores an image's first caption above a true negative: the one the
    dual encoder finds most similar, ``itm_acc``, or a fixed one, the first from half the set away, ``itm_acc_random``;
    chance 50 %) and retrieval re-ranked by the ITM head: the dual
    encoder's top-k candidates of every query re-scored (k = eval.rerank_k ≥ 10, so R@1/5/10 are exact).
    Also the switches' hard choices on the re-ranking pairs."""
    k, bs, device, amp = ctx.rerank_k, ctx.batch_size, ctx.device, ctx.amp or contextlib.nullcontext()
    if k < 10:
        raise ValueError(f"eval.rerank_k must be at least 10 for R@10, got {k}")
    head = model.fusion                                                      # evaluate() has set eval mode
    img_tok, txt_tok, txt_pad = token_sequences(model, rs.images, rs.tokens, ctx)
    t2i = rs.text_to_image.to(device)
    n_img = img_tok.shape[0]
    rows = torch.arange(n_img, device=device)
    first, hardest, other = itm_pairs(sims, rs.fits().to(device), t2i)
    pairs = torch.cat([torch.stack([rows, c], 1) for c in (first, hardest, other)])
    pos, hard, rand = match_scores(head, img_tok, txt_tok, txt_pad, pairs, bs, amp).view(3, n_img)
    acc = {name: (100 * ((pos > neg).float() + 0.5 * (pos == neg).float()).mean()).item()   # ties count ½
           for name, neg in (("itm_acc", hard), ("itm_acc_random", rand))}
    choices = {"modes": {}, "inputs": {}}
    k_t, k_i = min(k, len(t2i)), min(k, n_img)               # a test set smaller than k: every candidate re-scored
    top_t = sims.topk(k_t, dim=1).indices                                          # (N_img, k) captions
    s = match_scores(head, img_tok, txt_tok, txt_pad, torch.stack([rows.repeat_interleave(k_t), top_t.flatten()], 1),
                     bs, amp, choices).view(n_img, k_t)
    ranked_t = top_t.gather(1, s.argsort(1, descending=True))
    top_i = sims.t().topk(k_i, dim=1).indices                                      # (N_txt, k) images
    cap = torch.arange(len(t2i), device=device)
    s = match_scores(head, img_tok, txt_tok, txt_pad, torch.stack([top_i.flatten(), cap.repeat_interleave(k_i)], 1),
                     bs, amp, choices).view(len(t2i), k_i)
    ranked_i = top_i.gather(1, s.argsort(1, descending=True))
    out = dict(acc)
    for K in (1, 5, 10):
        out[f"rerank_tr@{K}"] = 100 * (t2i[ranked_t[:, :K]] == rows[:, None]).any(1).float().mean().item()
        out[f"rerank_ir@{K}"] = 100 * (ranked_i[:, :K] == t2i[:, None]).any(1).float().mean().item()
    out["rerank_mean"] = sum(out[f"rerank_{d}@{K}"] for d in ("tr", "ir") for K in (1, 5, 10)) / 6
    total = {key: {layer: (c / c.sum()).tolist() for layer, c in v.items()} for key, v in choices.items()}
    return {"metrics": out, "choices": {key: [v[layer] for layer in sorted(v)] for key, v in total.items()}}

