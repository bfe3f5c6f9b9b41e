"""Evaluate a trained checkpoint without retraining: what a run measures at its end (its metrics, the TTE ablation,
the modality probe, the TTE's share, the LayerScale γ statistics), measured the same way on the model a checkpoint
holds, its own or a demo run's (docs/evaluate.md).

    python -m thesis_lib.evaluate results/demo/tte_after_ls/seed0/checkpoint.pt --out eval/
    python -m thesis_lib.evaluate run/checkpoint.pt --out eval/ --device cuda --data-root /data --checkpoints /ckpt

writes ``OUT/<preset>-<variant>-seed<N>-step<S>-eval.json`` (and γ's values beside it, ``…-layerscale.npy``). The
run's config comes from the checkpoint; the evaluation sets, the probe's inputs and every measurement are the
training run's own (``training.run.evaluate_trained``), so a final checkpoint gives its run's numbers exactly on the
same machine.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from pathlib import Path

from .analysis import checkpoint_config, load_trained, read_checkpoint
from .cache import write_json_atomic
from .config_checks import location_overrides
from .data.eval_sets import build_eval_sets
from .data.tokenizer import load_tokenizer
from .errors import CliErrors
from .numerics import machine, one_thread
from .metrics import COCO_MEAN, FLICKR_MEAN, IMAGENET_TOP1, IMAGENET_TOP5
from .paths import show_progress
from .training.prepare import prepare_assets
from .training.results import check_writable
from .training.run import (add_source_args, add_user_args, evaluate_trained, probe_inputs, resolve_device,
                           result_record)


def evaluation_inputs(cfg, say=lambda what: None) -> tuple:
    """The tokenizer and the evaluation sets a run of ``cfg`` evaluated itself on (its world and tokenizer prepared
    once, no pretrained parts)."""
    root = prepare_assets(cfg, pretrained=False)
    tokenizer = load_tokenizer(cfg, root)
    say("building the evaluation sets")
    return tokenizer, build_eval_sets(cfg, tokenizer, root)


def evaluate_checkpoint(checkpoint, out_dir, device: str = "cpu", data_root: str | None = None,
                        checkpoints: str | None = None, say=lambda what: None) -> tuple[Path, dict]:
    """Evaluate a run's checkpoint as the run evaluates itself at its end and write the result to ``out_dir``;
    returns its path and the result. ``data_root`` and ``checkpoints``: where the real data and the original files
    lie on this machine (the training CLI's ``--data-root``, ``--checkpoints``; default: the checkpoint's config's).
    On CPU it computes on one thread, as the run does. ``say(what)`` is told each step before it starts."""
    path = Path(checkpoint)
    dev = resolve_device(device)
    say(f"reading {path}")
    state = read_checkpoint(path)
    cfg = checkpoint_config(state, f"checkpoint {path}", location_overrides(data_root, checkpoints))
    out_dir = Path(out_dir)
    check_writable(out_dir)
    step = int(state["step"])
    with one_thread() if dev.type == "cpu" else contextlib.nullcontext():
        say(f"{cfg.preset} {cfg.model.variant} seed {cfg.seed}, step {step} of {cfg.train.steps}: preparing its data")
        tokenizer, eval_sets = evaluation_inputs(cfg, say)
        model = load_trained(state, dev, cfg)
        del state                                      # the optimiser's state: as large as the model, twice
        found = evaluate_trained(cfg, model, tokenizer, eval_sets, dev, probe_inputs(cfg, eval_sets, tokenizer, dev),
                                 say)
    stem = f"{cfg.preset}-{cfg.model.variant}-seed{cfg.seed}-step{step}"
    result = result_record(cfg, model, found, out_dir / f"{stem}-layerscale.npy", out_dir,
                           checkpoint=str(path.resolve()), step=step, steps=cfg.train.steps, device=str(dev),
                           machine=machine(dev))
    return write_json_atomic(out_dir / f"{stem}-eval.json", result), result


def summary(result: dict) -> str:
    """The result in a few lines: the metrics, and the TTE ablation and γ where the variant has them."""
    m = result["metrics"]
    lines = [f"{result['preset']} {result['variant']} seed {result['seed']}, step {result['step']} of "
             f"{result['steps']}: ImageNet top-1 {m[IMAGENET_TOP1]:.2f}  top-5 {m[IMAGENET_TOP5]:.2f}  "
             f"COCO {m[COCO_MEAN]:.2f}  Flickr {m[FLICKR_MEAN]:.2f}"]
    for mode, a in result.get("tte_ablation", {}).items():
        lines.append(f"  TTE {mode + ':':9} ImageNet top-1 {a[IMAGENET_TOP1]:.2f}  top-5 {a[IMAGENET_TOP5]:.2f}  "
                     f"COCO {a[COCO_MEAN]:.2f}  Flickr {a[FLICKR_MEAN]:.2f}")
    if "tte_contribution" in result:
        c = result["tte_contribution"]
        lines.append(f"  TTE share ‖γ ⊙ t‖ / ‖H‖: image {c['image']:.4g}  text {c['text']:.4g}")
    p = result["modality_probe"]
    lines.append(f"  modality probe (no TTE): vector {p['accuracy_vector']:.1f} %  norm {p['accuracy_norm']:.1f} %  "
                 f"({p['tokens_per_modality']} tokens per modality)")
    if "layerscale" in result:
        g = result["layerscale"]
        lines.append(f"  LayerScale γ: mean {g['mean']:.3g}  std {g['std']:.3g}  |γ| mean {g['abs_mean']:.3g}  "
                     f"max {g['abs_max']:.3g}  (init {g['init']:.3g})")
    return "\n".join(lines)


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m thesis_lib.evaluate", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("checkpoint", help="a run's checkpoint.pt (results/<preset>/<variant>/seed<N>/checkpoint.pt)")
    p.add_argument("--out", required=True, help="folder the result JSON is written to")
    p.add_argument("--device", default="cpu", help="cpu, cuda, cuda:N or auto")
    add_source_args(p)
    add_user_args(p)
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.no_progress:
        os.environ["THESIS_PROGRESS"] = "0"
    start = time.perf_counter()

    def say(what: str) -> None:
        if show_progress():
            print(f"[{time.perf_counter() - start:7.1f} s] {what}", file=sys.stderr, flush=True)

    with CliErrors(args.debug, "interrupted; the result file is written only at the end") as cli:
        path, result = evaluate_checkpoint(args.checkpoint, args.out, args.device, args.data_root, args.checkpoints,
                                           say)
    if cli.code:
        return cli.code
    print(summary(result))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
