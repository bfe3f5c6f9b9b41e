"""What a model costs: its parameters per part (and its teacher's), the rows of the parameter tables of notebooks 00
and 01, and each variant's parameters and forward FLOPs at inference, notebook 05's cost of each mechanism."""
from __future__ import annotations

import pandas as pd
import torch
from torch import nn
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode

from thesis_lib.config import get_config
from thesis_lib.models.emkum import EMKUM, build_model
from thesis_lib.variants import VARIANT_LABELS


def parameter_table(model: EMKUM, teacher: nn.Module | None = None) -> list[dict]:
    """Parameters per part (and trainable vs frozen), the rows of the notebooks' parameter table."""
    def count(*modules):
        ps = [p for m in modules if m is not None for p in (m.parameters() if isinstance(m, nn.Module) else [m])]
        return sum(p.numel() for p in ps), sum(p.numel() for p in ps if p.requires_grad)

    shared_parts = [model.shared, model.fc_norm, model.head, model.token_type_embeddings, model.tte_scale,
                    model.logit_scale]
    rows = [("image encoder", count(model.image_encoder)), ("text encoder", count(model.text_encoder)),
            ("shared block(s)", count(model.shared)), ("KD head (fc_norm + head)", count(model.fc_norm, model.head)),
            ("token-type embeddings", count(model.token_type_embeddings)), ("TTE LayerScale", count(model.tte_scale)),
            ("logit scales", count(model.logit_scale))]
    if model.fusion is not None:                               # notebook 05's variants only
        rows.append(("fusion head (ITM)", count(model.fusion)))
    rows += [("shared part (all above)", count(*shared_parts, model.fusion)), ("EMKUM student", count(model))]
    if teacher is not None:
        rows.append(("teacher (frozen)", count(teacher)))
    return [{"part": name, "parameters": total, "trainable": trainable} for name, (total, trainable) in rows]


def cost_table(preset: str, variants, caption_len: int = 16) -> pd.DataFrame:
    """Parameters and forward FLOPs (torch's FlopCounterMode, at batch 1, attention through SDPA's math backend so
    its matmuls are counted) of each variant at inference: the dual encoder per image + caption, and the fusion head
    per scored (image, caption) pair. At inference a switch layer computes its selected mode only; in training
    (soft weighting) it computes the attention of all four. (No ``no_grad``: the counter's module tracker needs
    autograd.)"""
    cfg = get_config(preset)
    S = cfg.model.image.img_size
    image = torch.randn(1, 3, S, S)
    tokens = torch.full((1, caption_len), 7)
    tokens[0, 0], tokens[0, -1] = cfg.model.text.bos_id, cfg.model.text.eos_id
    rows = []
    for v in variants:
        torch.manual_seed(0)
        model = build_model(get_config(preset, v)).eval()
        table = {r["part"]: r["parameters"] for r in parameter_table(model)}
        with sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as dual:
            img, txt = model.encode_image(image), model.encode_text(tokens)
        fusion_flops = 0
        if model.fusion is not None:
            with sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as fused:
                model.fusion(img.tokens, txt.tokens, txt.padding_mask)
            fusion_flops = fused.get_total_flops()
        rows.append({"variant": VARIANT_LABELS[v], "parameters (student)": table["EMKUM student"],
                     "shared part": table["shared part (all above)"], "fusion head": table.get("fusion head (ITM)", 0),
                     "MFLOPs / image + caption": dual.get_total_flops() / 1e6,
                     "MFLOPs / scored pair (fusion)": fusion_flops / 1e6})
    return pd.DataFrame(rows).set_index("variant")
