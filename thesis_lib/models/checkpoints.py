"""Loaders for the original checkpoint files, without fairseq or unilm code (docs/sources.md §7).

* ``base_imagenet.pt`` (fairseq, Data2Vec2 image): prenet blocks + top-level blocks; "the first 6 blocks" are the
  first 6 top-level blocks with any prenet blocks kept in front (the thesis's ``blocks[:6]``).
* ``nlp_base.pt`` (fairseq, Data2Vec2 text): RoBERTa-like embeddings + 12 post-LN blocks; first 6 kept.
* ``beitv2_base_patch16_224_pt1k.pth`` (unilm, BEiT v2 pretraining): loads into timm ``Beit`` after dropping
  ``mask_token``, ``lm_head.*``, ``cls_pt_layers.*`` and ``relative_position_index``.
Keys are mapped by one table per file (used in both directions: the demo's pretrained parts are written in the
same layouts, so the demo runs these loaders too). Every shape is checked; a mismatch raises ``CheckpointError``
naming the missing, unexpected and mis-shaped keys.
"""
from __future__ import annotations

import fnmatch
import importlib.util
import os
import pickle
import re
import types
from pathlib import Path

import torch
from torch import nn

from ..cache import torch_save_atomic
from ..config import ImageConfig, TeacherConfig, TextConfig
from ..errors import CheckpointError
from .encoders import Data2Vec2ImageEncoder, Data2Vec2TextEncoder
from .teacher import Teacher, build_beit

IMG = "modality_encoders.IMAGE."
TXT = "modality_encoders.TEXT."
IMAGE_KEYS = [("embed.patch_embed.proj.", IMG + "local_encoder.proj."), ("embed.cls_token", IMG + "extra_tokens"),
              ("embed.pos_embed", IMG + "fixed_positional_encoder.positions"), ("norm.", IMG + "context_encoder.norm.")]
IMAGE_ALIASES = {IMG + "positional_encoder.pos_embed": IMG + "fixed_positional_encoder.positions"}
TEXT_KEYS = [("embed.embed_tokens.", TXT + "local_encoder.embed_tokens."),
             ("embed.embed_positions.", TXT + "local_encoder.embed_positions."),
             ("norm.", TXT + "local_encoder.layernorm_embedding.")]
BEIT_DROP = ["mask_token", "lm_head.*", "cls_pt_layers.*", "*relative_position_index"]
def _torch_safe_globals() -> list[str]:
    from torch import _weights_only_unpickler
    return list(_weights_only_unpickler._get_allowed_globals())


class _Unknown:
    """Stands in for any class a checkpoint pickled from a package that is not installed (fairseq, argparse ...)."""
    def __init__(self, *args, **kwargs):
        pass

    def __setstate__(self, state):
        self.state = state


# What the fallback unpickler admits: the globals torch's own ``weights_only`` loader allows (tensor and storage
# rebuilders, dtypes, OrderedDict, ``_codecs.encode`` for bytes), plus what the original files pickle besides tensors:
# an argparse Namespace (fairseq's and unilm's "args"), plain builtin types and numpy arrays and scalars (training
# state). fairseq/omegaconf/typing objects become inert placeholders and are never imported. Any other global
# (os.system, subprocess.*, builtins.eval ...) is refused.
SAFE_GLOBALS = {tuple(key.rsplit(".", 1)) for key in _torch_safe_globals()} | {
    ("argparse", "Namespace"), ("collections", "defaultdict"), ("builtins", "frozenset"), ("builtins", "slice"),
    ("builtins", "dict"), ("builtins", "list"), ("builtins", "tuple"), ("builtins", "str"), ("builtins", "int"),
    ("builtins", "float"), ("builtins", "bool"), ("pathlib", "PosixPath"), ("pathlib", "WindowsPath"),
    ("pathlib", "PurePosixPath"), ("numpy", "dtype"), ("numpy", "ndarray"),
    ("numpy.core.multiarray", "scalar"), ("numpy._core.multiarray", "scalar"),
    ("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
}
PLACEHOLDER_PACKAGES = ("fairseq", "omegaconf", "hydra", "typing")


class _GuardedUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        top = module.split(".")[0]
        if (module, name) in SAFE_GLOBALS or (module == "numpy.dtypes" and name.endswith("DType") and "." not in name):
            return super().find_class(module, name)
        if top in PLACEHOLDER_PACKAGES or importlib.util.find_spec(top) is None:
            return _Unknown                                  # a class of a package that is not here: inert stand-in
        raise pickle.UnpicklingError(f"the file refers to {module}.{name}, which a checkpoint has no reason to hold; "
                                     "refused (loading it could run code)")


def _guarded_load(file, **kwargs):
    return _GuardedUnpickler(file, **kwargs).load()


# torch reads a legacy (non-zip) file's header with ``pickle_module.load``: that must be guarded too
_guarded_pickle = types.SimpleNamespace(Unpickler=_GuardedUnpickler, load=_guarded_load, __name__="pickle")


def torch_load(path: str | os.PathLike) -> dict:
    """Open a checkpoint safely (``weights_only``) and fall back to an unpickler that admits only ``SAFE_GLOBALS``
    (the original fairseq/unilm files pickle an argparse Namespace and foreign config classes, which become inert
    placeholders), so no fairseq/unilm install is needed and no code in a file can run."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"checkpoint not found: {path}; download it or pass the right folder")
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError:
        pass
    except Exception as err:
        raise CheckpointError(f"cannot read checkpoint {path}: {err}; "
                              "the file is truncated or not a torch file") from None
    try:
        return torch.load(path, map_location="cpu", weights_only=False, pickle_module=_guarded_pickle)
    except Exception as err:
        raise CheckpointError(f"cannot read checkpoint {path}: {err}") from None


def model_state(ck, path) -> dict:
    sd = ck.get("model", ck.get("module", ck)) if isinstance(ck, dict) else None
    if not isinstance(sd, dict):
        raise CheckpointError(f"{path} holds no state dict (expected a dict with a 'model' entry)")
    return dict(sd)


def load_strict(module: nn.Module, state: dict, what: str, allow_missing=()) -> None:
    """``load_state_dict`` that names every missing, unexpected and mis-shaped key before touching the module."""
    own = module.state_dict()
    missing = [k for k in own if k not in state and not any(fnmatch.fnmatch(k, p) for p in allow_missing)]
    unexpected = [k for k in state if k not in own]
    wrong = [f"{k} {tuple(state[k].shape)} != {tuple(own[k].shape)}" for k in state
             if k in own and tuple(state[k].shape) != tuple(own[k].shape)]
    if missing or unexpected or wrong:
        parts = [f"{label}: {', '.join(keys[:8])}{' ...' if len(keys) > 8 else ''}"
                 for label, keys in (("missing keys", missing), ("unexpected keys", unexpected),
                                     ("wrong shapes (file != model)", wrong)) if keys]
        raise CheckpointError(f"{what} does not fit the model; " + "; ".join(parts))
    module.load_state_dict(state, strict=False)


def _rename(sd: dict, table, reverse=False) -> dict:
    out = {}
    for k, v in sd.items():
        for ours, theirs in table:
            src, dst = (ours, theirs) if reverse else (theirs, ours)
            if k.startswith(src):
                k = dst + k[len(src):]
                break
        out[k] = v
    return out


def _block_ids(sd: dict, pattern: str) -> list[int]:
    return sorted({int(m.group(1)) for k in sd for m in [re.match(pattern, k)] if m})


def _cfg(ck) -> dict:
    cfg = ck.get("cfg") if isinstance(ck, dict) else None
    return cfg.get("model", {}) if isinstance(cfg, dict) and isinstance(cfg.get("model"), dict) else {}


def _select_blocks(sd: dict, prefix: str, keep: int, first: int) -> dict:
    """Renumber ``prefix{n}.`` (n < keep) to ``blocks.blocks.{first + n}.`` and drop the rest."""
    out = {}
    for k, v in sd.items():
        m = re.match(re.escape(prefix) + r"(\d+)\.(.*)", k)
        if not m:
            out[k] = v
        elif int(m.group(1)) < keep:
            out[f"blocks.blocks.{first + int(m.group(1))}.{m.group(2)}"] = v
    return out


def load_data2vec2_image(path, image: ImageConfig, keep: int = 6, num_heads: int = 12,
                         use_ema: bool = False) -> Data2Vec2ImageEncoder:
    """The Data2Vec2 image encoder from ``base_imagenet.pt``: prenet blocks + the first ``keep`` blocks."""
    ck = torch_load(path)
    sd = model_state(ck, path)
    ema = sd.pop("_ema", None)
    if use_ema:
        if not isinstance(ema, dict):
            raise CheckpointError(f"{path} has no '_ema' weights")
        sd = dict(ema)
    sd = {IMAGE_ALIASES.get(k, k): v for k, v in sd.items() if ".decoder." not in k}
    mcfg = _cfg(ck)
    prenet = _block_ids(sd, re.escape(IMG) + r"context_encoder\.blocks\.(\d+)\.")
    top = _block_ids(sd, r"blocks\.(\d+)\.")
    if len(top) < keep:
        raise CheckpointError(f"{path} has {len(top)} blocks; {keep} were requested")
    if IMG + "extra_tokens" not in sd:
        raise CheckpointError(f"{path} is not a Data2Vec2 image checkpoint: missing keys: {IMG}extra_tokens")
    dim = sd[IMG + "extra_tokens"].shape[-1]
    heads = mcfg.get("num_heads", num_heads)
    mlp_ratio = sd["blocks.0.mlp.fc1.weight"].shape[0] / dim if "blocks.0.mlp.fc1.weight" in sd else 4.0
    enc = Data2Vec2ImageEncoder(image, dim, len(prenet) + keep, heads, mlp_ratio, mcfg.get("norm_eps", 1e-6))
    sd = _select_blocks(sd, IMG + "context_encoder.blocks.", len(prenet), 0)
    sd = _select_blocks(sd, "blocks.", keep, len(prenet))
    load_strict(enc, _rename(sd, IMAGE_KEYS), f"Data2Vec2 image checkpoint {path}")
    return enc


D2V1_TEXT = "https://dl.fbaipublicfiles.com/fairseq/data2vec/nlp_base.pt"
D2V2_TEXT = "https://dl.fbaipublicfiles.com/fairseq/data2vec2/nlp_base.pt"


def text_release(state: dict) -> str:
    """Which data2vec text release a state dict is: "2.0", "1.0" (fairseq's RoBERTa-style layout) or ""."""
    if any(k.startswith(TXT) for k in state):
        return "2.0"
    if any(k.startswith(("encoder.sentence_encoder.", "sentence_encoder.")) for k in state):
        return "1.0"
    return ""


def load_data2vec2_text(path, text: TextConfig, keep: int = 6, num_heads: int = 12) -> Data2Vec2TextEncoder:
    """The Data2Vec2 text encoder from ``nlp_base.pt``: embeddings + LayerNorm + the first ``keep`` blocks."""
    ck = torch_load(path)
    sd = {k: v for k, v in model_state(ck, path).items() if k != "_ema" and ".decoder." not in k}
    mcfg = _cfg(ck)
    top = _block_ids(sd, r"blocks\.(\d+)\.")
    if len(top) < keep:
        raise CheckpointError(f"{path} has {len(top)} blocks; {keep} were requested")
    if text_release(sd) == "1.0":
        raise CheckpointError(f"{path} is the data2vec 1.0 text model ({D2V1_TEXT}); the thesis uses data2vec "
                              f"2.0's, published under the same file name: {D2V2_TEXT}")
    if TXT + "local_encoder.embed_tokens.weight" not in sd:
        raise CheckpointError(f"{path} is not a Data2Vec2 text checkpoint: missing keys: "
                              f"{TXT}local_encoder.embed_tokens.weight")
    dim = sd[TXT + "local_encoder.embed_tokens.weight"].shape[1]
    mlp_ratio = sd["blocks.0.mlp.fc1.weight"].shape[0] / dim if "blocks.0.mlp.fc1.weight" in sd else 4.0
    enc = Data2Vec2TextEncoder(text, dim, keep, mcfg.get("num_heads", num_heads), mlp_ratio, mcfg.get("norm_eps", 1e-5))
    sd = _select_blocks(sd, "blocks.", keep, 0)
    load_strict(enc, _rename(sd, TEXT_KEYS), f"Data2Vec2 text checkpoint {path}")
    return enc


def load_beitv2(path, cfg: TeacherConfig, img_size: int) -> Teacher:
    """The frozen BEiT v2 teacher from the unilm pretraining file (or any file with the same key set)."""
    sd = model_state(torch_load(path), path)
    sd = {k: v for k, v in sd.items() if not any(fnmatch.fnmatch(k, p) for p in BEIT_DROP)}
    beit = build_beit(cfg, img_size)
    load_strict(beit, sd, f"BEiT v2 checkpoint {path}", allow_missing=["*relative_position_index"])
    return Teacher(beit, cfg.final_norm)


def timm_beitv2(name_or_file: str, cfg: TeacherConfig, img_size: int) -> Teacher:
    """A BEiT v2 through timm's own loader: a timm model name (hub) or a local timm checkpoint file.
    timm's registered BEiT v2 weights are ImageNet fine-tuned, not the self-supervised pt1k teacher."""
    import timm
    is_file = os.path.isfile(name_or_file)
    model = timm.create_model("beitv2_base_patch16_224" if is_file else name_or_file, pretrained=True,
                              pretrained_cfg_overlay={"file": name_or_file} if is_file else None,
                              num_classes=0, global_pool="token", img_size=img_size, patch_size=cfg.patch_size,
                              embed_dim=cfg.dim, depth=cfg.depth, num_heads=cfg.num_heads)
    return Teacher(model, cfg.final_norm)


# ------------------------------------------------------------------------------- writing (demo pretraining)

def _unselect_blocks(sd: dict) -> dict:
    return {re.sub(r"^blocks\.blocks\.", "blocks.", k): v for k, v in sd.items()}


def save_data2vec2_image(enc: Data2Vec2ImageEncoder, path, num_heads: int) -> None:
    """Write an image encoder in ``base_imagenet.pt``'s layout (prenet depth 0)."""
    sd = _rename(_unselect_blocks(enc.state_dict()), IMAGE_KEYS, reverse=True)
    img = enc.embed.cfg
    cfg = {"model": {"depth": len(enc.blocks.blocks), "embed_dim": enc.norm.normalized_shape[0],
                     "num_heads": num_heads, "norm_eps": enc.norm.eps, "layer_norm_first": False,
                     "modalities": {"image": {"prenet_depth": 0, "patch_size": img.patch_size,
                                              "input_size": img.img_size, "num_extra_tokens": 1}}}}
    torch_save_atomic({"cfg": cfg, "model": sd}, path)


def save_data2vec2_text(enc: Data2Vec2TextEncoder, path, num_heads: int) -> None:
    """Write a text encoder in ``nlp_base.pt``'s layout."""
    sd = _rename(_unselect_blocks(enc.state_dict()), TEXT_KEYS, reverse=True)
    cfg = {"model": {"depth": len(enc.blocks.blocks), "num_heads": num_heads, "norm_eps": enc.norm.eps,
                     "modalities": {"text": {"prenet_depth": 0}}}}
    torch_save_atomic({"cfg": cfg, "model": sd}, path)


def save_beitv2(teacher: Teacher, path) -> None:
    torch_save_atomic({"model": teacher.beit.state_dict()}, path)


# ------------------------------------------------------------------------------- one call per run
