"""The full-scale path rehearsed end to end in minutes, on tiny files in the real formats (full_scale/fixtures.py):

    make rehearsal                          # = python -m thesis_lib.full_scale.rehearsal --out build/rehearsal
    python -m thesis_lib.full_scale.rehearsal --device cuda
                                            # the same on a GPU host (bash benchmarks/gpu.sh --rehearsal)

It takes the full-scale recipe at the thesis preset with the model shrunk to width 32 (``fixtures.SHRINK``; real
loaders, DataLoader workers, the fairseq tokenizer, OpenAI's 80 templates over ImageNet's 1,000 shipped class names)
and runs, in order:

1. the checkpoint check (``models.check``) on files that pickle fairseq's and unilm's ``args`` and trainer state
   beside their tensors, so that they load only through the guarded unpickler;
2. a ``torchrun`` training of 2 processes on the COCO + two webdataset shard sets mixture, ``TRAIN_STEPS`` steps
   with a checkpoint after each, the recipe's augmented teacher view and one training image that only fails when a
   batch decodes it (its pair is replaced and counted: docs/bad_inputs.md);
3. the same run again, killed (SIGKILL to its whole process group) once its log passes step ``KILL_AFTER``; its
   mixture's shards then staged to ``<out>/staged`` (``data.stage``, as a job stages them to node-local disk) and the
   run continued with ``--resume`` reading the copies (another path, the same sets and @N): its result, training curve
   and final checkpoint must equal the uninterrupted run's. Then the finished uninterrupted run is started again by
   torchrun with the staged mixture: it must be reused (its files untouched), and with one ``@N`` less it must be
   refused as another run (full_scale/kill_resume.py);
4. ``recipe status`` and ``recipe commands --layout slurm --missing-only`` against the runs folder, half finished
   (one of the recipe's runs done, the torchrun run): that run done, the others missing, the missing-only script
   submitting all but it (full_scale/half_finished.py);
5. the recipe's generated launches (full_scale/launches.py): lane 0 of ``recipe commands --layout 8gpu`` run by bash
   (its shard-index line, then torchrun), the training command of a ``--layout slurm`` sbatch line started as srun
   starts its 2 tasks (SLURM's variables, no torchrun; with the fixed teacher view, so that its target cache is built by
   both tasks in parts), and the pilot;
6. notebooks at that scale (default: all six; 03 must reuse the torchrun run instead of retraining it), one seed,
   then the figures and the README-style report of that scale.

2 processes always: gloo on the CPU, or NCCL where the host has 2 GPUs; on a one-GPU host (NCCL needs one GPU per
process) the torchrun stages run on its CPU with gloo and the notebooks on the GPU, and the log says so. Each stage
is timed and the run ends with a summary of what was checked; any failure stops it with the stage's output and a
non-zero exit. Every command it launches runs under ``data/lifetime.py``'s watcher: killed, the rehearsal takes
them (torchrun, its processes, bash's) with it.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from thesis_lib.data.lifetime import watched
from thesis_lib.paths import ROOT, results_dir
from thesis_lib.training.results import RunPaths

from ..study.runs import REHEARSAL_SEEDS
from . import fixtures
from .half_finished import half_finished
from .kill_resume import Torchrun, compare_runs, killed_and_resumed, read_staged, staged_reuse

NOTEBOOKS = ("00_notation", "01_baseline", "02_tte_before_encoders", "03_tte_layerscale", "04_layerscale_weights",
             "05_modality_mechanisms")
DEFAULT_NOTEBOOKS = NOTEBOOKS
NOTEBOOK_PARAMETERS = {"05_modality_mechanisms": {"fusion_variants": ["switch_sib"]}}   # one fusion head of two
TORCHRUN = ("tte_after_ls", 0)        # the run trained by torchrun, which notebook 03 must reuse
TRAIN_STEPS, KILL_AFTER = 8, 3        # 56 pairs = 7 global batches of 8: every pair, the undecodable one too, is met
TRAIN = {"train.steps": TRAIN_STEPS, "train.ckpt_every": 1, "train.log_every": 1, "eval.batch_size": 256}
FIXED_VIEW = {"data.teacher_view": "fixed"}      # the srun launch: the teacher-target cache, built in parts
WITHOUT_FIGURES = "04_effect_vs_dose,04_confirmation_forest"   # make long's designs and the demo's regimes over
                                                                # seeds: not part of a one-seed rehearsal


def write_data(out: Path) -> tuple[Path, Path, str]:
    """DATA and CKPT folders and the ``data.train_sets`` value of the mixture (COCO + two shard sets): 25 COCO pairs,
    the first 14 usable ones of the first shard set and all 17 of the second (one of which does not decode)."""
    data, ckpt = out / "DATA", out / "CKPT"
    fixtures.karpathy_coco(data / "coco")
    fixtures.karpathy_flickr(data / "flickr30k")
    fixtures.imagenet_val(data / "imagenet")
    cc3m = fixtures.web_shards(data / "cc3m", "cc3m", seed=0)
    cc12m = fixtures.web_shards(data / "cc12m", "cc12m", seed=50)
    fixtures.checkpoint_folder(ckpt)
    return data, ckpt, f"coco,wds:{cc3m}@14,wds:{cc12m}"


def overrides(mix: str) -> dict:
    return {**fixtures.SHRINK, **TRAIN, "data.train_sets": mix}


def torchrun_device(device: str) -> tuple[str, str]:
    """Where the 2 torchrun processes run, and why: the GPUs with NCCL where there are 2, else the CPU with gloo."""
    if device == "cpu":
        return "cpu", "gloo on the CPU"
    count = _cuda_count()
    if count >= 2:
        return device, "NCCL, one GPU each"
    return "cpu", (f"gloo on the CPU: this host has {count} GPU{'' if count == 1 else 's'} and NCCL needs one "
                   "per process")


def _cuda_count() -> int:
    import torch
    return torch.cuda.device_count()


def _run(cmd: list[str], log: Path, env: dict | None = None) -> None:
    done = subprocess.run(watched(cmd), cwd=ROOT, capture_output=True, text=True, env={**os.environ, **(env or {})})
    log.write_text(done.stdout + done.stderr)
    if done.returncode:
        tail = (done.stdout + done.stderr)[-3000:]
        raise SystemExit(f"rehearsal: `{' '.join(cmd[:6])} …` failed (exit {done.returncode}); log {log}\n{tail}")


def notebooks(names, seeds, data: Path, ckpt: Path, mix: str, runs: Path, device: str, logs: Path) -> None:
    import papermill as pm
    params = {"preset": "thesis", "seeds": seeds, "device": device, "data_root": str(data),
              "checkpoints": str(ckpt), "output_dir": str(runs), "overrides": overrides(mix)}
    for name in names:
        pm.execute_notebook(str(ROOT / "notebooks" / f"{name}.ipynb"), str(logs / f"{name}.ipynb"),
                            parameters={**params, **NOTEBOOK_PARAMETERS.get(name, {})}, kernel_name="python3",
                            progress_bar=False, cwd=str(ROOT))


def figures_and_report(seeds, runs: Path, logs: Path) -> None:
    seeds = json.dumps(seeds)
    _run([sys.executable, "-m", "thesis_lib.study.pages.figures", "--preset", "thesis", "--seeds", seeds,
          "--output-dir", str(runs), "--without", WITHOUT_FIGURES], logs / "figures.log")
    _run([sys.executable, "-m", "thesis_lib.study.pages.report", "--preset", "thesis", "--seeds", seeds,
          "--output-dir", str(runs)], logs / "report.txt")


def torchrun_lines(result: dict, where: str, log: Path) -> list[str]:
    """What the uninterrupted torchrun run did, read from its result and its log (raises SystemExit where it did not
    do what the rehearsal is for)."""
    train = result["train"]
    if train["world_size"] != 2:
        raise SystemExit(f"rehearsal: the torchrun run trained on {train['world_size']} process(es), not 2")
    if result["config"]["data"]["teacher_view"] != "augmented":
        raise SystemExit("rehearsal: the torchrun run did not train with the recipe's augmented teacher view")
    replaced, text = train.get("replaced_samples", 0), log.read_text()
    if not replaced or "replaced by the next decodable pair" not in text:
        raise SystemExit(f"rehearsal: the undecodable training image was not met and replaced (log {log})")
    shards = train.get("shards", {})
    broken = sum(sum(v for k, v in r.items() if k in ("unreadable_image", "truncated_image", "empty_caption",
                                                       "missing_image", "missing_caption")) for r in shards.values())
    variant, seed = TORCHRUN
    return [f"torchrun: {variant} seed {seed}, {train['steps']} steps on 2 processes ({where}), a checkpoint "
            f"after each step, the augmented teacher view (the recipe's)",
            f"{len(shards)} shard sets, {broken} broken samples counted and skipped at indexing; {replaced} training "
            f"image(s) failed to decode in a batch, replaced by the next decodable pair and counted "
            f"(train.replaced_samples)"]


def cache_lines(result: dict, log_text: str, teacher_cache: Path) -> str:
    """The fixed-view teacher-target cache of a 2-process run: built in parts, joined, the parts removed."""
    caches = sorted(teacher_cache.glob("thesis-*.pt"))
    if not caches:
        raise SystemExit(f"rehearsal: the fixed-view run left no teacher-target cache in {teacher_cache}")
    return (f"teacher-target cache (data.teacher_view=fixed) built by the 2 tasks in parts of whole batches of "
            f"{result['config']['eval']['batch_size']}: {cache_parts(log_text, teacher_cache)}; joined by rank 0, "
            f"the parts removed: {caches[0].name}")


def cache_parts(log_text: str, teacher_cache: Path) -> str:
    """Which images each rank ran the teacher on, from the run's log (raises SystemExit unless the parts cover every
    image once, in rank order, and none is left beside the cache). A rank whose slice holds no whole batch has none."""
    found = re.findall(r"rank (\d) of 2: teacher targets of images \[(\d+), (\d+)\) of (\d+)", log_text)
    spans = {int(rank): (int(a), int(b)) for rank, a, b, _ in found}
    n = int(found[0][3]) if found else -1
    edges = [e for rank in sorted(spans) for e in spans[rank]]
    if not found or edges[0] != 0 or edges[-1] != n or any(a != b for a, b in zip(edges[1:-1:2], edges[2::2])):
        raise SystemExit(f"rehearsal: the teacher-target cache's parts do not cover its images once ({found})")
    left = sorted(p.name for p in teacher_cache.glob("*.part-*"))
    if left:
        raise SystemExit(f"rehearsal: parts of the teacher-target cache were left in {teacher_cache}: {left}")
    return ", ".join(f"rank {r} " + (f"images [{spans[r][0]}, {spans[r][1]}) of {n}" if r in spans else "none")
                     for r in range(2))


def check_reuse(runs: Path) -> str:
    """Notebook 03 trains on one process: a result of 2 processes there is the torchrun run, reused."""
    variant, seed = TORCHRUN
    result = json.loads(RunPaths(results_dir(runs), "thesis", variant, seed).result.read_text())
    if result["train"]["world_size"] != 2:
        raise SystemExit(f"rehearsal: notebook 03 retrained {variant} seed {seed} instead of reusing the torchrun run")
    return f"notebook 03 reused the torchrun run ({variant} seed {seed}: 2 processes in its result)"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m thesis_lib.full_scale.rehearsal", description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=ROOT / "build" / "rehearsal")
    p.add_argument("--device", default="cpu")
    p.add_argument("--skip-notebooks", action="store_true",
                   help="files, check, the torchrun stages and the recipe's status only")
    p.add_argument("--skip-launches", action="store_true", help="not the recipe's generated launches (stage 5)")
    p.add_argument("--keep", action="store_true", help="keep the finished runs of an earlier rehearsal in --out")
    p.add_argument("--notebooks", default=",".join(DEFAULT_NOTEBOOKS),
                   help="comma-separated notebooks to run, or 'all' (then also the figures and the report); "
                        f"default {','.join(DEFAULT_NOTEBOOKS)}")
    p.add_argument("--seeds", default=",".join(map(str, REHEARSAL_SEEDS)), help="comma-separated seeds (default 0)")
    args = p.parse_args(argv)
    args.out = args.out.resolve()           # the generated scripts run in folders of their own: absolute paths
    names = list(NOTEBOOKS) if args.notebooks == "all" else [n for n in args.notebooks.split(",") if n]
    seeds = [int(s) for s in args.seeds.split(",")]
    unknown = sorted(set(names) - set(NOTEBOOKS))
    if unknown:
        p.error(f"unknown notebooks {unknown}; choose from {', '.join(NOTEBOOKS)} or all")
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
        value = fn(*a)
        times[name] = time.perf_counter() - t
        return value

    data, ckpt, mix = stage("files", write_data, args.out)
    from thesis_lib.models.check import check_folder
    summary = [stage("checkpoint check", lambda: _require_clean(check_folder(ckpt, fixtures.SHRINK), ckpt))]
    device, where = torchrun_device(args.device)
    variant, seed = TORCHRUN
    job = Torchrun(variant, seed, device, data, ckpt, overrides(mix))
    log = logs / "torchrun.log"
    result = stage("torchrun", lambda: job.run(runs, log))
    summary += torchrun_lines(result, where, log)
    killed_at, resumed, staged_job = stage("torchrun killed + resumed", lambda: killed_and_resumed(
        job, args.out / "killed", KILL_AFTER, logs, staged=args.out / "staged"))
    summary.append(f"killed (SIGKILL to torchrun, its 2 processes and their loader workers) after step {killed_at}, "
                   f"the mixture staged (data.stage, each copy checked: {logs / 'stage.log'}), resumed from step "
                   f"{resumed['train']['resumed_from']} reading " + read_staged(resumed, args.out / "staged") + ": "
                   + compare_runs(job, runs, args.out / "killed"))
    summary += stage("finished run started again, staged", staged_reuse, staged_job, runs, logs)
    summary += stage("recipe status, half finished", half_finished, runs, logs, variant, seed)
    if not args.skip_launches:
        summary += stage("recipe launches", recipe_launches, device, data, ckpt, mix, args.out, logs)
    if not args.skip_notebooks and names:
        stage(f"notebooks {', '.join(n[:2] for n in names)}", notebooks, names, seeds, data, ckpt, mix, runs,
              args.device, logs)
        results = RunPaths.results(results_dir(runs), "thesis")
        summary.append(f"notebooks {', '.join(n[:2] for n in names)} on {args.device}, seeds {seeds}: "
                       f"{len(results)} result files ({', '.join(sorted({r.parent.name for r in results}))})")
        if "03_tte_layerscale" in names:
            summary.append(check_reuse(runs))
        if set(names) == set(NOTEBOOKS):
            stage("figures + report", figures_and_report, seeds, runs, logs)
            figures = sorted((runs / "figures" / "thesis").glob("*.png"))
            summary.append(f"{len(figures)} figures in {runs / 'figures' / 'thesis'} (not {WITHOUT_FIGURES}: they "
                           f"read make long's designs or several seeds), the report in {logs}")
        else:
            summary.append("figures and report skipped (they need every notebook: --notebooks all)")
    else:
        summary.append("notebooks, figures and report skipped")
    print("\n[rehearsal] done in {:.0f} s: ".format(time.perf_counter() - start)
          + ", ".join(f"{k} {v:.0f} s" for k, v in times.items()))
    print("\n".join(f"  - {line}" for line in summary) + f"\n  - logs and executed notebooks: {logs}")
    return 0


def recipe_launches(device: str, data: Path, ckpt: Path, mix: str, out: Path, logs: Path) -> list[str]:
    """Stage 5: a generated 8-GPU lane, an srun-style launch of a generated sbatch line, the pilot."""
    from . import launches
    from .kill_resume import free_port
    spec = launches.job("baseline", 0, out / "lane", data, ckpt, overrides(mix))
    result, index_line = launches.lane(spec, device, data, ckpt, mix, logs)
    lines = [f"`recipe commands --layout 8gpu`, lane 0 run by bash: `{index_line.split('#')[0].strip()}`, then "
             f"torchrun, {result['train']['world_size']} processes, teacher view "
             f"{result['config']['data']['teacher_view']}: {spec['variant']} seed {spec['seed']} trained"]
    spec = launches.job("baseline", 1, out / "srun", data, ckpt, {**overrides(mix), **FIXED_VIEW})
    result = launches.srun_launch(spec, device, data, ckpt, mix, logs, free_port())
    if result["train"]["world_size"] != 2:
        raise SystemExit(f"rehearsal: the srun-style launch trained on {result['train']['world_size']} process(es)")
    text = "".join((logs / f"srun-task{r}.log").read_text() for r in range(2))
    lines += ["`recipe commands --layout slurm`'s training command started as srun starts 2 tasks (SLURM_PROCID, "
              "SLURM_STEP_NODELIST, no torchrun): 2 processes", cache_lines(result, text, out / "cache" /
                                                                            "teacher-targets")]
    report = launches.pilot(data, ckpt, out / "pilot-out", mix, overrides(mix), device, logs)
    text = report.splitlines()
    first = next((i for i, line in enumerate(text) if line.startswith("pilot: ")), None)
    if first is None:
        raise SystemExit(f"rehearsal: the pilot printed no report ({logs / 'pilot.log'})")
    return lines + ["; ".join(line.strip() for line in text[first:first + 4])]


def _require_clean(rows, folder: Path) -> str:
    bad = [f"{r.name}: {r.problem}" for r in rows if r.problem]
    if bad:
        raise SystemExit("rehearsal: the checkpoint check failed: " + "; ".join(bad))
    models = [r.name for r in rows if r.name.endswith((".pt", ".pth"))]
    guarded = [name for name in models if refused_by_weights_only(folder / name)]
    if guarded != models:
        raise SystemExit(f"rehearsal: {sorted(set(models) - set(guarded))} load with weights_only=True: the guarded "
                         "unpickler the original files need was not exercised")
    return (f"checkpoint check: {len(rows)} files accepted; the {len(models)} model files hold fairseq's/unilm's "
            "args and trainer state, which torch.load(weights_only=True) refuses: read by the guarded unpickler")


def refused_by_weights_only(path: Path) -> bool:
    import pickle

    import torch
    try:
        torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError:
        return True
    return False


if __name__ == "__main__":
    raise SystemExit(main())
