"""Parameter counts per part of EMKUM (and of its teacher): the rows of the notebooks' parameter tables (notebooks 00,
01 and 05's cost of each mechanism)."""
from __future__ import annotations

from torch import nn

from thesis_lib.models.emkum import EMKUM


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
