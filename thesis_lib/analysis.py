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
import copy
from pathlib import Path

import numpy as np
import torch

from .stored_config import config_of
from .errors import CheckpointError, ConfigError
from .evaluation import EvalContext, evaluate
from .metrics import ABLATED
from .models.checkpoints import load_strict, torch_load
from .models.emkum import IMAGE, TEXT, build_model
from .version import __version__

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


class WithTypes:
    """An evaluation-side view of an EMKUM whose forward uses the given type vectors (``models.emkum.TYPES``:
    "removed" or "swapped"): ``evaluate`` calls its ``encode_image``/``encode_text``; all else is the model's."""

    def __init__(self, model, types: str):
        self.model, self.types = model, types

    def encode_image(self, images):
        return self.model.encode_image(images, self.types)

    def encode_text(self, tokens):
        return self.model.encode_text(tokens, self.types)

    def __getattr__(self, name):
        return getattr(self.model, name)


def tte_ablation_metrics(model, retrieval, zero_shot, ctx: EvalContext) -> dict:
    """The trained model evaluated with its TTE removed and with the modalities' type vectors swapped, on the
    metrics the registry marks ``ablated``."""
    out = {}
    for types in ("removed", "swapped"):
        m = evaluate(WithTypes(model, types), retrieval, zero_shot, ctx)
        out[types] = {k: m[k] for k in ABLATED}
    return out


def _encoder_tokens(model, images: torch.Tensor, tokens: torch.Tensor, types: str = "own"):
    """H'_L of both modalities under a TTE ablation: [(modality, (B, T, D) vectors, (B, T) True where a token is
    real)] for the images and the captions."""
    out = []
    with evaluating(model):
        for modality, inputs in ((IMAGE, images), (TEXT, tokens)):
            h, pad = model.encoder_outputs(inputs, modality, types)
            real = torch.ones(h.shape[:2], dtype=torch.bool, device=h.device) if pad is None else ~pad
            out.append((modality, h.float(), real))
    return out


@torch.no_grad()
def tte_contribution(model, images: torch.Tensor, tokens: torch.Tensor) -> dict | None:
    """‖γ ⊙ t_type‖ / ‖H_L‖ averaged over the real tokens, per modality ({"image", "text"}); None without a TTE
    after the encoders. H_L is the encoder output without the TTE."""
    if model.tte.place != "after":
        return None
    out = {}
    for modality, h, real in _encoder_tokens(model, images, tokens, "removed"):
        added = model.tte_scale(model.type_vector(modality)).float().norm()
        out["image" if modality == IMAGE else "text"] = (added / h.norm(dim=-1))[real].mean().item()
    return out


def tte_monitor(model, images: torch.Tensor, tokens: torch.Tensor):
    """For ``train_loop``'s log rows: a function of the model giving {"tte_ratio": tte_contribution(...)} on fixed
    inputs; None for a variant without a TTE after the encoders."""
    if model.tte.place != "after":
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


CHECKPOINT_KEYS = ("model", "config", "step")      # what every checkpoint of a run holds (training.engine)


def read_checkpoint(path) -> dict:
    """A run's checkpoint (``results/<preset>/<variant>/seed<N>/checkpoint.pt``) as training saved it: the model's
    weights, its ``config``, its ``step``, the optimiser's state. A CheckpointError that names the file for a missing
    file, a folder, a file torch cannot read, or one that is not a checkpoint of a thesis_lib run."""
    path = Path(path)
    if path.is_dir():
        inside = path / "checkpoint.pt"
        raise CheckpointError(f"{path} is a folder, not a checkpoint file" +
                              (f"; its run's checkpoint is {inside}" if inside.is_file() else ""))
    if not path.exists():
        raise CheckpointError(f"checkpoint not found: {path}")
    try:
        state = torch_load(path)
    except CheckpointError as err:
        raise CheckpointError(f"{path} is not a checkpoint of a thesis_lib run: {err}") from None
    if not _is_run_checkpoint(state):
        raise CheckpointError(f"{path} is not a checkpoint of a thesis_lib run (it lacks the model, config or step "
                              "that training saves in results/<preset>/<variant>/seed<N>/checkpoint.pt)")
    return state


def _is_run_checkpoint(state) -> bool:
    if not (isinstance(state, dict) and all(k in state for k in CHECKPOINT_KEYS) and isinstance(state["config"], dict)):
        return False
    stored = state["config"]
    return {"preset", "seed"} <= set(stored) and isinstance(stored.get("model"), dict) and "variant" in stored["model"]


def checkpoint_config(state: dict, source="the checkpoint", paths: dict | None = None):
    """The resolved config of a checkpoint's run (``stored_config.config_of`` of its stored config), with ``paths``
    replacing where the files lie on this machine ({"data.root": …, "weights.checkpoint_dir": …}). A stored config
    this thesis_lib cannot resolve (an unknown preset, variant or field) is a ConfigError naming ``source``."""
    stored = copy.deepcopy(state["config"])
    for key, value in (paths or {}).items():
        section, name = key.split(".")
        stored.setdefault(section, {})[name] = value
    try:
        return config_of(stored)
    except ConfigError as err:
        raise ConfigError(f"{source} holds a config that thesis_lib {__version__} cannot resolve: {err}") from None


def load_trained(checkpoint, device="cpu", config=None):
    """The EMKUM of a run's checkpoint (a path, or ``read_checkpoint``'s dict), in eval mode, built from ``config``
    (default: the config stored with it) without any pretrained files (the checkpoint holds every weight); weights
    that do not fit that model are a CheckpointError naming each key."""
    state = checkpoint if isinstance(checkpoint, dict) else read_checkpoint(checkpoint)
    source = "the checkpoint" if isinstance(checkpoint, dict) else f"checkpoint {checkpoint}"
    model = build_model(config or checkpoint_config(state, source), pretrained=False)
    load_strict(model, state["model"], source)
    return model.to(device).eval()
