"""Where each part's weights come from (the thesis's files, the demo's pretrained stand-ins, a hub name, or none)
and loading them. Loading is file I/O: a part that is not on disk is an error that names the preparation step."""
from __future__ import annotations

from pathlib import Path

from torch import nn

from ..config import ExperimentConfig
from ..errors import CheckpointError
from .checkpoints import load_beitv2, load_data2vec2_image, load_data2vec2_text, timm_beitv2
from .encoders import hf_encoder
from .teacher import Teacher, build_beit

THESIS_FILES = {"image": "base_imagenet.pt", "text": "nlp_base.pt", "teacher": "beitv2_base_patch16_224_pt1k.pth"}


def part_source(cfg: ExperimentConfig, part: str) -> str:
    w = cfg.weights
    chosen = getattr(w, part)
    if chosen and chosen != "demo":
        return chosen
    if chosen == "demo" or w.source == "demo":
        from ..training.pretrain import demo_weights
        return str(demo_weights(cfg)[part])
    if w.source == "thesis":
        if part == "text" and cfg.model.text_encoder == "bert":
            return "hf:bert-base-uncased"
        if not w.checkpoint_dir:
            raise CheckpointError(f"no checkpoint folder given for the thesis weights; pass checkpoint_dir "
                                  f"(holding {', '.join(THESIS_FILES.values())}) or weights.source=random")
        return str(Path(w.checkpoint_dir) / THESIS_FILES[part])
    return ""


def load_encoders(cfg: ExperimentConfig) -> tuple[nn.Module | None, nn.Module | None]:
    """The image and text encoders from the config's weight sources (None = random initialisation)."""
    m = cfg.model
    encoders = []
    for part, modality, depth in (("image", "image", m.image_depth), ("text", "text", m.text_depth)):
        src = part_source(cfg, part)
        if not src:
            encoders.append(None)
        elif src.startswith("hf:"):
            encoders.append(hf_encoder(src[3:], modality, depth, m.text.pad_id))
        elif part == "image":
            encoders.append(load_data2vec2_image(src, m.image, depth, m.num_heads))
        else:
            encoders.append(load_data2vec2_text(src, m.text, depth, m.num_heads))
    return encoders[0], encoders[1]


def load_teacher(cfg: ExperimentConfig) -> Teacher:
    src = part_source(cfg, "teacher")
    img_size = cfg.model.image.img_size
    if not src:
        return Teacher(build_beit(cfg.teacher, img_size), cfg.teacher.final_norm)
    if src.startswith("timm:"):
        return timm_beitv2(src[5:], cfg.teacher, img_size)
    return load_beitv2(src, cfg.teacher, img_size)
