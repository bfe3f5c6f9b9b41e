"""What a trained model does with its token-type embedding (notebook 04), on any EMKUM in memory — the one a run has
just trained, or one loaded from a checkpoint (``load_trained``):

* ``tte_ablation_metrics``: the model evaluated with its TTE removed and with the two type vectors swapped;
* ``tte_contribution``: ‖γ ⊙ t_type‖ / ‖H_L‖ per token and modality, how far the TTE moves the shared block's input
  (TTE chapter Eqs. 4-5); ``train_loop`` logs it along training through ``tte_monitor``;
* ``modality_probe``: can a linear classifier tell a picture's token from a caption's token at the shared block's
  input *without* any TTE? If it can, a TTE adds no information the block could not already read (a linear probe:
  Alain & Bengio 2016, arXiv:1610.01644).
"""
from __future__ import annotations

import contextlib

import numpy as np
import torch

from .evaluate import EvalContext, evaluate
from .models.emkum import IMAGE, TEXT, tte_ablation

ABLATION_METRICS = ("imagenet_top1", "imagenet_top5", "coco_mean", "flickr_mean")
PROBE_ITEMS = 256            # test pictures and captions a run's analyses look at (the first of the COCO-like set)


@contextlib.contextmanager
def evaluating(model: torch.nn.Module):
    """Eval mode and no gradients for the block, the model's previous mode restored after it (inside training too)."""
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            yield model
    finally:
        model.train(was_training)


def tte_ablation_metrics(model, retrieval, zero_shot, ctx: EvalContext) -> dict:
    """The trained model evaluated with its TTE removed and with the modalities' type vectors swapped."""
    out = {}
    for mode in ("removed", "swapped"):
        with tte_ablation(model, mode):
            m = evaluate(model, retrieval, zero_shot, ctx)
        out[mode] = {k: m[k] for k in ABLATION_METRICS}
    return out


def _encoder_tokens(model, images: torch.Tensor, tokens: torch.Tensor, mode: str = "none"):
    """H'_L of both modalities under a TTE ablation: [(modality, (B, T, D) vectors, (B, T) True where a token is
    real)] for the images and the captions."""
    out = []
    with evaluating(model), tte_ablation(model, mode):
        for modality, inputs in ((IMAGE, images), (TEXT, tokens)):
            h, pad = model.encoder_outputs(inputs, modality)
            real = torch.ones(h.shape[:2], dtype=torch.bool, device=h.device) if pad is None else ~pad
            out.append((modality, h.float(), real))
    return out


@torch.no_grad()
def tte_contribution(model, images: torch.Tensor, tokens: torch.Tensor) -> dict | None:
    """‖γ ⊙ t_type‖ / ‖H_L‖ averaged over the real tokens, per modality ({"image", "text"}); None without a TTE
    after the encoders. H_L is the encoder output without the TTE."""
    if model.cfg.spec.tte != "after":
        return None
    out = {}
    for modality, h, real in _encoder_tokens(model, images, tokens, "removed"):
        added = model.tte_scale(model.type_vector(modality)).float().norm()
        out["image" if modality == IMAGE else "text"] = (added / h.norm(dim=-1))[real].mean().item()
    return out


def tte_monitor(model, images: torch.Tensor, tokens: torch.Tensor):
    """For ``train_loop``'s log rows: a function of the model giving {"tte_ratio": tte_contribution(...)} on fixed
    inputs; None for a variant without a TTE after the encoders."""
    if model.cfg.spec.tte != "after":
        return None
    return lambda m: {"tte_ratio": tte_contribution(m, images, tokens)}


def modality_probe(model, images: torch.Tensor, tokens: torch.Tensor, per_class: int = 2000, seed: int = 0) -> dict:
    """A logistic-regression probe of the modality on the shared block's input with any TTE removed. Fitted on
    the tokens of the first half of the pictures and of the captions, scored on the other half (no item on both
    sides), ``per_class`` tokens of each modality drawn on each side (balanced: chance is 50 %). Two probes: on the
    whole vector (standardised), and on its norm alone (are the modalities told apart by scale?).
    Returns held-out accuracies in percent and the token counts."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    rng = np.random.default_rng(seed)
    sides = {"fit": ([], []), "held_out": ([], [])}
    for modality, h, real in _encoder_tokens(model, images, tokens, "removed"):
        half = h.shape[0] // 2
        for side, rows in (("fit", slice(0, half)), ("held_out", slice(half, None))):
            x = h[rows][real[rows]].cpu().double().numpy()
            x = x[rng.choice(len(x), size=min(per_class, len(x)), replace=False)]
            sides[side][0].append(x)
            sides[side][1].append(np.full(len(x), modality))
    n = min(len(x) for side in sides.values() for x in side[0])              # balance the two modalities
    (x_fit, y_fit), (x_out, y_out) = ((np.concatenate([x[:n] for x in xs]), np.concatenate([y[:n] for y in ys]))
                                      for xs, ys in sides.values())
    out = {"tokens_per_modality": n}
    for name, view in (("vector", lambda x: x), ("norm", lambda x: np.linalg.norm(x, axis=1, keepdims=True))):
        probe = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000))
        probe.fit(view(x_fit), y_fit)
        out[f"accuracy_{name}"] = 100.0 * float((probe.predict(view(x_out)) == y_out).mean())
    return out


def load_trained(checkpoint, device="cpu"):
    """The EMKUM of a run's checkpoint (``results/<preset>/<variant>/seed<N>/checkpoint.pt``), in eval mode, built
    from the config stored with it and without any pretrained files (the checkpoint holds every weight)."""
    from .config import config_of
    from .models.checkpoints import torch_load
    from .models.emkum import build_model
    state = torch_load(checkpoint)
    model = build_model(config_of(state["config"]), pretrained=False)
    model.load_state_dict(state["model"])
    return model.to(device).eval()
