"""The frozen image teacher: BEiTv2 ViT-B/16 pretrained on ImageNet-1K (``beitv2_base_patch16_224_pt1k.pth``).

Built from timm's ``Beit`` with the pretraining layout (shared relative position bias, no absolute positions,
LayerScale 0.1; docs/sources.md §7.4), not timm's fine-tune factory. The KD target is the CLS token of the
last block after the final LayerNorm, as the chapter's code (@3c2dfdd) takes ``forward_features(x)[:, 0]``;
``TeacherConfig.final_norm=False`` takes it before the norm instead (the later S_SMKE_C code).
"""
from __future__ import annotations

import torch
from timm.models.beit import Beit
from torch import nn

from ..config import TeacherConfig


def build_beit(cfg: TeacherConfig, img_size: int) -> Beit:
    return Beit(img_size=img_size, patch_size=cfg.patch_size, embed_dim=cfg.dim, depth=cfg.depth,
                num_heads=cfg.num_heads, mlp_ratio=cfg.mlp_ratio, qkv_bias=True, use_abs_pos_emb=False,
                use_rel_pos_bias=False, use_shared_rel_pos_bias=True, init_values=cfg.init_values,
                num_classes=0, global_pool="token")


class Teacher(nn.Module):
    """Frozen, always in eval mode; ``forward(images) -> (B, D)`` KD targets."""

    def __init__(self, beit: nn.Module, final_norm: bool = True):
        super().__init__()
        self.beit = beit
        if not final_norm:
            self.beit.norm = nn.Identity()
        self.requires_grad_(False)
        self.eval()

    def train(self, mode: bool = True):  # a frozen teacher never switches to training mode (no drop-path)
        return super().train(False)

    @torch.no_grad()
    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.beit.forward_features(images)[:, 0]


def build_teacher(cfg: TeacherConfig, img_size: int) -> Teacher:
    return Teacher(build_beit(cfg, img_size), cfg.final_norm)
