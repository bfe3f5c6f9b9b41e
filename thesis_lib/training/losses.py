"""The chapter's training objective: L = L_KD + L_ITC (docs/sources.md §2).

* ``clip_loss``: image-text contrastive loss, CLIP/open_clip form. Logits = s · v_i·w_jᵀ with a learnable scale
  s = exp(log s), log s initialised at ln(1/0.07) and clamped to [0, ln 100] after each step (FLAVA, VLMo);
  L_ITC = ½ (CE(logits, y) + CE(logitsᵀ, y)), y = arange(B) + B·rank when features are gathered across processes.
* ``kd_mse``: feature KD of this chapter, L_KD = ½ MSE(head(h_v,CLS), t_CLS) + ½ MSE(head(h_w,CLS), t_CLS): the caption
  too is regressed onto the teacher's *image* CLS.
* ``kd_contrastive``: the later chapters' contrastive KD (normalised student heads against the batch's normalised
  teacher CLS, temperature 0.07), an option here.
"""
from __future__ import annotations

import torch
from torch.nn import functional as F

from .distributed import DistInfo, gather_with_grad

SINGLE = DistInfo()


def clip_loss(image: torch.Tensor, text: torch.Tensor, logit_scale: torch.Tensor,
              info: DistInfo = SINGLE) -> torch.Tensor:
    """image, text: (B, D) L2-normalised features of matching pairs; logit_scale: the scale s (not its log)."""
    all_image, all_text = gather_with_grad(image, info), gather_with_grad(text, info)
    labels = torch.arange(len(image), device=image.device) + len(image) * info.rank
    logits_per_image = logit_scale * image @ all_text.T                       # (B, W·B)
    logits_per_text = logit_scale * text @ all_image.T
    return (F.cross_entropy(logits_per_image, labels) + F.cross_entropy(logits_per_text, labels)) / 2


def kd_mse(student_image: torch.Tensor, student_text: torch.Tensor, target: torch.Tensor):
    """Returns (L_KD, image part, text part); each part is the MSE averaged over B × D."""
    kd_image = F.mse_loss(student_image.float(), target.float())
    kd_text = F.mse_loss(student_text.float(), target.float())
    return 0.5 * kd_image + 0.5 * kd_text, kd_image, kd_text


def kd_contrastive(student_image: torch.Tensor, student_text: torch.Tensor, target: torch.Tensor,
                   temperature: float = 0.07):
    """Each student head must pick its own image's teacher CLS among the batch's (CE over cosine logits)."""
    t = F.normalize(target.float(), dim=-1)
    labels = torch.arange(len(t), device=t.device)
    parts = [F.cross_entropy(F.normalize(s.float(), dim=-1) @ t.T / temperature, labels)
             for s in (student_image, student_text)]
    return 0.5 * parts[0] + 0.5 * parts[1], parts[0], parts[1]
