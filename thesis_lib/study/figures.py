"""Every figure by name: ``draw(name, params)`` builds it from code (notation figures) or from the stored results
(the study figures), saves PNG + PDF and returns it. The notebooks call ``draw``; so does

    python -m thesis_lib.study.figures [--preset demo] [--output-dir DIR]      (make figures)

which redraws every figure from ``results/`` alone, without training.
"""
from __future__ import annotations

import argparse
import sys
from functools import partial

import numpy as np
import torch

from ..config import get_config
from ..data import world
from ..errors import ThesisError
from ..models.representations import PostLNBlock, pre_ln_block, sincos_2d
from ..variants import DOSE_VARIANTS, TABLE1_VARIANTS as TABLE1, TABLE2_VARIANTS as TABLE2
from . import mechanisms, plotting, reference, runs, tables

TTE_USED = ("tte_after", "tte_after_ls", "tte_shared")               # notebook 04: is the TTE used?
ABLATION_METRICS = {"coco_mean": "COCO retrieval (primary)", "imagenet_top1": "ImageNet top-1"}


def _notation_image(params) -> np.ndarray:
    img = get_config(params.preset).model.image
    size = 224 if params.preset == "thesis" else max(img.img_size, 64)
    rng = np.random.default_rng(7)
    return np.asarray(world.render(world.sample_scene(rng, "coco", n_things=3), size, rng))


def fig_patch_grid(params):
    img = get_config(params.preset).model.image
    image = _notation_image(params)
    return plotting.patch_grid(image, img.patch_size * image.shape[0] // img.img_size)


def fig_positional_similarity(params):
    return plotting.positional_similarity(sincos_2d(768, 14), 14)


def pre_post_ln_scales(preset: str, depth: int = 24) -> dict:
    m = get_config(preset).model
    return {"pre-LN (notation Eqs. 9-10)": plotting.activation_scale_at_init(
                partial(pre_ln_block, m.dim, m.num_heads, m.mlp_ratio), depth, m.dim),
            "post-LN (Vaswani et al.; Data2Vec2)": plotting.activation_scale_at_init(
                partial(PostLNBlock, m.dim, m.num_heads, m.mlp_ratio), depth, m.dim)}


def fig_pre_vs_post_ln(params):
    return plotting.pre_vs_post_ln(pre_post_ln_scales("smoke" if params.preset == "smoke" else "demo"))


def _bars(params, variants, metrics=None):
    df = tables.results_frame(params, variants)
    labels = {m: tables.METRIC_LABELS[m] for m in (metrics or tables.TABLE_METRICS)}
    present = set(df.variant) if len(df) else set()
    return plotting.results_bars(df, [v for v in variants if v in present], labels)


def fig_baseline_curves(params):
    return plotting.loss_curves(tables.curves(params, "baseline"))


def fig_loss_curves(params):
    import pandas as pd
    return plotting.loss_curves(pd.concat([tables.curves(params, v) for v in TABLE2]))


def gammas(params) -> dict:
    out = {}
    for seed in params.seeds:
        path = params.results_root / params.preset / "tte_after_ls" / f"seed{seed}" / "layerscale.npy"
        if path.exists():
            out[seed] = np.load(path)
    return out


def _forest(params, family: str, variants):
    """Paired contrasts of one declared family of claims (mean ± 95 % CI, seeds, margin band, thesis marker)."""
    return plotting.forest(tables.difference_frame(tables.results_frame(params, variants), family), title=family)


def fig_dual_encoder_forest(params):
    df = tables.results_frame(params, mechanisms.DUAL)
    return plotting.forest(mechanisms.forest_frame(df, mechanisms.DUAL_PAIRS, mechanisms.DUAL_METRICS),
                           title="notebook 05: dual-encoder use (Holm over the table's rows)")


def fig_tte_contribution(params):
    import pandas as pd
    variants = (*DOSE_VARIANTS, "tte_after")           # γ's initial value rising, then no LayerScale (γ = 1 fixed)
    df = tables.results_frame(params, variants)
    return plotting.tte_contribution(df, pd.concat([tables.curves(params, v) for v in variants if v in set(df.variant)]))


FIGURES = {
    "00_patch_grid": fig_patch_grid,
    "00_positional_similarity": fig_positional_similarity,
    "00_pre_vs_post_ln": fig_pre_vs_post_ln,
    "01_baseline_curves": fig_baseline_curves,
    "02_table1_forest": lambda p: _forest(p, reference.TABLE1, TABLE1),
    "02_table1_bars": lambda p: _bars(p, TABLE1),
    "03_table2_forest": lambda p: _forest(p, reference.TABLE2, TABLE2),
    "03_table2_bars": lambda p: _bars(p, TABLE2),
    "03_loss_curves": fig_loss_curves,
    "04_gamma_histogram": lambda p: plotting.gamma_histogram(gammas(p)),
    "04_gamma_per_channel": lambda p: plotting.gamma_per_channel(gammas(p)),
    "04_gamma_evolution": lambda p: plotting.gamma_evolution(tables.curves(p, "tte_after_ls")),
    "04_tte_contribution": fig_tte_contribution,
    "04_tte_ablation": lambda p: plotting.tte_ablation(tables.results_frame(p, TTE_USED), TTE_USED, ABLATION_METRICS),
    "04_dose_forest": lambda p: _forest(p, reference.DOSE, ("baseline", *DOSE_VARIANTS)),
    "05_dual_encoder_forest": fig_dual_encoder_forest,
    "05_dual_encoder_bars": lambda p: _bars(p, mechanisms.DUAL, mechanisms.DUAL_METRICS),
    "05_fusion_bars": lambda p: _bars(p, mechanisms.FUSION, mechanisms.FUSION_METRICS),
    "05_switch_choices": lambda p: plotting.switch_choices(mechanisms.switch_choices(p)),
}


def draw(name: str, params):
    """Build figure ``name``, save it under the preset's figures folder (PNG + PDF), return it."""
    fig = FIGURES[name](params)
    plotting.save(fig, params.figures, name)
    return fig


def main(argv=None) -> int:
    import matplotlib.pyplot as plt
    p = argparse.ArgumentParser(prog="python -m thesis_lib.study.figures", description=__doc__.split("\n\n")[0])
    p.add_argument("--preset", default="demo")
    p.add_argument("--seeds", default=None, help=f"default: {list(runs.SEEDS)}")
    p.add_argument("--output-dir", default=None)
    args = p.parse_args(argv)
    try:
        params = runs.study_params(args.preset, args.seeds, "cpu", args.output_dir, need_data=False)   # stored results
    except ThesisError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    torch.manual_seed(0)
    skipped = []
    for name in FIGURES:
        try:
            plt.close(draw(name, params))
        except Exception as err:          # a figure whose runs do not exist yet: say so, draw the others
            skipped.append(name)
            print(f"skipped {name}: its results are missing or incomplete ({type(err).__name__}: {err})",
                  file=sys.stderr)
            plt.close("all")
            continue
        print(f"{params.figures / name}.png/.pdf")
    if skipped:
        print(f"{len(skipped)} of {len(FIGURES)} figures skipped; run the notebooks that train their variants",
              file=sys.stderr)
    return 1 if skipped else 0


if __name__ == "__main__":
    raise SystemExit(main())
