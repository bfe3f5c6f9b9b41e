"""The full-scale path rehearsed end to end in minutes, on tiny files in the real formats (study/fixtures.py):

    make rehearsal                                        # = python -m thesis_lib.study.rehearsal --out build/rehearsal
    python -m thesis_lib.study.rehearsal --device cuda    # the same on a GPU host

It takes the README's full-scale recipe at the thesis preset with the model shrunk to width 32 (``fixtures.SHRINK``;
real loaders, DataLoader workers, the augmented teacher view, the fairseq tokenizer, OpenAI's 80 templates) and runs,
in order: the checkpoint check (``models.check``); one ``torchrun`` training of 2 processes (gloo on CPU) on the
COCO + two webdataset shard sets mixture; every notebook with papermill at that scale, notebook 03 reusing the
torchrun run instead of retraining it; the figures and the README-style report of that scale. Each stage is timed
and the run ends with a summary; any failure stops it with the stage's output and a non-zero exit.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

from ..paths import ROOT
from . import fixtures

NOTEBOOKS = ("00_notation", "01_baseline", "02_tte_before_encoders", "03_tte_layerscale", "04_layerscale_weights",
             "05_modality_mechanisms")
SEEDS = [0, 1]                        # two paired seeds: the paired statistics run, not only the means
TORCHRUN = ("tte_after_ls", 0)        # the run trained by torchrun, which notebook 03 must reuse


def write_data(out: Path) -> tuple[Path, Path, str]:
    """DATA and CKPT folders and the ``data.train_sets`` value of the mixture (COCO + two shard sets)."""
    data, ckpt = out / "DATA", out / "CKPT"
    fixtures.karpathy_coco(data / "coco")
    fixtures.karpathy_flickr(data / "flickr30k")
    fixtures.imagenet_val(data / "imagenet")
    cc3m = fixtures.web_shards(data / "cc3m", "cc3m", seed=0)
    cc12m = fixtures.web_shards(data / "cc12m", "cc12m", seed=50)
    fixtures.checkpoint_folder(ckpt)
    return data, ckpt, f"coco,wds:{cc3m}@12,wds:{cc12m}"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(cmd: list[str], log: Path, env: dict | None = None) -> None:
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env={**os.environ, **(env or {})})
    log.write_text(done.stdout + done.stderr)
    if done.returncode:
        tail = (done.stdout + done.stderr)[-3000:]
        raise SystemExit(f"rehearsal: `{' '.join(cmd[:6])} …` failed (exit {done.returncode}); log {log}\n{tail}")


def torchrun_training(data: Path, ckpt: Path, mix: str, runs: Path, device: str, log: Path) -> None:
    """One run of 2 processes × half the batch: the same run (global batch) as the notebooks' one process."""
    processes = 2 if device == "cpu" else max(1, min(2, _cuda_count()))
    sets = {**fixtures.SHRINK, "train.batch_size": fixtures.SHRINK["train.batch_size"] // processes,
            "data.train_sets": mix}
    variant, seed = TORCHRUN
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(processes), "--master_port",
           str(_free_port()), "-m", "thesis_lib.training.run", "--preset", "thesis", "--variant", variant, "--seed",
           str(seed), "--device", device, "--data-root", str(data), "--checkpoints", str(ckpt), "--out", str(runs),
           "--no-progress"] + [a for k, v in sets.items() for a in ("--set", f"{k}={v}")]
    _run(cmd, log)


def _cuda_count() -> int:
    import torch
    return torch.cuda.device_count()


def notebooks(names, seeds, data: Path, ckpt: Path, mix: str, runs: Path, device: str, logs: Path) -> None:
    import papermill as pm
    params = {"preset": "thesis", "seeds": seeds, "device": device, "data_root": str(data),
              "checkpoints": str(ckpt), "output_dir": str(runs),
              "overrides": {**fixtures.SHRINK, "data.train_sets": mix}}
    for name in names:
        pm.execute_notebook(str(ROOT / "notebooks" / f"{name}.ipynb"), str(logs / f"{name}.ipynb"),
                            parameters=params, kernel_name="python3", progress_bar=False, cwd=str(ROOT))


def figures_and_report(seeds, runs: Path, logs: Path) -> None:
    seeds = json.dumps(seeds)
    _run([sys.executable, "-m", "thesis_lib.study.figures", "--preset", "thesis", "--seeds", seeds,
          "--output-dir", str(runs)], logs / "figures.log")
    _run([sys.executable, "-m", "thesis_lib.study.report", "--preset", "thesis", "--seeds", seeds,
          "--output-dir", str(runs)], logs / "report.txt")


def check_outcome(runs: Path, seeds) -> list[str]:
    """What the rehearsal must have produced; returns the summary lines (raises SystemExit on a gap)."""
    results = sorted((runs / "results" / "thesis").glob("*/seed*.json"))
    variant, seed = TORCHRUN
    reused = json.loads((runs / "results" / "thesis" / variant / f"seed{seed}.json").read_text())
    if reused["train"]["world_size"] != 2 and _cuda_count() != 1:
        raise SystemExit(f"rehearsal: notebook 03 retrained {variant} seed {seed} instead of reusing the torchrun run")
    shards = reused["train"].get("shards", {})
    broken = sum(sum(v for k, v in r.items() if k in ("unreadable_image", "truncated_image", "empty_caption",
                                                       "missing_image", "missing_caption")) for r in shards.values())
    figures = sorted((runs / "figures" / "thesis").glob("*.png"))
    return [f"{len(results)} result files ({len({r.parent.name for r in results})} variants × seeds {seeds})",
            f"torchrun: {variant} seed {seed} on {reused['train']['world_size']} processes, reused by notebook 03; "
            f"{len(shards)} shard sets, {broken} broken samples counted and skipped",
            f"{len(figures)} figures in {runs / 'figures' / 'thesis'}"]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m thesis_lib.study.rehearsal", description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=ROOT / "build" / "rehearsal")
    p.add_argument("--device", default="cpu")
    p.add_argument("--skip-notebooks", action="store_true", help="fixtures, check and torchrun only (seconds)")
    p.add_argument("--keep", action="store_true", help="keep the finished runs of an earlier rehearsal in --out")
    p.add_argument("--notebooks", default=",".join(NOTEBOOKS),
                   help="comma-separated notebooks to run (default all; the figures and report only with all)")
    p.add_argument("--seeds", default=",".join(map(str, SEEDS)), help="comma-separated seeds (default 0,1)")
    args = p.parse_args(argv)
    names, seeds = [n for n in args.notebooks.split(",") if n], [int(s) for s in args.seeds.split(",")]
    unknown = sorted(set(names) - set(NOTEBOOKS))
    if unknown:
        p.error(f"unknown notebooks {unknown}; choose from {', '.join(NOTEBOOKS)}")
    if not args.keep:
        shutil.rmtree(args.out, ignore_errors=True)
    logs = args.out / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    saved = {k: os.environ.get(k) for k in ("THESIS_PROGRESS", "THESIS_DATA")}
    os.environ.setdefault("THESIS_PROGRESS", "0")
    os.environ["THESIS_DATA"] = str(args.out / "cache")          # caches of this rehearsal only
    try:
        return _rehearse(args, names, seeds, logs)
    finally:                                                     # called in-process (tests): leave no trace
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _rehearse(args, names, seeds, logs: Path) -> int:
    runs, times, start = args.out / "runs", {}, time.perf_counter()

    def stage(name, fn, *a):
        t = time.perf_counter()
        print(f"[rehearsal] {name} …", flush=True)
        fn(*a)
        times[name] = time.perf_counter() - t

    data, ckpt, mix = write_data(args.out)
    from ..models.check import check_folder
    stage("checkpoint check", lambda: _require_clean(check_folder(ckpt, fixtures.SHRINK)))
    stage("torchrun training", torchrun_training, data, ckpt, mix, runs, args.device, logs / "torchrun.log")
    summary = []
    if not args.skip_notebooks and names:
        stage(f"notebooks {', '.join(n[:2] for n in names)}", notebooks, names, seeds, data, ckpt, mix, runs,
              args.device, logs)
        if set(names) == set(NOTEBOOKS):
            stage("figures + report", figures_and_report, seeds, runs, logs)
        else:
            summary.append("figures and report skipped (not every notebook ran)")
        summary = check_outcome(runs, seeds) + summary
    else:
        summary = ["notebooks, figures and report skipped (--skip-notebooks)"]
    print("\n[rehearsal] done in {:.0f} s: ".format(time.perf_counter() - start)
          + ", ".join(f"{k} {v:.0f} s" for k, v in times.items()))
    print("\n".join(f"  - {line}" for line in summary) + f"\n  - logs and executed notebooks: {logs}")
    return 0


def _require_clean(rows) -> None:
    bad = [f"{r.name}: {r.problem}" for r in rows if r.problem]
    if bad:
        raise SystemExit("rehearsal: the checkpoint check failed: " + "; ".join(bad))


if __name__ == "__main__":
    raise SystemExit(main())
