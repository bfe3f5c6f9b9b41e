"""Image and text representations and the Transformer block: the notation chapter, Eqs. 1-10.

The thesis's notation chapter ("Notations and Definitions", TimCares/MasterThesis): docs/sources.md §8, errata §6.
Standard parts come from timm (PatchEmbed, Attention, Mlp, Block); written out here is only what the
chapter defines: where the positional encodings go (notation Eq. 2, notation Eq. 7) and which block is
pre-LN (notation Eqs. 9-10).
The post-LN block is Data2Vec2's ``AltBlock`` (docs/sources.md §7.2), needed to carry its weights.
"""
from __future__ import annotations

from functools import partial

import torch
from timm.layers import Attention, Mlp, PatchEmbed
from timm.models.vision_transformer import Block
from torch import nn

from ..config import ImageConfig, TextConfig


def patchify(images: torch.Tensor, patch_size: int) -> torch.Tensor:
    """(B, C, H, W) -> (B, N, C·P²), patches in row-major order; N = H·W / P² (the chapter's N, errata 2)."""
    B, C, H, W = images.shape
    p = patch_size
    x = images.reshape(B, C, H // p, p, W // p, p)        # (B, C, h, p, w, p)
    return x.permute(0, 2, 4, 1, 3, 5).reshape(B, (H // p) * (W // p), C * p * p)


def sincos_2d(dim: int, grid: int) -> torch.Tensor:
    """Fixed 2-D sin-cos table (N, D) as MAE / Data2Vec2 build it: the first D/2 channels encode the column,
    the last D/2 the row; each half is [sin(pos·ω), cos(pos·ω)], ω_i = 10000^(-i / (D/4)); token = row·grid + col."""
    assert dim % 4 == 0, "sin-cos positions need D divisible by 4"
    omega = 1.0 / 10000 ** (torch.arange(dim // 4, dtype=torch.float64) / (dim / 4))
    rows, cols = torch.meshgrid(torch.arange(grid, dtype=torch.float64),
                                torch.arange(grid, dtype=torch.float64), indexing="ij")

    def half(pos):
        angles = pos.reshape(-1, 1) * omega                 # (N, D/4)
        return torch.cat([angles.sin(), angles.cos()], dim=1)
    return torch.cat([half(cols), half(rows)], dim=1).float()


class ImageEmbedding(nn.Module):
    """E_v and T^pos_v: H_{v,0} = [e_I_CLS, e_1..e_N] + [0, t_1..t_N] (notation Eqs. 1, 2, 4)."""

    def __init__(self, cfg: ImageConfig, dim: int):
        super().__init__()
        self.cfg = cfg
        self.patch_embed = PatchEmbed(cfg.img_size, cfg.patch_size, cfg.in_chans, dim)  # linear map of patches
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))                           # I_CLS
        nn.init.trunc_normal_(self.cls_token, std=0.02)
        table = sincos_2d(dim, cfg.grid)[None]                                           # (1, N, D)
        if cfg.pos_embed == "learned":
            self.pos_embed = nn.Parameter(table.clone().normal_(std=0.02))
        elif cfg.pos_embed == "sincos":
            self.register_buffer("pos_embed", table)
        else:
            raise ValueError(f"pos_embed must be 'sincos' or 'learned', got {cfg.pos_embed!r}")

    def positional_encoding(self) -> torch.Tensor:
        """T^pos_v of notation Eq. 2 as one (N+1, D) table: a zero row for I_CLS, then t_1..t_N."""
        pe = self.pos_embed[0]
        return torch.cat([pe.new_zeros(1, pe.shape[-1]), pe], dim=0)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        x = self.patch_embed(images) + self.pos_embed            # (B, N, D): e_i + t_i
        cls = self.cls_token.expand(x.shape[0], -1, -1)          # I_CLS gets no position (notation Eq. 2)
        return torch.cat([cls, x], dim=1)                        # (B, N+1, D) = H_{v,0}, notation Eq. 4


class TextEmbedding(nn.Module):
    """E_w and T^pos_w: token embeddings of [T_CLS, w_1..w_M, T_SEP] plus learned positions (notation Eqs. 6-7).

    The position table follows fairseq (Data2Vec2 text): row ``pad_id`` is zero and never trained, real tokens
    count from ``pad_id + 1``. ``cls_position="zero"`` realises notation Eq. 7 literally (T_CLS gets the zero row, T_SEP
    a position); ``"learned"`` gives T_CLS its own position, as Data2Vec2 text and BERT do (errata 6).
    """

    def __init__(self, cfg: TextConfig, dim: int):
        super().__init__()
        self.cfg = cfg
        self.embed_tokens = nn.Embedding(cfg.vocab_size, dim, padding_idx=cfg.pad_id)
        self.embed_positions = nn.Embedding(cfg.max_positions + cfg.pad_id + 1, dim, padding_idx=cfg.pad_id)
        for emb in (self.embed_tokens, self.embed_positions):
            nn.init.normal_(emb.weight, std=0.02)
            with torch.no_grad():
                emb.weight[cfg.pad_id].zero_()

    def positions(self, tokens: torch.Tensor) -> torch.Tensor:
        """Position ids (B, T): fairseq ``make_positions``; pads (and T_CLS under notation Eq. 7) point at
        the zero row."""
        real = tokens.ne(self.cfg.pad_id).long()
        count = torch.cumsum(real, dim=1)
        if self.cfg.cls_position == "zero":
            count = (count - 1).clamp_min(0)
        return count * real + self.cfg.pad_id

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.embed_tokens(tokens) + self.embed_positions(self.positions(tokens))  # E_w + T^pos_w


class PreLNBlock(Block):
    """The chapter's pre-LN block (notation Eqs. 9-10) is timm's ViT ``Block``:
    H'_l = MHA(LN(H_{l-1})) + H_{l-1};  H_l = FFN(LN(H'_l)) + H'_l  (tests/test_representations.py proves it).
    ``init_values`` adds LayerScale on both branches (CaiT), as the shared block does. Every pre-LN block of the
    package is built here: EMKUM's shared block and the fusion head's layers subclass it."""

    def __init__(self, dim: int, num_heads: int, mlp_ratio: float = 4.0, eps: float = 1e-6,
                 init_values: float | None = None):
        super().__init__(dim, num_heads, mlp_ratio, qkv_bias=True, init_values=init_values,
                         norm_layer=partial(nn.LayerNorm, eps=eps))


class PostLNBlock(nn.Module):
    """Post-LN block, Data2Vec2's AltBlock with layer_norm_first=False (Vaswani et al.; the chapter's Figure 1a):
    H'_l = LN(H_{l-1} + MHA(H_{l-1}));  H_l = LN(H'_l + FFN(H'_l)). Parameter names match the checkpoints.

    ``dropout`` (training only) acts where AltBlock's does: on the attention weights (``attention_dropout``), on the
    attention output (``encoder_dropout``) and on the FFN output before the residual sum (``post_mlp_drop``); none
    inside the FFN (``activation_dropout`` 0). At 0 the block computes exactly what it computes without it."""

    def __init__(self, dim: int, num_heads: int, mlp_ratio: float = 4.0, eps: float = 1e-6, dropout: float = 0.0):
        super().__init__()
        self.attn = Attention(dim, num_heads, qkv_bias=True, attn_drop=dropout, proj_drop=dropout)
        self.norm1 = nn.LayerNorm(dim, eps=eps)
        self.mlp = Mlp(dim, int(dim * mlp_ratio))
        self.post_mlp_drop = nn.Dropout(dropout)
        self.norm2 = nn.LayerNorm(dim, eps=eps)

    def set_dropout(self, p: float) -> None:
        """The block's training dropout rate (see the class); no parameter changes."""
        self.attn.attn_drop.p = self.attn.proj_drop.p = self.post_mlp_drop.p = float(p)

    def forward(self, x: torch.Tensor, attn_mask: torch.Tensor | None = None) -> torch.Tensor:
        x = self.norm1(x + self.attn(x, attn_mask=attn_mask))
        return self.norm2(x + self.post_mlp_drop(self.mlp(x)))


def key_padding_mask(padding_mask: torch.Tensor | None) -> torch.Tensor | None:
    """(B, T) with True = pad (the thesis's convention) -> (B, 1, 1, T) with True = attend (SDPA's convention)."""
    return None if padding_mask is None else ~padding_mask[:, None, None, :]


class TransformerStack(nn.Module):
    """A Transformer: blocks stacked on top of each other; H_{·,L} from H_{·,0} (notation Eqs. 3, 5, 8)."""

    def __init__(self, blocks: list[nn.Module]):
        super().__init__()
        self.blocks = nn.ModuleList(blocks)

    def forward(self, x: torch.Tensor, padding_mask: torch.Tensor | None = None) -> torch.Tensor:
        attn_mask = key_padding_mask(padding_mask)
        for block in self.blocks:
            x = block(x, attn_mask=attn_mask)
        return x
