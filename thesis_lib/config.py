"""Configuration: one frozen dataclass per concern, three named presets.

* ``thesis``: the chapter's real setup (Data2Vec2 ViT-B/16 + Data2Vec2 text, 6 blocks each, one shared block,
  BEiTv2 ViT-B/16 teacher, 224 px, 64 tokens, batch 256 per GPU, 44,636 steps). Facts: docs/sources.md §1-4.
* ``demo``: the same classes at tiny width and depth, trained on the embedded world (thesis_lib.data.world) on CPU.
* ``smoke``: the demo at toy size, for CI and tests (seconds). What the study does with each: ``Preset``.
``get_config(preset, variant=..., seed=..., overrides={"train.steps": 10})`` resolves a full ``ExperimentConfig``;
``asdict(cfg)`` is stored with every checkpoint and result file (read back: ``stored_config``).

A field is declared once, here: its default, and (``knob``) what else the code needs to know about it: the range it
must lie in, its role for a result's identity, whether the demo's pretrained stand-ins depend on it, and how a
result stored before it existed is read. ``field_metadata()`` lists them; nothing else keeps lists of field names.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Callable, Literal

from .config_checks import (AT_LEAST_ONE, AT_LEAST_ZERO, BETAS, CROP_SCALE, DROPOUT, FINITE, NON_NEGATIVE, POSITIVE,
                            SEED, TEMPERATURES, UNIT_HALF_OPEN, UNIT_OPEN, Rule, check_config, one_of, replace_path)
from .errors import ConfigError
from .variants import VARIANT_SPECS, VARIANTS, VariantSpec

ROLES = ("science", "operational", "path", "source", "mixture")
WANTED = "as wanted"   # ``absent=WANTED``: a stored config without the field is read as holding the wanted value


def knob(default, *, rule: Rule | None = None, role: str = "science", pretraining: bool | None = None, absent=None):
    """A config field with what the code needs to know about it besides its default (the field's metadata):

    * ``rule``: the range its value must lie in (``config_checks``), checked on every resolved config;
    * ``role``: "science" (part of what a run computes), "operational" (how a run is executed or logged: a result
      computed with another value is the same result), "path" (where files lie: not part of a result's identity),
      "source" (weights: compared by file name) or "mixture" (training sets: by each set's name and ``@N``);
    * ``pretraining``: whether the demo's pretrained stand-ins depend on it (their folder is named by the fields
      that say so: ``models.sources.demo_key``); every scalar field of ``ModelConfig`` and ``DataConfig`` says;
    * ``absent``: for a field added after results were stored, how a stored config without it is read: the value
      every run had before, or ``WANTED`` (it changes nothing for the runs stored before it existed).
    """
    if role not in ROLES:
        raise ValueError(f"role must be one of {ROLES}, got {role!r}")
    meta = {"role": role, **({"rule": rule} if rule else {}),
            **({"pretraining": pretraining} if pretraining is not None else {}),
            **({"absent": absent} if absent is not None else {})}
    return field(default=default, metadata=meta)


@dataclass(frozen=True)
class ImageConfig:
    """Image representation, notation chapter Eqs. 1-5."""
    img_size: int = knob(224, rule=AT_LEAST_ONE)   # H = W (the chapter's "244" is a typo, errata 1)
    patch_size: int = knob(16, rule=AT_LEAST_ONE)  # P, the patch side (the chapter calls 14 "P", errata 2)
    in_chans: int = knob(3, rule=AT_LEAST_ONE)     # C
    # "sincos" (fixed 2-D, Data2Vec2) | "learned"; I_CLS always gets 0 (notation Eq. 2)
    pos_embed: str = knob("sincos", rule=one_of("sincos", "learned"))

    @property
    def grid(self) -> int:       # patches per side: 224 / 16 = 14
        return self.img_size // self.patch_size

    @property
    def num_patches(self) -> int:  # N = H·W / P² = 196
        return self.grid ** 2

    @property
    def patch_dim(self) -> int:  # a flattened patch: C·P² = 768 (not 256, errata 3)
        return self.in_chans * self.patch_size ** 2


@dataclass(frozen=True)
class TextConfig:
    """Text representation, notation chapter Eqs. 6-8; fairseq dictionary layout (docs/sources.md §7.3)."""
    # Data2Vec2 text: GPT-2 BPE mapped through dict.txt + <s>,<pad>,</s>,<unk>,<mask>
    vocab_size: int = knob(50265, rule=AT_LEAST_ONE)
    max_len: int = 64            # tokens incl. T_CLS and T_SEP (thesis: 64, "inspired by BEiT-3"); range: problems()
    # the learned position table has max_positions + 2 rows (fairseq: pad row + offset)
    max_positions: int = knob(512, rule=AT_LEAST_ONE)
    # "learned": T_CLS gets a position (Data2Vec2, BERT) | "zero": notation Eq. 7
    cls_position: str = knob("learned", rule=one_of("learned", "zero"))
    bos_id: int = 0              # T_CLS (<s>)
    pad_id: int = 1              # <pad>; its embedding and position rows are zero
    eos_id: int = 2              # T_SEP (</s>)
    mask_id: int = 50264         # <mask> (demo MLM pretraining)


BERT_TEXT = TextConfig(vocab_size=30522, max_len=64, max_positions=512, bos_id=101, pad_id=0, eos_id=102,
                       mask_id=103)  # bert-base-uncased WordPiece: [CLS] 101, [PAD] 0, [SEP] 102, [MASK] 103


@dataclass(frozen=True)
class TTEConfig:
    """What EMKUM's forward reads about the token-type embedding (TTE chapter Eqs. 1-5), typed; derived from the
    variant (``ModelConfig.tte``), never stored on its own.

    place       where t_type is added: "" (nowhere), "before" (to the encoders' input H_0, TTE chapter Eqs. 1-3) or
                "after" (to their output H_L, TTE chapter Eq. 4)
    layerscale  after the encoders, t_type is scaled by a LayerScale γ ∈ R^D shared by both modalities
                (TTE chapter Eq. 5)
    gamma_init  γ's initial value (the thesis's: 1e-5)
    shared_type both modalities get one vector, the mean of the two rows (a control without modality information)
    """
    place: Literal["", "before", "after"]
    layerscale: bool
    gamma_init: float
    shared_type: bool


@dataclass(frozen=True)
class ModelConfig:
    """EMKUM: image encoder + text encoder + shared pre-LN block(s) + KD head (docs/sources.md §1)."""
    image: ImageConfig = field(default_factory=ImageConfig)
    text: TextConfig = field(default_factory=TextConfig)
    dim: int = knob(768, rule=AT_LEAST_ONE, pretraining=True)                  # D
    num_heads: int = knob(12, rule=AT_LEAST_ONE, pretraining=True)
    mlp_ratio: float = knob(4.0, rule=POSITIVE, pretraining=True)              # MLP 3072
    image_depth: int = knob(6, rule=AT_LEAST_ONE, pretraining=True)  # Data2Vec2 image blocks kept (first 6 of 12)
    text_depth: int = knob(6, rule=AT_LEAST_ONE, pretraining=True)   # Data2Vec2 text / BERT layers kept (6 of 12)
    image_norm_eps: float = knob(1e-6, pretraining=True)   # Data2Vec2 image cfg norm_eps
    text_norm_eps: float = knob(1e-5, pretraining=True)    # Data2Vec2 text cfg norm_eps (fairseq LayerNorm)
    # "data2vec2" (the chapter's EMKUM, 132 M) | "bert" (final thesis text, 117 M)
    text_encoder: str = knob("data2vec2", rule=one_of("data2vec2", "bert"), pretraining=False)
    # the Data2Vec2 text encoder's dropout in training (embedding output, attention weights, attention output, FFN
    # output; docs/sources.md §9): the thesis code's is 0.1 in every variant, 0 here so that every committed result
    # stays as it was. transformers encoders (text_encoder=bert, weights.text=hf:…) keep their own config's
    text_dropout: float = knob(0.0, rule=DROPOUT, pretraining=False, absent=0.0)
    shared_depth: int = knob(1, rule=AT_LEAST_ONE, pretraining=False)  # one shared block (VLMo/BEiT-3 use two)
    # LayerScale inside the shared block ("half the depth of BEiT, so 0.2")
    shared_layer_scale: float = knob(0.2, rule=NON_NEGATIVE, pretraining=False)
    variant: str = knob("baseline", rule=one_of(*VARIANTS), pretraining=False)
    # γ init of the TTE LayerScale (TTE chapter Eqs. 4-5)
    tte_layer_scale: float = knob(1e-5, rule=NON_NEGATIVE, pretraining=False)
    # thesis code @3c2dfdd: a second ITC on the CLS of the shared block's fc1
    itc_fc1_tap: bool = knob(False, pretraining=False)
    # fusion_* / switch*: layers of the image-text matching head (SIB needs >= 2)
    fusion_depth: int = knob(2, rule=AT_LEAST_ONE, pretraining=False, absent=WANTED)
    # Gumbel-softmax temperature, annealed exponentially from [0] to [1]
    switch_tau: tuple = knob((1.0, 0.1), rule=TEMPERATURES, pretraining=False, absent=WANTED)

    @property
    def spec(self) -> VariantSpec:
        return VARIANT_SPECS[self.variant]

    @property
    def tte(self) -> TTEConfig:
        """The variant's token-type embedding; γ starts at the variant's own value (a dose) or ``tte_layer_scale``."""
        s = self.spec
        return TTEConfig(s.tte, s.layerscale, self.tte_layer_scale if s.layerscale_init is None else s.layerscale_init,
                         s.shared_type)


@dataclass(frozen=True)
class TeacherConfig:
    """Frozen BEiTv2 ViT-B/16 image teacher (pt1k, self-supervised); target = CLS of the last block."""
    dim: int = knob(768, rule=AT_LEAST_ONE)
    depth: int = knob(12, rule=AT_LEAST_ONE)
    num_heads: int = knob(12, rule=AT_LEAST_ONE)
    mlp_ratio: float = knob(4.0, rule=POSITIVE)
    patch_size: int = knob(16, rule=AT_LEAST_ONE)
    init_values: float = knob(0.1, rule=NON_NEGATIVE)  # BEiT's block LayerScale (gamma_1/gamma_2)
    final_norm: bool = True      # thesis code @3c2dfdd: forward_features()[:, 0] is LN-ed (docs/sources.md §2)


@dataclass(frozen=True)
class WorldConfig:
    """The embedded image-caption world (thesis_lib.data.world); sizes of every split."""
    seed: int = knob(0, rule=AT_LEAST_ZERO)
    # rendered resolution (a parameter; the model's img_size must match)
    img_size: int = knob(32, rule=AT_LEAST_ONE)
    n_train: int = knob(4000, rule=AT_LEAST_ONE)       # caption-pair train images (5 captions each)
    n_val: int = knob(500, rule=AT_LEAST_ZERO)         # Karpathy-style "val" split (not used for the tables)
    n_coco_test: int = knob(5000, rule=AT_LEAST_ONE)   # COCO-like test (5K images, like MSCOCO-5K)
    n_flickr_test: int = knob(1000, rule=AT_LEAST_ONE)  # Flickr-like test (1K images, like Flickr30K-1K)
    # ImageNet stand-in: images per class in val/ (48 × 210 = 10,080)
    n_zeroshot_per_class: int = knob(210, rule=AT_LEAST_ONE)
    n_image_corpus: int = knob(8000, rule=AT_LEAST_ONE)  # images without captions (encoder + teacher pretraining)
    n_text_corpus: int = knob(20000, rule=AT_LEAST_ONE)  # captions without images (text MLM pretraining)


@dataclass(frozen=True)
class DataConfig:
    """Where pairs and evaluation sets come from, and how views are made (docs/sources.md §3-4)."""
    # "world" (generated here) | "karpathy" (real COCO/Flickr30K + ImageNet folders)
    source: str = knob("karpathy", rule=one_of("world", "karpathy"), pretraining=False)
    root: str = knob("", role="path", pretraining=False)   # data root; "" = thesis_lib.paths.data_dir()
    world: WorldConfig = field(default_factory=WorldConfig)
    # Karpathy train + restval; the thesis adds CC3M/CC12M subsets
    train_sets: tuple = knob(("coco",), role="mixture", pretraining=False)
    # RandomResizedCrop scale, student and teacher
    crop_scale: tuple = knob((0.9, 1.0), rule=CROP_SCALE, pretraining=True)
    # "augmented" (independent view + colour jitter) | "fixed" (eval view, cacheable)
    teacher_view: str = knob("augmented", rule=one_of("augmented", "fixed"), pretraining=False)
    # ImageNet normalisation (student and teacher in the thesis); length and sign checked against in_chans: problems()
    mean: tuple = knob((0.485, 0.456, 0.406), pretraining=True)
    std: tuple = knob((0.229, 0.224, 0.225), pretraining=True)
    num_workers: int = knob(8, rule=AT_LEAST_ZERO, role="operational", pretraining=False)
    # decode every image once into a uint8 tensor (the demo); else a DataLoader, decoding with ``decoder``
    in_memory: bool = knob(False, pretraining=False)
    decoder: str = knob("pil", rule=one_of("pil", "pil_draft", "torchvision", "device"),   # data/decode.py,
                        pretraining=False, absent="pil")                                  # data/device_decode.py
    # "openai" (80) | "world" (the embedded world's own)
    zeroshot_templates: str = knob("openai", rule=one_of("openai", "world"), pretraining=False)


@dataclass(frozen=True)
class TrainConfig:
    """Optimisation (docs/sources.md §3): AdamW, cosine with 10 % warmup, KD + ITC."""
    batch_size: int = knob(256, rule=AT_LEAST_ONE)   # per process (thesis: 256 per GPU × 2 GPUs)
    steps: int = knob(44636, rule=AT_LEAST_ONE)      # thesis: int(89,273 / 2)
    warmup_frac: float = knob(0.1, rule=UNIT_HALF_OPEN)
    base_lr: float = knob(1e-4, rule=POSITIVE)       # × global batch / 256 (thesis: 2e-4 at 512)
    betas: tuple = knob((0.9, 0.98), rule=BETAS)
    eps: float = knob(1e-6, rule=POSITIVE)
    # not on biases, norms, embeddings, TTE, LayerScale vectors
    weight_decay: float = knob(0.01, rule=NON_NEGATIVE)
    # which parameters decay: "ours" (the above) | "thesis" (all but 1-D ones, biases and the token table: the TTE,
    # positions and CLS decay too; TimCares/MasterThesis@63a7062 src/models/Sx3HRe.py:166-173, docs/sources.md §9)
    decay_rule: str = knob("ours", rule=one_of("ours", "thesis"), absent="ours")
    logit_scale_init: float = knob(math.log(1 / 0.07), rule=FINITE)
    logit_scale_max: float = knob(math.log(100), rule=FINITE)  # clamp after each step (FLAVA / VLMo)
    kd_loss: str = knob("mse", rule=one_of("mse", "contrastive"))  # "mse" (this chapter) | "contrastive" (later)
    # fusion variants: weight of the image-text matching loss (VLMo: 1)
    itm_weight: float = knob(1.0, rule=NON_NEGATIVE, absent=WANTED)
    # fusion variants: pairs per step that get ITM (+ 2 hard negatives each); 0 = all
    itm_batch: int = knob(0, rule=AT_LEAST_ZERO, absent=WANTED)
    # ITM negatives drawn among the true ones: "hard" (∝ softmax of ITC similarity, VLMo) | "random" (uniform; the
    # demo's: its heads learn nothing from hard ones)
    itm_negatives: str = knob("hard", rule=one_of("hard", "random"), absent="hard")
    # "auto" (bf16 on CUDA, fp32 on CPU) | "fp32" | "bf16" | "fp16"
    precision: str = knob("auto", rule=one_of("auto", "fp32", "bf16", "fp16"))
    compile: bool = False        # torch.compile the student
    cache_teacher: bool = True   # cache teacher CLS per image when the teacher view is fixed (exact)
    # steps between metric lines (and host syncs)
    log_every: int = knob(25, rule=AT_LEAST_ONE, role="operational")
    ckpt_every: int = knob(200, rule=AT_LEAST_ONE, role="operational")  # steps between checkpoints
    # steps between checkpoints also kept as checkpoint-step<N>.pt (a multiple of ckpt_every; 0 = none): the
    # snapshots a held-out curve is evaluated on afterwards (thesis_lib.study.claims.designs)
    keep_every: int = knob(0, rule=AT_LEAST_ZERO, role="operational")
    grad_clip: float = knob(0.0, rule=NON_NEGATIVE)  # 0 = off (thesis: none)


THESIS_GLOBAL_BATCH = 512   # the thesis run's pairs per step: 256 per GPU on 2 GPUs (docs/sources.md §3)
THESIS_STEPS_RUN = 44632    # its steps: it stopped 4 before the 44,636 its schedule (TrainConfig.steps) has


@dataclass(frozen=True)
class PretrainConfig:
    """The demo's stand-in for Data2Vec2 / BEiTv2 pretraining (thesis_lib.training.pretrain);
    unused at the thesis scale."""
    # masked-patch regression of the image encoder (SimMIM-style)
    image_steps: int = knob(600, rule=AT_LEAST_ZERO)
    text_steps: int = knob(600, rule=AT_LEAST_ZERO)     # masked language modelling of the text encoder
    # supervised multi-label scene attributes (the teacher never sees captions)
    teacher_steps: int = knob(800, rule=AT_LEAST_ZERO)
    # weight of the shape labels' loss (colour-shape pairs and colours: 1)
    teacher_shape_weight: float = knob(3.0, rule=NON_NEGATIVE)
    batch_size: int = knob(128, rule=AT_LEAST_ONE)
    lr: float = knob(1e-3, rule=POSITIVE)
    mask_ratio: float = knob(0.5, rule=UNIT_OPEN)   # image: share of patches replaced by the mask token
    mlm_prob: float = knob(0.15, rule=UNIT_OPEN)    # text: share of tokens masked
    # encoders are pretrained with depth_factor × the kept blocks (thesis: 12 → 6)
    depth_factor: int = knob(2, rule=AT_LEAST_ONE)


@dataclass(frozen=True)
class EvalConfig:
    batch_size: int = knob(256, rule=AT_LEAST_ONE, role="operational")
    # images per chunk of the similarity matrix (chunk × captions floats at once)
    retrieval_chunk: int = knob(2048, rule=AT_LEAST_ONE, role="operational")
    # fusion variants: candidates per query re-scored by the ITM head
    rerank_k: int = knob(16, rule=AT_LEAST_ONE, absent=WANTED)
    # retrieval sets re-ranked (COCO-5K's 25K captions cost 5× more)
    rerank_sets: tuple = knob(("flickr",), absent=WANTED)


@dataclass(frozen=True)
class WeightsConfig:
    """Where the pretrained parts come from. Per part: "" = the source's default, a file path,
    "hf:<name or folder>" (transformers), "timm:<file>" (timm's BEiTv2 loader) or "demo" (the cached demo
    pretraining's file; kept symbolic so that stored configs hold no machine-specific path)."""
    # "thesis" (original files) | "demo" (cached demo pretraining) | "random"
    source: str = knob("thesis", rule=one_of("thesis", "demo", "random"))
    # thesis defaults: base_imagenet.pt, nlp_base.pt, beitv2_base_patch16_224_pt1k.pth, and the tokenizer files
    # encoder.json, vocab.bpe, dict.txt
    checkpoint_dir: str = knob("", role="path")
    image: str = knob("", role="source")
    text: str = knob("", role="source")
    teacher: str = knob("", role="source")
    tokenizer: str = knob("", role="source")


@dataclass(frozen=True)
class ExperimentConfig:
    preset: str = "thesis"
    seed: int = knob(0, rule=SEED)
    model: ModelConfig = field(default_factory=ModelConfig)
    teacher: TeacherConfig = field(default_factory=TeacherConfig)
    data: DataConfig = field(default_factory=DataConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    pretrain: PretrainConfig = field(default_factory=PretrainConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    weights: WeightsConfig = field(default_factory=WeightsConfig)


def field_metadata(group=None, prefix: str = "") -> dict:
    """Every scalar field's dotted name (``"train.log_every"``) → its metadata (``knob``), nested groups walked."""
    out = {}
    for f in dataclasses.fields(group or ExperimentConfig()):
        value = getattr(group or ExperimentConfig(), f.name)
        if dataclasses.is_dataclass(value):
            out.update(field_metadata(value, f"{prefix}{f.name}."))
        else:
            out[prefix + f.name] = f.metadata
    return out


def fields_with(**wanted) -> tuple[str, ...]:
    """The dotted names of the fields whose metadata holds every ``key=value`` given (``fields_with(role="path")``;
    an unset role reads "science")."""
    return tuple(name for name, meta in field_metadata().items()
                 if all(meta.get(k, "science" if k == "role" else None) == v for k, v in wanted.items()))


def _thesis() -> ExperimentConfig:
    return ExperimentConfig()


def _demo() -> ExperimentConfig:
    world = WorldConfig()
    image = ImageConfig(img_size=world.img_size, patch_size=8)                  # 4 × 4 patches + I_CLS
    text = TextConfig(vocab_size=512, max_len=48, max_positions=64, mask_id=4)
    return ExperimentConfig(
        preset="demo",
        model=ModelConfig(image=image, text=text, dim=96, num_heads=4, image_depth=2, text_depth=2),
        teacher=TeacherConfig(dim=96, depth=4, num_heads=4, patch_size=8),
        data=DataConfig(source="world", world=world, teacher_view="fixed", num_workers=0, in_memory=True,
                        zeroshot_templates="world"),
        train=TrainConfig(batch_size=128, steps=600, base_lr=3e-3, log_every=25, ckpt_every=100, itm_batch=32,
                          itm_negatives="random"),
        eval=EvalConfig(rerank_k=10),
        weights=WeightsConfig(source="demo"),
    )


def _smoke() -> ExperimentConfig:
    world = WorldConfig(img_size=16, n_train=96, n_val=16, n_coco_test=40, n_flickr_test=24,
                        n_zeroshot_per_class=2, n_image_corpus=96, n_text_corpus=200)
    image = ImageConfig(img_size=16, patch_size=4)             # 16 patches + I_CLS, as many tokens as the demo
    text = TextConfig(vocab_size=320, max_len=48, max_positions=64, mask_id=4)
    return ExperimentConfig(
        preset="smoke",
        model=ModelConfig(image=image, text=text, dim=32, num_heads=2, image_depth=1, text_depth=1),
        teacher=TeacherConfig(dim=32, depth=1, num_heads=2, patch_size=4),
        data=DataConfig(source="world", world=world, teacher_view="fixed", num_workers=0, in_memory=True,
                        zeroshot_templates="world"),
        train=TrainConfig(batch_size=16, steps=6, base_lr=1e-3, log_every=2, ckpt_every=3),
        pretrain=PretrainConfig(image_steps=4, text_steps=4, teacher_steps=4, batch_size=16),
        eval=EvalConfig(batch_size=64, retrieval_chunk=16),
        weights=WeightsConfig(source="demo"),
    )


@dataclass(frozen=True)
class Preset:
    """A named scale: the function that builds its config, and what the study does with it (read as fields: no
    module branches on a preset's name, tests/test_layout.py)."""
    build: Callable[[], ExperimentConfig]
    committed: bool = False   # its results and figures are the repository's: figures/ itself, not figures/<preset>/
    path_test: bool = False   # tests the code's path only: a fixed design trains two seeds, a long one twice its steps
    real_data: bool = False   # trains on the real sets: a study needs the data folder and the checkpoints
    drawn_as: str = ""        # the preset whose model sizes the notation figures draw ("": its own)
    thesis_budget: bool = False   # its runs have the thesis's budget and length already: no fixed design runs there


PRESET_SPECS = {"thesis": Preset(_thesis, real_data=True, drawn_as="demo", thesis_budget=True),
                "demo": Preset(_demo, committed=True), "smoke": Preset(_smoke, path_test=True)}
PRESETS = tuple(PRESET_SPECS)


def get_config(preset: str = "demo", variant: str = "baseline", seed: int = 0,
               overrides: dict | None = None) -> ExperimentConfig:
    """The resolved config of one run; ``overrides`` maps dotted field names to values."""
    if preset not in PRESET_SPECS:
        raise ConfigError(f"unknown preset {preset!r}; choose one of {', '.join(PRESETS)}")
    if variant not in VARIANTS:
        raise ConfigError(f"unknown variant {variant!r}; choose one of {', '.join(VARIANTS)}")
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ConfigError(f"seed must be a non-negative integer, got {seed!r}")
    cfg = PRESET_SPECS[preset].build()
    cfg = replace_path(cfg, "model.variant", variant)
    cfg = dataclasses.replace(cfg, seed=seed)
    for key, value in (overrides or {}).items():
        cfg = replace_path(cfg, key, value)
    if cfg.model.text_encoder == "bert" and cfg.model.text == TextConfig():
        cfg = dataclasses.replace(cfg, model=dataclasses.replace(cfg.model, text=BERT_TEXT))  # final thesis text
    check_config(cfg)
    return cfg


