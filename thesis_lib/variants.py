"""The variants, as data: one ``VariantSpec`` per name. The model (``models/emkum.py``), the engine, the tables and
the figures read the spec's fields; nothing else decodes a variant's name. Adding a variant is one entry here.

The chapter's variants are its Tables 1-2 (TTE chapter Eqs. 1-5); the controls are notebooks 02 and 04's; the
mechanisms are notebook 05's, beyond the chapter (VLMo, arXiv:2111.02358; Switch-BERT, ECCV 2022). Which variants
each table and notebook compares is ``thesis_lib.study.grids``.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class VariantSpec:
    """What a variant changes in EMKUM; the model, the engine, the tables and the figures read only this. ``label``
    and ``short`` are how tables and figures name it.

    tte         where the token-type embedding goes: "" (none), "before" (the encoders' input, TTE chapter Eqs. 1-3) or
                "after" (the encoders' output, TTE chapter Eqs. 4-5)
    layerscale  the TTE is scaled by a LayerScale γ (init ``ModelConfig.tte_layer_scale``) shared by both modalities
    shared_type both modalities get the same type vector (the mean of the two rows): a negative control with the
                TTE's parameters but no modality information
    image_input_norm  False: the image encoder's input LayerNorm is skipped, as the thesis code's TTE-before path
                did (the run: commit 63a7062 of TimCares/MasterThesis, docs/sources.md §9.1)
    block       the shared block: "shared" (one pre-LN block) or "mome" (VLMo's modality experts)
    fusion      "" (dual encoder only) | "joint" | "switch": an image-text matching head (thesis_lib.models.fusion)
    sib         the fusion head's Switch-Input Block
    layerscale_init  the LayerScale γ's initial value; None: ``ModelConfig.tte_layer_scale`` (1e-5, the thesis's)
    tte_budget  "" (the run's own learning rate) or "thesis": the TTE's parameters (type vectors and γ) get a learning
                rate whose sum over the run equals the thesis run's (``training.engine.tte_lr_scale``): AdamW moves
                a parameter by about one learning rate per step, so γ can travel as far as in the thesis
    """
    label: str
    short: str = ""                       # its name on a figure's axis or legend; "" = the variant's own name
    tte: str = ""
    layerscale: bool = False
    shared_type: bool = False
    image_input_norm: bool = True
    block: str = "shared"
    fusion: str = ""
    sib: bool = False
    layerscale_init: float | None = None
    tte_budget: str = ""


VARIANT_SPECS = {  # one entry per variant; labels are how the chapter's tables name them, short names the figures'
    "baseline": VariantSpec("EMKUM (no TTE)"),
    "tte_before": VariantSpec("EMKUM_TTE (before encoders)", "TTE before", tte="before"),
    "tte_after": VariantSpec("TTE after encoders, no LayerScale", "TTE after", tte="after"),
    "tte_after_ls": VariantSpec("EMKUM_TTE' (after encoders + LayerScale)", "TTE after + LS", tte="after",
                                layerscale=True),
    # controls (notebooks 02 and 04)
    "tte_before_noln": VariantSpec("TTE before encoders, image input LayerNorm skipped (thesis code)",
                                   "TTE before, no LN", tte="before", image_input_norm=False),
    "noln": VariantSpec("control: image input LayerNorm skipped, no TTE", "no LN (control)", image_input_norm=False),
    "tte_shared": VariantSpec("control: one type vector for both modalities (after + LayerScale)",
                              "one vector (control)", tte="after", layerscale=True, shared_type=True),
    # dose-response of the TTE' (notebook 04): the same variant with γ starting larger, up to 1 (no scaling)
    "tte_after_ls_init1e-3": VariantSpec("TTE after + LayerScale, γ init 1e-3", "TTE after + LS, γ₀ 1e-3",
                                         tte="after", layerscale=True, layerscale_init=1e-3),
    "tte_after_ls_init1e-1": VariantSpec("TTE after + LayerScale, γ init 1e-1", "TTE after + LS, γ₀ 1e-1",
                                         tte="after", layerscale=True, layerscale_init=1e-1),
    "tte_after_ls_init1": VariantSpec("TTE after + LayerScale, γ init 1", "TTE after + LS, γ₀ 1", tte="after",
                                      layerscale=True, layerscale_init=1.0),
    # the TTE' with the thesis's optimisation budget for its parameters (notebook 04)
    "tte_after_ls_budget": VariantSpec("TTE after + LayerScale, the thesis's learning-rate budget for the TTE",
                                       "TTE after + LS, thesis budget", tte="after", layerscale=True,
                                       tte_budget="thesis"),
    # beyond the chapter (notebook 05)
    "mome": VariantSpec("MoME shared block (VLMo experts)", "MoME", block="mome"),
    "fusion_joint": VariantSpec("+ fusion head, joint attention (VLMo VL expert)", "joint fusion", fusion="joint"),
    "switch": VariantSpec("+ fusion head, Switch-Attention (Switch-BERT)", "switch", fusion="switch"),
    "switch_sib": VariantSpec("+ fusion head, Switch-Attention + Switch-Input", "switch + SIB", fusion="switch",
                              sib=True),
}
VARIANTS = tuple(VARIANT_SPECS)
VARIANT_LABELS = {name: spec.label for name, spec in VARIANT_SPECS.items()}
VARIANT_SHORT = {name: spec.short or name for name, spec in VARIANT_SPECS.items()}
