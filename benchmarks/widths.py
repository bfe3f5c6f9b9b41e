"""The width ladder's cost before its runs: per width (``designs.LADDER_WIDTHS`` and the demo's 96), the model's
parameters and the seconds a training step of the budget arm takes on this machine, as ``bench.train_step_rate``
times the loop's own step (random weights: a step's cost does not depend on their values).

    python benchmarks/widths.py [--steps 20]          # writes benchmarks/widths.json, prints a Markdown table

A run's cost follows: 600 steps, a pair of runs per seed; compare rows from one machine only (``machine``).
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch

from bench import train_step_rate
from thesis_lib import get_config
from thesis_lib.models.emkum import build_model
from thesis_lib.numerics import machine
from thesis_lib.study.claims.designs import BUDGET_VARIANT, LADDER_WIDTHS, width_overrides

OUT = Path(__file__).with_name("widths.json")


def width_row(width: int, steps: int) -> dict:
    cfg = get_config("demo", BUDGET_VARIANT, overrides={**dict(width_overrides(width)), "weights.source": "random"})
    with torch.device("meta"):
        parameters = sum(p.numel() for p in build_model(cfg, pretrained=False).parameters())
    rate = train_step_rate(cfg, torch.device("cpu"), steps)
    return {"width": width, "heads": cfg.model.num_heads, "parameters": parameters, "s/step": rate["ms/step"] / 1000,
            "s/run (600 steps)": rate["ms/step"] / 1000 * cfg.train.steps}


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=20)
    args = p.parse_args(argv)
    rows = [width_row(w, args.steps) for w in (96,) + LADDER_WIDTHS]
    for r in rows:
        r["× width 96 (s/step)"] = r["s/step"] / rows[0]["s/step"]
    found = {"machine": machine(), "threads": torch.get_num_threads(), "rows": rows}
    OUT.write_text(json.dumps(found, indent=1) + "\n")
    print(f"# {machine()}, {torch.get_num_threads()} threads\n\n| width | heads | parameters | s/step | s/run | × 96 |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['width']} | {r['heads']} | {r['parameters']:,} | {r['s/step']:.3f} | "
              f"{r['s/run (600 steps)']:.0f} | {r['× width 96 (s/step)']:.1f} |")


if __name__ == "__main__":
    main()
