"""What ``make verify`` decides (docs/reproducibility.md): committed demo runs, retrained on any machine, reproduce
the study when every metric comes back within the study's own noise of the committed value and every claim's
verdict is unchanged with the retrained runs standing in for the committed ones.

PyTorch does not promise the same bits on another CPU, library build or kernel choice
(https://pytorch.org/docs/stable/notes/randomness.html), and over 600 training steps a last-bit difference grows into
the metrics. On one machine and thread count a run is the same bits every time (tests/test_reproducible.py); across
machines this module is the rule. A retrained run is either a *replay* of the committed one (its loss curve within
rounding of the committed curve at every logged step) or a *fork*: it starts as the committed run and departs from
it later, because one discrete draw (a hard negative, a switch) came out otherwise and changed the rest of the run.
A replay must come back within one between-seed SD; a fork is a new draw of the same variant and must come back
where two draws of one variant lie (``tolerance_sds``).
"""
from __future__ import annotations

import math
import re
import shutil
import tempfile
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

from thesis_lib.config import PRESET_SPECS
from thesis_lib.metrics import COCO_MEAN, FLICKR_MEAN, IMAGENET_TOP1
from thesis_lib.paths import ROOT
from thesis_lib.training.results import RunPaths, load_results, read_jsonl
from .. import grids
from ..runs import SEEDS
from . import paired

TOLERANCE_SDS = 1.0   # a replayed run may differ from the committed one by this many between-seed SDs per metric
FORKED_SDS = 3 * math.sqrt(2)   # a forked run: 3 SDs of the difference of two independent draws (√2 between-seed SDs)
FORK_RTOL = 1e-3      # a logged loss further than this (relative) from the committed one: the run has forked there


def seed_sds(results: list[dict]) -> dict[str, float]:
    """Each metric's between-seed standard deviation in a result set: the variances over seeds within each variant
    (≥ 2 seeds), pooled by their degrees of freedom (Σ (n_v - 1) s_v² / Σ (n_v - 1)). It is the study's own noise:
    what another seed of the same code changes a run by."""
    squares, dof = Counter(), Counter()
    for variant in dict.fromkeys(r["variant"] for r in results):
        runs = [r["metrics"] for r in results if r["variant"] == variant]
        for metric in sorted(set().union(*runs)):
            values = [m[metric] for m in runs if metric in m]
            if len(values) > 1:
                mean = sum(values) / len(values)
                squares[metric] += sum((v - mean) ** 2 for v in values)
                dof[metric] += len(values) - 1
    return {m: math.sqrt(squares[m] / dof[m]) for m in squares}


def tolerances(results: list[dict]) -> dict[str, float]:
    """The declared tolerance of each metric: ``TOLERANCE_SDS`` × its between-seed SD (``seed_sds``).

    One SD, because it is loose enough for honest drift and tight enough for a change of behaviour (both measured
    on the committed demo results in docs/reproducibility.md and tests/test_verify.py): last-bit differences moved
    the demo's recalls after 600 steps by far less than the smallest between-seed SD of any metric, while a run that
    behaves like another seed of the same variant is outside the tolerance on several metrics of every run that
    ``make verify`` retrains. A run moved by one SD moves a four-seed mean by half its standard error, which the
    verdict check (``changed_verdicts``) then judges."""
    return {metric: TOLERANCE_SDS * sd for metric, sd in seed_sds(results).items()}


def fork_step(committed_curve: list[dict], retrained_curve: list[dict]) -> int | None:
    """The first logged step at which the retrained run's loss is further than ``FORK_RTOL`` (relative) from the
    committed run's, or at which one curve has no row; None when it replays the committed curve to the end."""
    for ours, theirs in zip(retrained_curve, committed_curve):
        if ours["step"] != theirs["step"] or not abs(ours["loss"] - theirs["loss"]) <= FORK_RTOL * abs(theirs["loss"]):
            return theirs["step"]
    if len(retrained_curve) != len(committed_curve):
        shorter, longer = sorted((retrained_curve, committed_curve), key=len)
        return longer[len(shorter)]["step"]
    return None


def tolerance_sds(committed_curve: list[dict], retrained_curve: list[dict]) -> tuple[float, str]:
    """How many between-seed SDs a retrained run may be from the committed one, and why.

    A replay (no fork): ``TOLERANCE_SDS``. A fork after the first logged step: the run followed the committed one and
    then became another draw of the same variant; the difference of two independent draws has √2 between-seed SDs,
    and ``FORKED_SDS`` allows 3 of those (a true new draw fails a metric with probability 0.27 % under a normal
    model). A run that differs from the first logged step on is not the committed run at all (another seed, another
    data order, another initialisation) and is held to ``TOLERANCE_SDS``."""
    step = fork_step(committed_curve, retrained_curve)
    if step is None:
        return TOLERANCE_SDS, "a replay"
    if not committed_curve:
        return TOLERANCE_SDS, "no committed curve to compare with"
    if step == committed_curve[0]["step"]:
        return TOLERANCE_SDS, f"differs from the first logged step ({step}): not the committed run"
    return FORKED_SDS, f"forked at step {step}: a new draw"


def metric_failures(committed: dict, retrained: dict, tolerance: dict[str, float],
                    sds: tuple[float, str] = (TOLERANCE_SDS, "a replay")) -> list[str]:
    """One line per metric of a retrained run that is missing or further than its tolerance (``sds`` × the between-seed
    SD in ``tolerance``, with the reason from ``tolerance_sds``) from the committed value (empty: it reproduces)."""
    run = f"{committed['preset']}/{committed['variant']}/seed{committed['seed']}"
    factor, why = sds[0] / TOLERANCE_SDS, sds[1]
    out = []
    for metric, value in committed["metrics"].items():
        ours = retrained["metrics"].get(metric)
        if metric not in tolerance or ours is None:
            out.append(f"{run}: {metric} {'has no between-seed SD' if ours is not None else 'was not retrained'}")
        elif not abs(ours - value) <= factor * tolerance[metric]:
            out.append(f"{run}: {metric} retrained {ours} vs committed {value}: |difference| {abs(ours - value):.4f} "
                       f"> tolerance {factor * tolerance[metric]:.4f} ({sds[0]:.3g} between-seed SD; {why})")
    return out


def verdicts(results_root: Path, preset: str) -> dict[tuple[str, str], str]:
    """Every claim's verdict per metric (the primary decides, the secondary ones are shown) as the README's block
    computes it: ``paired.claim_table`` over the claimed variants, the study's seeds and a sequential design's; a
    size estimate in the verdict's words ("36 × the thesis's size") is not part of the verdict."""
    where = SimpleNamespace(preset=preset, seeds=SEEDS, results_root=Path(results_root))   # what results_frame reads
    claims = paired.claim_table(paired.claims_frame(where, grids.CLAIMED))
    words = (re.sub(r"\d+(\.\d+)?", "#", v) for v in claims["verdict"])
    return dict(zip(zip(claims["claim"], claims["metric"]), words))


def changed_verdicts(committed_root: Path, retrained_root: Path, preset: str, scratch: Path) -> list[str]:
    """The verdicts that change when the retrained runs (every result file under ``retrained_root``) replace the
    committed runs of the same variant and seed: in a copy of the committed results under ``scratch``."""
    swapped = Path(scratch) / preset
    shutil.copytree(Path(committed_root) / preset, swapped)
    for result in sorted((Path(retrained_root) / preset).glob("*/seed*.json")):
        (swapped / result.parent.name).mkdir(exist_ok=True)
        shutil.copyfile(result, swapped / result.parent.name / result.name)
    before, after = verdicts(committed_root, preset), verdicts(scratch, preset)
    changed = [key for key in sorted(set(before) | set(after)) if before.get(key) != after.get(key)]
    return [f"{claim} ({metric}): verdict {before.get((claim, metric))} -> {after.get((claim, metric))}"
            for claim, metric in changed]


def against_committed(params, committed_root: Path | None = None) -> str:
    """Each run under ``params.results_root`` (trained elsewhere, e.g. `make demo`'s build/demo/) against the committed
    run of the same variant and seed (``committed_root``, default the repository's results/): within tolerance
    (``metric_failures``, a fork judged as ``tolerance_sds`` says), and the verdicts with them standing in for the
    committed ones (``changed_verdicts``); in words."""
    committed_root = Path(committed_root or ROOT / "results")
    if Path(params.results_root).resolve() == committed_root.resolve():
        return "These runs are the committed record itself."
    record = load_results(committed_root, params.preset) if PRESET_SPECS[params.preset].committed else []
    if not record:
        return f"No committed record at the {params.preset} scale to compare with."
    tolerance, by_run = tolerances(record), {(r["variant"], r["seed"]): r for r in record}
    lines, within, compared = [], 0, 0
    for r in load_results(params.results_root, params.preset):
        committed = by_run.get((r["variant"], r["seed"]))
        if committed is None:
            continue
        curves = (read_jsonl(RunPaths(root, params.preset, r["variant"], r["seed"]).metrics)
                  for root in (committed_root, params.results_root))
        failures = metric_failures(committed, r, tolerance, tolerance_sds(*curves))
        compared, within = compared + 1, within + (not failures)
        lines += failures
    with tempfile.TemporaryDirectory() as scratch:
        changed = changed_verdicts(committed_root, params.results_root, params.preset, Path(scratch))
    return "\n".join([f"{within} of {compared} runs within make verify's tolerance of the committed record; "
                      + ("every verdict unchanged." if not changed else f"{len(changed)} verdicts changed:")]
                     + changed + lines)


def runs_against(retrained_root: Path, committed_root: Path, preset: str) -> list[dict]:
    """One row per run of ``retrained_root`` and headline metric: its value beside the committed run's of the same
    variant and seed (under ``committed_root``), the difference, the tolerance it is held to (``tolerances`` of the
    committed store × ``tolerance_sds``: a replay's or a fork's) and whether it is within; the machines of both."""
    from ..results import machine_label, recorded_machines
    record, known = load_results(committed_root, preset), recorded_machines(committed_root)
    tolerance, by_run, rows = tolerances(record), {(r["variant"], r["seed"]): r for r in record}, []
    for r in load_results(retrained_root, preset):
        committed = by_run.get((r["variant"], r["seed"]))
        if committed is None:
            continue
        curves = (read_jsonl(RunPaths(root, preset, r["variant"], r["seed"]).metrics)
                  for root in (committed_root, retrained_root))
        sds, why = tolerance_sds(*curves)
        for metric in (COCO_MEAN, FLICKR_MEAN, IMAGENET_TOP1):
            allowed = sds / TOLERANCE_SDS * tolerance[metric]
            diff = r["metrics"][metric] - committed["metrics"][metric]
            rows.append({"variant": r["variant"], "seed": r["seed"], "metric": metric,
                         "retrained": r["metrics"][metric], "committed": committed["metrics"][metric],
                         "difference": diff, "tolerance": allowed, "within": abs(diff) <= allowed, "curve": why,
                         "machine": machine_label(r.get("machine")),
                         "committed_machine": machine_label(committed.get("machine"),
                                                            known(preset, r["variant"], r["seed"]))})
    return rows
