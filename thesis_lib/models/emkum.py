"""EMKUM: image encoder + text encoder + one shared pre-LN block, with the chapter's token-type embeddings.

The thesis's TTE chapter (TimCares/MasterThesis; docs/sources.md §8) and docs/sources.md §1; code: the thesis repo's
``Sx3HRe.py``/``layers.py`` @3c2dfdd, paraphrased. Image and text pass through the shared block *separately*.

The TTE's whole path is ``EMKUM.encoder_outputs``, in forward order (``ModelConfig.tte``, a ``TTEConfig``):
  H_0  = E + T_pos                      the encoder's block input (notation chapter; ``embed_inputs``)
  H_0 += T_type                         TTE before the encoders (TTE chapter Eqs. 1-3, VLMo)
  H_L  = encoder blocks(H_0)
  H'_L = H_L + T_type                   TTE after the encoders (TTE chapter Eq. 4; Table 2, row 2), or
  H'_L = H_L + LayerScale(T_type)       with one γ ∈ R^D shared by both modalities (TTE chapter Eq. 5)
Type ids: 0 = text, 1 = image, the same vector on every token of a sequence, special tokens and pads included.
Beyond the chapter (notebook 05): VLMo's modality experts (``MoMEBlock``) and an image-text matching head (fusion.py).

Paired design (common random numbers): for one global seed every variant gets the same weights for every parameter
it shares with the baseline; what a variant adds is drawn from a generator of its own, so it shifts nothing else.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from timm.layers import LayerScale
from torch import nn
from torch.nn import functional as F

from ..config import ExperimentConfig, ModelConfig
from ..errors import ConfigError
from .encoders import Data2Vec2ImageEncoder, Data2Vec2TextEncoder, bert_encoder
from .fusion import FusionHead
from .representations import PreLNBlock, key_padding_mask

TEXT, IMAGE = 0, 1
TYPES = ("own", "removed", "swapped")   # the type vectors a forward uses: evaluation-time ablations (analysis.py)


class SharedBlock(PreLNBlock):
    """The shared pre-LN block: notation Eqs. 9-10 with LayerScale (γ = 0.2) on both branches. It also returns the CLS
    of its first MLP layer (pre-GELU), the thesis code's optional second ITC tap.

    The thesis code's BEiT-style attention has q and v biases but no k bias; timm's fused qkv bias is equivalent:
    a key bias adds q·b_k to every logit of a query alike, which softmax ignores (its gradient is exactly zero,
    tests/test_model.py)."""

    def __init__(self, dim: int, num_heads: int, mlp_ratio: float, init_values: float):
        super().__init__(dim, num_heads, mlp_ratio, init_values=init_values)

    def ffn(self, modality: int) -> tuple[nn.Module, nn.Module]:
        return self.norm2, self.mlp

    def forward(self, x: torch.Tensor, attn_mask: torch.Tensor | None = None, modality: int = 0):
        x = x + self.ls1(self.attn(self.norm1(x), attn_mask=attn_mask))   # notation Eq. 9 (+ LayerScale)
        norm, mlp = self.ffn(modality)
        h = mlp.fc1(norm(x))                                               # (B, T, 4D)
        x = x + self.ls2(mlp.fc2(mlp.act(h)))                              # notation Eq. 10 (+ LayerScale)
        return x, h[:, 0]


class MoMEBlock(SharedBlock):
    """VLMo's Mixture-of-Modality-Experts block as the shared block: self-attention shared, one feed-forward
    expert (its own pre-LN and MLP) per modality, routed by the modality of the input (not learned); the
    parent's ``norm2``/``mlp`` are the text expert, ``norm2_image``/``mlp_image`` the image expert."""

    def __init__(self, dim: int, num_heads: int, mlp_ratio: float, init_values: float):
        super().__init__(dim, num_heads, mlp_ratio, init_values)
        self.norm2_image = nn.LayerNorm(dim, eps=1e-6)
        self.mlp_image = type(self.mlp)(dim, int(dim * mlp_ratio))

    def added_parts(self) -> list[nn.Module]:   # what MoME adds to SharedBlock
        return [self.norm2_image, self.mlp_image]

    def ffn(self, modality: int) -> tuple[nn.Module, nn.Module]:
        return (self.norm2_image, self.mlp_image) if modality == IMAGE else (self.norm2, self.mlp)


@dataclass
class Features:
    x: torch.Tensor            # L2-normalised CLS of the shared block: ITC, retrieval, zero-shot
    kd: torch.Tensor           # KD head output head(fc_norm(CLS)): regressed onto the teacher's CLS
    x_fc1: torch.Tensor | None  # L2-normalised CLS of the shared block's fc1 (optional second ITC)
    tokens: torch.Tensor | None = None        # the shared part's output sequence (fusion head input)
    padding_mask: torch.Tensor | None = None  # (B, T), True = pad


def init_bert_params(module: nn.Module, generator: torch.Generator | None = None) -> None:
    """fairseq's init for the new parts: Linear and Embedding weights N(0, 0.02), biases 0."""
    if isinstance(module, (nn.Linear, nn.Embedding)):
        nn.init.normal_(module.weight, std=0.02, generator=generator)
    if isinstance(module, nn.Linear) and module.bias is not None:
        nn.init.zeros_(module.bias)


def _init(parts, generator: torch.Generator, skip=frozenset()) -> None:
    """init_bert_params over ``parts`` in module order, from ``generator``; modules in ``skip`` draw nothing."""
    for part in parts:
        for m in part.modules():
            if id(m) not in skip:
                init_bert_params(m, generator)


def encoders(cfg: ModelConfig, image_encoder: nn.Module | None = None, text_encoder: nn.Module | None = None):
    """The two encoders (random unless given, e.g. loaded by ``models.sources.load_encoders``), set up as the config
    says: the text path's training dropout, and the image input LayerNorm skipped where the variant says so."""
    D = cfg.dim
    image_encoder = image_encoder or Data2Vec2ImageEncoder(cfg.image, D, cfg.image_depth, cfg.num_heads,
                                                           cfg.mlp_ratio, cfg.image_norm_eps)
    text_encoder = text_encoder or (
        bert_encoder(cfg.text, cfg.text_depth) if cfg.text_encoder == "bert" else
        Data2Vec2TextEncoder(cfg.text, D, cfg.text_depth, cfg.num_heads, cfg.mlp_ratio, cfg.text_norm_eps))
    if cfg.text_dropout:                                       # the thesis code's text dropout (train mode only)
        if not hasattr(text_encoder, "set_dropout"):
            raise ConfigError(f"model.text_dropout sets the Data2Vec2 text encoder's dropout; "
                              f"{type(text_encoder).__name__} keeps its own config's")
        text_encoder.set_dropout(cfg.text_dropout)
    if not cfg.spec.image_input_norm:                          # the thesis code's TTE-before image path
        if not isinstance(getattr(image_encoder, "norm", None), nn.LayerNorm):
            raise ConfigError(f"variant {cfg.variant!r} skips the image encoder's input LayerNorm; "
                              f"{type(image_encoder).__name__} has none")
        image_encoder.norm = nn.Identity()
    return image_encoder, text_encoder


class EMKUM(nn.Module):
    def __init__(self, cfg: ModelConfig, teacher_dim: int, image_encoder: nn.Module | None = None,
                 text_encoder: nn.Module | None = None, *, logit_scale_init: float):
        super().__init__()
        self.cfg, self.tte, D = cfg, cfg.tte, cfg.dim
        self.image_encoder, self.text_encoder = encoders(cfg, image_encoder, text_encoder)
        # Two seeds drawn alike by every variant: one for the parts every variant has, one for what it adds.
        # Building happens on a forked stream, so the caller's stream after this is the same for every variant.
        shared_seed, added_seed = torch.randint(2 ** 62, (2,), device="cpu").tolist()
        with torch.random.fork_rng(devices=[]):
            block = MoMEBlock if cfg.spec.block == "mome" else SharedBlock
            self.shared = nn.ModuleList(block(D, cfg.num_heads, cfg.mlp_ratio, cfg.shared_layer_scale)
                                        for _ in range(cfg.shared_depth))
            self.fc_norm = nn.LayerNorm(D, eps=1e-6)
            self.head = nn.Linear(D, teacher_dim)              # the KD "regression head", dropped after training
            self.token_type_embeddings = nn.Embedding(2, D) if self.tte.place else None
            self.tte_scale = LayerScale(D, self.tte.gamma_init) if self.tte.layerscale else nn.Identity()
            self.fusion = FusionHead(D, cfg.num_heads, cfg.mlp_ratio, cfg.fusion_depth, cfg.spec.fusion,
                                     cfg.spec.sib) if cfg.spec.fusion else None
        self.logit_scale = nn.Parameter(torch.full((2 if cfg.itc_fc1_tap else 1,), float(logit_scale_init)))
        added = self.added_parts()
        _init([self.shared, self.fc_norm, self.head], torch.Generator().manual_seed(shared_seed),
              skip={id(m) for part in added for m in part.modules()})
        _init(added, torch.Generator().manual_seed(added_seed))

    def added_parts(self) -> list[nn.Module]:
        """The modules this variant adds to the baseline (initialised from their own generator)."""
        parts = [m for m in (self.token_type_embeddings, self.fusion) if m is not None]
        return parts + [m for block in self.shared if isinstance(block, MoMEBlock) for m in block.added_parts()]

    def type_vector(self, modality: int, types: str = "own") -> torch.Tensor | None:
        """t_type of one modality (D,): adding it to every token equals embedding(ids) with ids ≡ modality
        (TTE chapter Eq. 3). ``types`` (evaluation only): "removed" gives None, "swapped" the other modality's."""
        if types not in TYPES:
            raise ValueError(f"unknown type vectors {types!r}; use one of {', '.join(TYPES)}")
        if self.token_type_embeddings is None or types == "removed":
            return None
        weight = self.token_type_embeddings.weight
        if self.tte.shared_type:                               # control: no modality information
            return weight.mean(0)
        return weight[1 - modality if types == "swapped" else modality]

    def encoder_outputs(self, inputs: torch.Tensor, modality: int, types: str = "own"):
        """H'_L, the shared block's input, and the padding mask: the TTE's whole path (the module docstring)."""
        encoder = self.image_encoder if modality == IMAGE else self.text_encoder
        t = self.type_vector(modality, types)                  # T_type (TTE chapter Eq. 3)
        h, padding_mask = encoder.embed_inputs(inputs)         # H_0 = E + T_pos
        if self.tte.place == "before" and t is not None:
            h = h + t                                          # H_0 + T_type (TTE chapter Eqs. 1-2)
        h = encoder.blocks(h, padding_mask)                    # H_L
        if self.tte.place == "after" and t is not None:
            h = h + self.tte_scale(t)                          # H'_L = H_L + LayerScale(T_type) (TTE chapter Eqs. 4-5)
        return h, padding_mask

    def encode(self, inputs: torch.Tensor, modality: int, types: str = "own") -> Features:
        h, padding_mask = self.encoder_outputs(inputs, modality, types)
        attn_mask = key_padding_mask(padding_mask)
        for block in self.shared:
            h, fc1_cls = block(h, attn_mask, modality)         # the shared pre-LN block (notation Eqs. 9-10)
        cls = h[:, 0]                                          # I_CLS / T_CLS pooling
        if padding_mask is None:
            padding_mask = torch.zeros(h.shape[:2], dtype=torch.bool, device=h.device)
        return Features(x=F.normalize(cls, dim=-1), kd=self.head(self.fc_norm(cls)),
                        x_fc1=F.normalize(fc1_cls, dim=-1) if self.cfg.itc_fc1_tap else None,
                        tokens=h, padding_mask=padding_mask)

    def encode_image(self, images: torch.Tensor, types: str = "own") -> Features:
        return self.encode(images, IMAGE, types)

    def encode_text(self, tokens: torch.Tensor, types: str = "own") -> Features:
        return self.encode(tokens, TEXT, types)

    def forward(self, images: torch.Tensor, tokens: torch.Tensor) -> tuple[Features, Features]:
        return self.encode_image(images), self.encode_text(tokens)


def build_model(cfg: ExperimentConfig, pretrained: bool = False) -> EMKUM:
    """EMKUM of a resolved config (``get_config(preset, variant)``). ``pretrained=True`` loads the encoders from the
    config's weight sources (``thesis_lib.models.sources.load_encoders``); otherwise all weights are random.
    Build inside ``with torch.device("meta"):`` to count thesis-scale parameters without memory."""
    if not isinstance(cfg, ExperimentConfig):
        raise TypeError(f"build_model takes a resolved config (thesis_lib.get_config(preset, variant)), "
                        f"got {type(cfg).__name__}")
    image_encoder = text_encoder = None
    if pretrained:
        from .sources import load_encoders
        image_encoder, text_encoder = load_encoders(cfg)
    return EMKUM(cfg.model, cfg.teacher.dim, image_encoder, text_encoder, logit_scale_init=cfg.train.logit_scale_init)
