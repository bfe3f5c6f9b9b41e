"""The demo's pretrained parts, made once and cached: stand-ins for Data2Vec2 (image, text) and BEiT v2.

The thesis starts from encoders pretrained on one modality each and distils from a frozen image teacher. At the
demo scale these are trained here, on the world's unimodal corpora, with the same classes as at the thesis scale:

* image encoder (Data2Vec2 image class, 2 × the kept depth): masked-patch prediction (SimMIM-style: half of the
  patch embeddings replaced by a learned mask token, the normalised pixels of those patches regressed);
* text encoder (Data2Vec2 text class, 2 × the kept depth): masked language modelling (15 %, BERT's 80/10/10);
* teacher (timm BEiT with the pretraining layout): multi-label classification of the colour-shape pairs, colours
  and shapes in the picture, from images only (it never sees a caption), standing in for BEiT v2's semantic CLS.

The image corpus is half scenes, half object-centric pictures (as ImageNet-1K, on which Data2Vec2 and BEiT v2 were
pretrained, is object-centric); the teacher's held-out AUC is reported on each half.

They are written in the original files' layouts (``base_imagenet.pt``, ``nlp_base.pt``, the BEiT v2 ``.pth``), so
every demo run loads them through ``thesis_lib.models.checkpoints`` exactly as the thesis scale loads the real files;
the student keeps the first half of each encoder's blocks, as the thesis keeps 6 of 12.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import torch
from scipy.stats import mannwhitneyu
from torch import nn
from torch.nn import functional as F
from tqdm import tqdm

from ..cache import build_once
from ..config import ExperimentConfig
from ..data import world
from ..data.datasets import load_uint8
from ..data.roots import data_root
from ..data.tokenizer import demo_tokenizer, tokenize, trim
from ..data.train_pairs import mix
from ..data.transforms import BatchAugment
from ..models.checkpoints import save_beitv2, save_data2vec2_image, save_data2vec2_text
from ..models.encoders import Data2Vec2ImageEncoder, Data2Vec2TextEncoder
from ..models.representations import patchify
from ..models.sources import DEMO_FILES, demo_folder, demo_key, demo_part
from ..models.teacher import Teacher, build_beit
from ..numerics import written_on
from ..paths import show_progress


def demo_weights(cfg: ExperimentConfig) -> dict[str, Path]:
    """Paths of the demo's pretrained image encoder, text encoder and teacher: shipped, cached, or pretrained here."""
    folder = demo_folder(cfg)
    build_once(folder / "DONE", lambda: build_demo_weights(cfg, folder))
    return {part: folder / name for part, name in DEMO_FILES.items()}


def code_digest() -> str:
    """SHA-256 of this module's source: the shipped stand-ins record the code that built them (a test compares)."""
    return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()


def build_demo_weights(cfg: ExperimentConfig, folder: Path) -> None:
    """Pretrain the three parts into ``folder`` with ``pretrain.json`` (what they depend on, the code, the CPU
    they were computed on, their held-out scores) and ``DONE`` last."""
    folder.mkdir(parents=True, exist_ok=True)
    report = pretrain_all(cfg, folder)
    info = {"config": demo_key(cfg), "code": code_digest(), "written_on": written_on(), "report": report}
    (folder / "pretrain.json").write_text(json.dumps(info, indent=1))
    (folder / "DONE").write_text("")


def pretrain_report(cfg: ExperimentConfig) -> dict:
    """What the demo pretraining reached (held-out scores), for the notebooks."""
    demo_part(cfg, "image")                                   # an error naming the preparation step if missing
    return json.loads((demo_folder(cfg) / "pretrain.json").read_text())["report"]


def _fit(params, steps: int, lr: float, loss_fn, desc: str) -> float:
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.05, betas=(0.9, 0.98), fused=True)
    warmup = max(1, steps // 10)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warmup) * 0.5 * (1 + np.cos(np.pi * min(s, steps) / steps)))
    last = float("nan")
    for step in tqdm(range(steps), desc=desc, disable=not show_progress(), leave=False):
        loss = loss_fn(step)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        last = loss.item() if step % 20 == 0 or step == steps - 1 else last
    return last


def pretrain_all(cfg: ExperimentConfig, folder: Path) -> dict:
    root = data_root(cfg)
    labels = json.loads((root / "corpus" / "labels.json").read_text())
    images = load_uint8([str(root / "corpus" / e["file"]) for e in labels["images"]], cfg.model.image.img_size)
    multi_hot = torch.zeros(len(images), len(labels["classes"]))
    for i, e in enumerate(labels["images"]):
        multi_hot[i, e["labels"]] = 1
    kinds = [e["kind"] for e in labels["images"]]
    lines = (root / "corpus" / "captions.txt").read_text().splitlines()
    tok = demo_tokenizer(root, cfg.model.text)
    with torch.random.fork_rng(devices=[]):     # seeds its own stream; the caller's (a training run's) is untouched
        return {"teacher": pretrain_teacher(cfg, images, multi_hot, kinds, folder),
                "image": pretrain_image(cfg, images, folder),
                "text": pretrain_text(cfg, tokenize(tok, lines), tok.mask_id, folder)}


def _split(n: int) -> tuple[int, torch.Tensor]:
    held = max(1, n // 10)                                   # the last 10 % is held out for the report
    return n - held, torch.arange(n - held, n)


def _auc(scores: torch.Tensor, truth: torch.Tensor) -> float:
    """Mean over labels (columns) of the ROC AUC, P(positive scores above negative) with ties counted ½: the
    Mann-Whitney U of the positives over n_pos · n_neg (scipy.stats.mannwhitneyu docs). A label without both classes
    has no AUC (NaN) and is left out of the mean; NaN when no label has both."""
    aucs = []
    for s, t in zip(scores.T.double().numpy(), truth.T.bool().numpy()):
        pos, neg = s[t], s[~t]
        if len(pos) and len(neg):
            aucs.append(float(mannwhitneyu(pos, neg, method="asymptotic").statistic) / (len(pos) * len(neg)))
    return sum(aucs) / len(aucs) if aucs else float("nan")


def pretrain_teacher(cfg, images, multi_hot, kinds, folder) -> dict:
    """Targets: which colour-shape pairs are present (48), which colours (8) and which shapes (6). The loss is the
    mean binary cross-entropy within each of the three groups, the shapes' weighted by ``teacher_shape_weight``
    (shape is the harder attribute: with equal weights the held-out shape AUC stays near 0.7 at this budget)."""
    torch.manual_seed(cfg.data.world.seed)
    p = cfg.pretrain
    beit = build_beit(cfg.teacher, cfg.model.image.img_size)
    n, n_colours, n_shapes = multi_hot.shape[1], len(world.COLOURS), len(world.SHAPES)
    groups = {"colour_shape": slice(0, n), "colour": slice(n, n + n_colours), "shape": slice(n + n_colours, None)}
    weights = {"colour_shape": 1.0, "colour": 1.0, "shape": p.teacher_shape_weight}
    labels = torch.cat([multi_hot, multi_hot.view(-1, n_colours, n_shapes).amax(2),
                        multi_hot.view(-1, n_colours, n_shapes).amax(1)], dim=1)
    head = nn.Linear(cfg.teacher.dim, labels.shape[1])
    aug = BatchAugment(cfg.data.crop_scale, cfg.data.mean, cfg.data.std, jitter=0.4)
    n_train, held = _split(len(images))

    def loss_fn(step):
        g = torch.Generator().manual_seed(mix(1, step))
        idx = torch.randint(n_train, (p.batch_size,), generator=g)
        logits = head(beit.forward_features(aug(images[idx], g))[:, 0])
        return sum(w * F.binary_cross_entropy_with_logits(logits[:, groups[k]], labels[idx, groups[k]])
                   for k, w in weights.items())

    loss = _fit(list(beit.parameters()) + list(head.parameters()), p.teacher_steps, p.lr, loss_fn,
                "pretraining the demo teacher")
    with torch.no_grad():
        x = BatchAugment(cfg.data.crop_scale, cfg.data.mean, cfg.data.std)(images[held], torch.Generator())
        scores = head(beit.forward_features(x)[:, 0])
    save_beitv2(Teacher(beit, cfg.teacher.final_norm), folder / DEMO_FILES["teacher"])
    report = {"steps": p.teacher_steps, "final_loss": loss}
    for kind in ("object", "scene"):       # held-out AUC on object-centric pictures and on scenes, apart
        rows = torch.tensor([kinds[i] == kind for i in held.tolist()])
        for k, cols in groups.items():
            report[f"held_out_auc_{k}" + ("" if kind == "object" else "_scenes")] = \
                _auc(scores[rows][:, cols], labels[held][rows][:, cols])
    return report


def pretrain_image(cfg, images, folder) -> dict:
    torch.manual_seed(cfg.data.world.seed + 1)
    m, p = cfg.model, cfg.pretrain
    enc = Data2Vec2ImageEncoder(m.image, m.dim, m.image_depth * p.depth_factor, m.num_heads, m.mlp_ratio,
                                m.image_norm_eps)
    mask_token = nn.Parameter(torch.zeros(1, 1, m.dim))
    head = nn.Linear(m.dim, m.image.patch_dim)
    aug = BatchAugment(cfg.data.crop_scale, cfg.data.mean, cfg.data.std)
    n_train, held = _split(len(images))

    def masked_loss(x, g):
        target = patchify(x, m.image.patch_size)      # (B, N, C·P²); not normalised per patch (MAE's option),
        patches = enc.embed.patch_embed(x)             # which would erase the colour of flat patches
        mask = torch.rand(patches.shape[:2], generator=g) < p.mask_ratio
        patches = torch.where(mask[..., None], mask_token.to(patches.dtype), patches) + enc.embed.pos_embed
        h = torch.cat([enc.embed.cls_token.expand(len(x), -1, -1), patches], 1)
        out = head(enc.blocks(enc.norm(h))[:, 1:])
        return ((out - target) ** 2).mean(-1)[mask].mean()

    def loss_fn(step):
        g = torch.Generator().manual_seed(mix(2, step))
        return masked_loss(aug(images[torch.randint(n_train, (p.batch_size,), generator=g)], g), g)

    loss = _fit(list(enc.parameters()) + [mask_token] + list(head.parameters()), p.image_steps, p.lr, loss_fn,
                "pretraining the demo image encoder")
    with torch.no_grad():
        held_loss = masked_loss(aug(images[held], torch.Generator().manual_seed(0)), torch.Generator().manual_seed(0))
    save_data2vec2_image(enc, folder / DEMO_FILES["image"], m.num_heads)
    return {"steps": p.image_steps, "final_loss": loss, "held_out_masked_mse": held_loss.item()}


def pretrain_text(cfg, tokens, mask_id, folder) -> dict:
    torch.manual_seed(cfg.data.world.seed + 2)
    m, p, t = cfg.model, cfg.pretrain, cfg.model.text
    enc = Data2Vec2TextEncoder(t, m.dim, m.text_depth * p.depth_factor, m.num_heads, m.mlp_ratio, m.text_norm_eps)
    head = nn.Sequential(nn.Linear(m.dim, m.dim), nn.GELU(), nn.LayerNorm(m.dim), nn.Linear(m.dim, t.vocab_size))
    n_train, held = _split(len(tokens))

    def mlm_loss(ids, g):
        ids = trim(ids, t.pad_id)
        special = (ids == t.pad_id) | (ids == t.bos_id) | (ids == t.eos_id)
        chosen = (torch.rand(ids.shape, generator=g) < p.mlm_prob) & ~special
        u = torch.rand(ids.shape, generator=g)
        noisy = torch.where(chosen & (u < 0.8), mask_id, ids)
        noisy = torch.where(chosen & (u >= 0.8) & (u < 0.9), torch.randint(5, t.vocab_size, ids.shape, generator=g), noisy)
        logits = head(enc(noisy)[0])
        return F.cross_entropy(logits[chosen], ids[chosen]), (logits[chosen].argmax(-1) == ids[chosen]).float().mean()

    def loss_fn(step):
        g = torch.Generator().manual_seed(mix(3, step))
        return mlm_loss(tokens[torch.randint(n_train, (p.batch_size,), generator=g)], g)[0]

    loss = _fit(list(enc.parameters()) + list(head.parameters()), p.text_steps, p.lr, loss_fn,
                "pretraining the demo text encoder")
    with torch.no_grad():
        _, acc = mlm_loss(tokens[held], torch.Generator().manual_seed(0))
    save_data2vec2_text(enc, folder / DEMO_FILES["text"], m.num_heads)
    return {"steps": p.text_steps, "final_loss": loss, "held_out_mlm_accuracy": acc.item()}
