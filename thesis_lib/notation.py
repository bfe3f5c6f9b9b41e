"""The notation chapter's figures (notebook 00), drawn from the model's own code and a preset's config, with no run
and no result behind them: an image cut into its patches, the 2-D sin-cos positions' similarities, and the scale of
the residual stream through pre-LN and post-LN blocks at initialisation (notation Eqs. 9-10). The study's figures
(``study.pages.figures``) draw them by name, in the same style."""
from __future__ import annotations

import math
from functools import partial

import matplotlib.pyplot as plt
import numpy as np
import torch

from .config import get_config
from .data import world
from .models.representations import PostLNBlock, PreLNBlock


def patch_grid_of(preset: str):
    """An image of the preset's size cut into the preset's patches (its config's numbers, nothing rescaled)."""
    img = get_config(preset).model.image
    rng = np.random.default_rng(7)
    image = np.asarray(world.render(world.sample_scene(rng, "coco", n_things=3), img.img_size, rng))
    return patch_grid(image, img.patch_size, preset)


def patch_grid(image: np.ndarray, patch: int, preset: str):
    """The image cut into its grid of P × P patches, and the first (up to 6) patches flattened into C·P² vectors;
    every number in the labels is the image's and ``patch``'s (the preset's config)."""
    H, W, C = image.shape
    n_show = min(6, W // patch)
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4.2), gridspec_kw={"width_ratios": [1, 1.4]})
    a.imshow(image, interpolation="nearest")
    for k in range(0, H + 1, patch):
        a.axhline(k - 0.5, color="white", lw=0.8)
    for k in range(0, W + 1, patch):
        a.axvline(k - 0.5, color="white", lw=0.8)
    a.set_title(f"{H} × {W} image ({preset} preset): {H // patch} × {W // patch} patches of {patch} × {patch} px",
                fontsize=10)
    a.axis("off")
    flat = [image[:patch, i * patch:(i + 1) * patch].transpose(2, 0, 1).reshape(-1) for i in range(n_show)]
    im = b.imshow(np.stack(flat), aspect="auto", cmap="gray", interpolation="nearest")
    fig.colorbar(im, ax=b, label="pixel value", pad=0.02)
    b.set_yticks(range(n_show), [f"patch {i + 1}" for i in range(n_show)])
    b.set_xlabel(f"flattened patch: C·P² = {C}·{patch}² = {flat[0].size} values (R, G, B planes)")
    b.set_title(f"the top row's {n_show} patches, flattened", fontsize=10)
    b.grid(False)
    fig.tight_layout()
    return fig


def positional_similarity(table: torch.Tensor, grid: int):
    """Cosine similarity of six positions' encodings (the corners, the top edge's middle, the centre) to all N
    positions, drawn on the patch grid."""
    positions = [0, grid // 2, grid - 1, grid * (grid // 2) + grid // 2, grid * grid - grid, grid * grid - 1]
    t = torch.nn.functional.normalize(table.float(), dim=-1)
    fig, axes = plt.subplots(1, len(positions), figsize=(2.3 * len(positions) + 1.0, 2.8), squeeze=False,
                             layout="constrained")
    sims = (t[positions] @ t.T).numpy()
    low = math.floor(10 * min(sims.min(), 0.99)) / 10                # the colour scale spans the data, not -1..1
    for ax, p, sim in zip(axes[0], positions, sims):
        im = ax.imshow(sim.reshape(grid, grid), cmap="viridis", vmin=low, vmax=1)
        ax.set_title(f"position ({p // grid}, {p % grid})", fontsize=9)
        ax.axis("off")
    fig.colorbar(im, ax=axes[0].tolist(), label=f"cosine similarity\n(colour scale: the data's range, {low:g} to 1)",
                 shrink=0.9, pad=0.02)
    fig.suptitle(f"cosine similarity of t_pos_i to all {grid * grid} positions (2-D sin-cos)")
    return fig


def activation_scale_at_init(make_block, depth: int, dim: int, tokens: int = 50, seed: int = 0) -> np.ndarray:
    """RMS of H_l per block l at initialisation (H_0 ~ N(0, 1)): pre-LN adds each block's output to an
    un-normalised residual stream, post-LN normalises the stream after every block."""
    torch.manual_seed(seed)
    x = torch.randn(8, tokens, dim)
    out = []
    with torch.no_grad():
        for _ in range(depth):
            x = make_block()(x)
            out.append(x.pow(2).mean().sqrt().item())
    return np.array(out)


def pre_vs_post_ln(scales: dict):
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for name, values in scales.items():
        ax.plot(np.arange(1, len(values) + 1), values, marker="o", label=name)
    ax.set(xlabel="block l", ylabel="RMS of H_l",
           title="at initialisation: the pre-LN stream grows, post-LN re-normalises")
    ax.legend()
    return fig


def pre_post_ln_scales(preset: str, depth: int = 24) -> dict:
    m = get_config(preset).model
    blocks = {"pre-LN (notation Eqs. 9-10)": PreLNBlock, "post-LN (Vaswani et al.; Data2Vec2)": PostLNBlock}
    return {name: activation_scale_at_init(partial(block, m.dim, m.num_heads, m.mlp_ratio), depth, m.dim)
            for name, block in blocks.items()}


def world_strip(pictures, captions, per_line: int = 22):
    """The generated world the demo trains and tests on, as a reader meets it on the README's first screen: the shipped
    example pictures (``api.examples``; 32 pixels a side, drawn without smoothing) above their own captions."""
    import textwrap
    fig, axes = plt.subplots(1, len(pictures), figsize=(1.25 * len(pictures), 2.35))
    for ax, picture, caption in zip(np.atleast_1d(axes), pictures, captions):
        ax.imshow(np.asarray(picture), interpolation="nearest")
        ax.set_xticks([]), ax.set_yticks([])
        ax.set_xlabel(textwrap.fill(caption, per_line), fontsize=6.5, va="top")
    fig.suptitle("The generated world: test pictures (32 × 32 pixels) and their captions", fontsize=9)
    fig.tight_layout(w_pad=0.4)
    return fig
