"""Where each part's weights come from (the thesis's files, the demo's pretrained stand-ins, a hub name, or none)
and loading them. Loading is file I/O: a part that is not on disk is an error that names the preparation step."""
from __future__ import annotations

import dataclasses
from pathlib import Path

from torch import nn

from ..cache import fingerprint
from ..config import ExperimentConfig
from ..data.world_files import WORLD_VERSION
from ..errors import CheckpointError
from ..paths import ASSETS, data_dir
from .checkpoints import load_beitv2, load_data2vec2_image, load_data2vec2_text, timm_beitv2
from .encoders import hf_encoder
from .teacher import Teacher, build_beit

THESIS_FILES = {"image": "base_imagenet.pt", "text": "nlp_base.pt", "teacher": "beitv2_base_patch16_224_pt1k.pth"}
DEMO_FILES = {"image": "base_imagenet.pt", "text": "nlp_base.pt", "teacher": "beitv2_pt.pth"}
DEMO_VERSION = 4  # bump when the demo pretraining (training/pretrain.py) changes, so its cached parts are rebuilt
PREPARE = "python -m thesis_lib.training.prepare --preset {preset} (thesis_lib.training.prepare.prepare_assets(cfg))"


def _pretraining_fields(group) -> list:
    """The values of a config group's fields declared ``pretraining=True`` (config.knob), in declaration order."""
    return [getattr(group, f.name) for f in dataclasses.fields(group) if f.metadata.get("pretraining")]


def demo_key(cfg: ExperimentConfig) -> dict:
    """Everything the demo's pretrained parts depend on: their cache folder is named by its fingerprint. The world,
    the image and text representations, the teacher and the pretraining whole; of the model and the data the
    fields declared ``pretraining=True`` (widths, depths, norms; the views)."""
    m = cfg.model
    return {"version": DEMO_VERSION, "world": {"version": WORLD_VERSION, **dataclasses.asdict(cfg.data.world)},
            "image": dataclasses.asdict(m.image), "text": dataclasses.asdict(m.text),
            "dims": _pretraining_fields(m), "teacher": dataclasses.asdict(cfg.teacher),
            "pretrain": dataclasses.asdict(cfg.pretrain), "views": _pretraining_fields(cfg.data)}


def shipped_folder(cfg: ExperimentConfig) -> Path:
    """Where the repository ships a preset's pretrained stand-ins (``make pretrained`` writes them), named by the
    fingerprint of what they depend on: a config or DEMO_VERSION that no longer fits finds nothing here."""
    return ASSETS / f"pretrained-{cfg.preset}-{fingerprint(demo_key(cfg))}"


def demo_folder(cfg: ExperimentConfig) -> Path:
    """The demo's pretrained stand-ins: the shipped files if they fit the config (as the thesis scale uses
    downloaded checkpoints), else this machine's cache, where ``training.prepare`` builds them."""
    shipped = shipped_folder(cfg)
    return shipped if (shipped / "DONE").exists() else data_dir() / shipped.name


def demo_part(cfg: ExperimentConfig, part: str) -> Path:
    """The file of a demo part; an error naming the preparation step if it was not prepared (never trains)."""
    folder = demo_folder(cfg)
    if not (folder / "DONE").exists():
        raise CheckpointError(f"the demo's pretrained {part} is not prepared on this machine ({folder} is missing or "
                              f"unfinished); prepare it first: {PREPARE.format(preset=cfg.preset)}. run_experiment "
                              "and the notebooks do this themselves")
    return folder / DEMO_FILES[part]


def part_source(cfg: ExperimentConfig, part: str) -> str:
    w = cfg.weights
    chosen = getattr(w, part)
    if chosen and chosen != "demo":
        return chosen
    if chosen == "demo" or w.source == "demo":
        return str(demo_part(cfg, part))
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
