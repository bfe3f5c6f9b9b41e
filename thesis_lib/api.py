"""A trained EMKUM in hand, as open_clip gives one (docs/evaluate.md, "Using a trained model"):

    m = thesis_lib.load("tte-long")                  # a shipped model (thesis_lib.list_models()), or a checkpoint file
    pictures, captions = thesis_lib.examples()       # generated 32-px test pictures and their own captions
    scores, indices = thesis_lib.rank(m.encode_image(pictures), m.encode_text(captions), k=3)

``load`` reads a shipped model or a run's checkpoint (file I/O: the model is never trained) and returns a ``Loaded``:
the model, its tokenizer and the evaluation's image view. The shipped models (``MODELS``) carry their tokenizer, so a
first call needs no data folder and generates nothing. Its ``encode_image``/``encode_text`` are the evaluation's own
(``evaluation.embed_images``, ``evaluation.embed_texts``): the L2-normalised CLS of the shared block that scores
retrieval and zero-shot, in the same precision and batches. ``rank`` orders candidates by cosine similarity, as
retrieval does (the dual encoder; a fusion variant's ITM re-ranking is the evaluation's alone).
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import torch
from PIL import Image

from .analysis import checkpoint_config, load_trained, read_checkpoint
from .config import ExperimentConfig
from .config_checks import location_overrides
from .data.tokenizer import CaptionTokenizer, demo_tokenizer, load_tokenizer, tokenize, uses_demo_tokenizer
from .data.transforms import eval_transform
from .errors import CheckpointError, DataError
from .evaluation import EvalContext, embed_images, embed_texts
from .models.emkum import EMKUM
from .paths import ASSETS
from .training.engine import autocast
from .training.prepare import prepare_assets
from .training.run import resolve_device


@dataclasses.dataclass
class Loaded:
    """A checkpoint's model and what feeds it: ``model`` (EMKUM, eval mode, on the device), ``tokenizer`` (the run's
    caption tokenizer), ``transform`` (the evaluation's view of one PIL image: Resize((S, S)) bicubic, scaled to
    [0, 1], normalised by the preset's mean and std → float (3, S, S); torchvision's, as the evaluation applies to
    image files), ``config`` (the run's resolved config), ``context`` (the evaluation's settings: device, pad id,
    image view, batch size, precision) and ``step`` (the checkpoint's; ``config.train.steps`` when finished)."""
    model: EMKUM
    tokenizer: CaptionTokenizer
    transform: object
    config: ExperimentConfig
    context: EvalContext
    step: int

    def tokenize(self, captions) -> torch.Tensor:
        """A caption or a list of them → int32 token ids (B, max_len), padded with the tokenizer's pad id: the
        evaluation sets' form (``data.tokenizer.tokenize``)."""
        return tokenize(self.tokenizer, [captions] if isinstance(captions, str) else list(captions))

    def encode_image(self, images) -> torch.Tensor:
        """(B, D) L2-normalised image embeddings in the shared space, on the model's device, in the input's order.
        ``images``: a PIL image, a path, or a list of them (the evaluation's path for image files: ``transform``,
        resized to S × S); a uint8 tensor (B, 3, S, S) or (3, S, S) already at the model's size S (the evaluation's
        path for images in memory: only normalised); or a float tensor of ``transform``'s outputs stacked."""
        if isinstance(images, torch.Tensor):
            views = images.unsqueeze(0) if images.dim() == 3 else images
            _check_views(views, self.context.view.size)
            if views.dtype == torch.uint8:
                return embed_images(self.model, views, self.context)
            if not views.is_floating_point():
                raise DataError(f"image tensors are uint8 pixels or float views (transform's), not {views.dtype}")
            return _embed_views(self.model, views, self.context)
        images = [images] if isinstance(images, (str, Path, Image.Image)) else list(images)
        if not images:
            raise DataError("encode_image got no images")
        return embed_images(self.model, images, self.context)

    def encode_text(self, captions) -> torch.Tensor:
        """(B, D) L2-normalised caption embeddings in the shared space, on the model's device, in the input's order.
        ``captions``: a string, a list of strings, or a token tensor (B, L) as ``tokenize`` gives (pads masked)."""
        tokens = captions if isinstance(captions, torch.Tensor) else self.tokenize(captions)
        if tokens.dim() != 2 or tokens.is_floating_point():
            raise DataError(f"token ids are an integer tensor (B, L), as tokenize gives; got {tuple(tokens.shape)} "
                            f"{tokens.dtype}")
        c = self.context
        return embed_texts(self.model, tokens.cpu(), c.pad_id, c.device, c.batch_size, c.amp)


SHIPPED = ASSETS / "models"
MODELS = {   # the shipped models: the long schedule's pair of one confirmation seed (docs/evaluate.md)
    "baseline-long": "demo-long-baseline-seed9.pt",       # EMKUM without TTE, 5,952 steps
    "tte-long": "demo-long-tte_after_ls-seed9.pt",        # the TTE' (after the encoders, LayerScale), 5,952 steps
}


def ship(checkpoint, path) -> Path:
    """Write a run's checkpoint as a shipped model: its weights, config and step (no optimiser state)."""
    state = read_checkpoint(checkpoint)
    torch.save({k: state[k] for k in ("model", "config", "step")}, path)
    return Path(path)


def list_models() -> list[str]:
    """The names ``load`` takes for the shipped models (weights, config and step; their tokenizer beside them)."""
    return list(MODELS)


def examples() -> tuple[list[Image.Image], list[str]]:
    """A few pictures of the demo's COCO-like test set (generated, 32 pixels a side) and each one's own caption,
    shipped beside the models so that they can be tried without a data folder."""
    shown = json.loads((SHIPPED / "examples.json").read_text())
    return [Image.open(SHIPPED / e["file"]).convert("RGB") for e in shown], [e["caption"] for e in shown]


def load(checkpoint, device: str = "cpu", *, data_root: str | None = None,
         checkpoints: str | None = None) -> Loaded:
    """The model of a shipped model's name (``list_models``) or a run's ``checkpoint.pt``, with its tokenizer and
    image view (a ``Loaded``), on ``device`` (cpu, cuda, cuda:N, auto). ``data_root``/``checkpoints``: where the real
    data and the original tokenizer files lie on this machine (as ``python -m thesis_lib.evaluate``; default: the
    folders in the checkpoint's config). A shipped model's tokenizer ships beside it; another demo or smoke run's
    comes from its generated world, built on first use as the evaluation builds it (cached; no weights are
    trained). A CheckpointError for a missing file, a folder or a file that is not a thesis_lib run's checkpoint; a
    ConfigError for a config this version cannot resolve; a DeviceError."""
    dev = resolve_device(device)
    shipped = isinstance(checkpoint, str) and checkpoint in MODELS
    if isinstance(checkpoint, str) and not shipped and not Path(checkpoint).exists() and "/" not in checkpoint \
            and not checkpoint.endswith(".pt"):
        raise CheckpointError(f"no shipped model {checkpoint!r}: thesis_lib.list_models() gives "
                              f"{', '.join(MODELS)}; or pass a run's checkpoint file")
    state = read_checkpoint(SHIPPED / MODELS[checkpoint] if shipped else checkpoint)
    cfg = checkpoint_config(state, f"checkpoint {checkpoint}", location_overrides(data_root, checkpoints))
    if shipped:
        tokenizer = demo_tokenizer(SHIPPED, cfg.model.text)
    else:
        tokenizer = load_tokenizer(cfg, prepare_assets(cfg, pretrained=False) if uses_demo_tokenizer(cfg) else None)
    model = load_trained(state, dev, cfg)
    ctx = dataclasses.replace(EvalContext.of(cfg, dev, tokenizer.pad_id, autocast(cfg.train.precision, dev)),
                              num_workers=0)              # a reader's handful of pictures: no worker processes
    view = ctx.view
    return Loaded(model, tokenizer, eval_transform(view.size, view.mean, view.std), cfg, ctx, int(state["step"]))


def rank(queries: torch.Tensor, candidates: torch.Tensor, k: int = 5):
    """Each query's top-``k`` candidates by cosine similarity (both L2-normalised, (Q, D) and (N, D)), best first:
    ``torch.topk``'s (values, indices), each (Q, min(k, N)); values are the similarities. Images as queries and
    captions as candidates is text retrieval; the other way round, image retrieval."""
    sims = queries.float() @ candidates.to(queries.device).float().T
    return sims.topk(min(k, sims.shape[1]), dim=1)


def _check_views(views: torch.Tensor, size: int) -> None:
    if views.dim() != 4 or tuple(views.shape[1:]) != (3, size, size):
        raise DataError(f"image tensors are (B, 3, {size}, {size}) at this model's size; got {tuple(views.shape)}: "
                        "pass PIL images or files (resized as the evaluation resizes them) instead")


@torch.no_grad()
def _embed_views(model: EMKUM, views: torch.Tensor, ctx: EvalContext) -> torch.Tensor:
    """Float views (``transform``'s) through what ``evaluation.embed_images`` does with each batch it builds."""
    out = []
    for x in views.split(ctx.batch_size):
        with ctx.amp or torch.autocast(ctx.device.type, enabled=False):
            out.append(model.encode_image(x.to(ctx.device, non_blocking=True)).x.float())
    return torch.cat(out)
