"""study/recipe and docs/full_scale.md against the code. Every command of the guide (and of README's full-scale
subsection, and of the scripts ``python -m thesis_lib.full_scale.recipe commands`` writes) is expanded by bash with
every program replaced by a recorder (nothing runs), then parsed by the real parser of what it calls: thesis_lib's CLIs
(their own argparse, ``--set`` fields through ``get_config``), torchrun's, papermill's (``-p`` / ``-y`` names
against the notebook's ``parameters`` cell, overrides through ``get_config``), the Makefile's targets. No two
commands may write one result file with different setups, and the notebooks must find every run the recipe trains."""
import argparse
import contextlib
import io
import json
import os
import re
import shlex
import subprocess
import time
from dataclasses import asdict
from pathlib import Path
from unittest import mock

import pytest
import torch
import yaml

from thesis_lib.config import get_config
from thesis_lib.paths import ROOT, results_dir
from thesis_lib.study import grids
from thesis_lib.full_scale import cost, recipe
from thesis_lib.study.runs import Parameters, StudyParams
from thesis_lib.training.results import OPERATIONAL, RunPaths, _identity
from thesis_lib.training.run import overrides_of, run_config

GUIDE, README = ROOT / "docs" / "full_scale.md", ROOT / "README.md"
DEFAULTS = {"DATA": "/data", "CKPT": "/ckpt", "OUT": "runs", "MIX": "coco"}
RECORD = r"""command_not_found_handle() { local r; r=$(printf '%s\x1f' "${CUDA_VISIBLE_DEVICES-}" "$@")
  printf '%s\x1e' "$r" >> "$REC"; return 0; }
source() { :; }
PATH=/nonexistent-recipe-check
"""


def bash_blocks(text: str) -> list[str]:
    return re.findall(r"```bash\n(.*?)```", text, re.S)


def readme_subsection() -> str:
    text = README.read_text()
    return text.split("### Full scale on a GPU", 1)[1].split("\n## ", 1)[0]


def recorded(script: str, tmp_path: Path, env: dict | None = None) -> list[tuple[str, list[str]]]:
    """(CUDA_VISIBLE_DEVICES, argv) of every program ``script`` would start, in order; nothing is started."""
    rec = tmp_path / "record"
    rec.write_text("")
    prelude = "".join(f': "${{{k}:={v}}}"; export {k}\n' for k, v in {**DEFAULTS, **(env or {})}.items())
    script = script.replace("export MIX=$(", "export MIX=${MIX}$(")    # nothing runs: `recipe mix` prints nothing
    done = subprocess.run(["bash", "-c", RECORD + prelude + script], cwd=tmp_path, capture_output=True, text=True,
                          env={"REC": str(rec), "HOME": str(tmp_path)}, timeout=60)
    assert done.returncode == 0, done.stderr
    return [(r.split("\x1f")[0], r.split("\x1f")[1:-1]) for r in rec.read_text().split("\x1e")[:-1]]


class _Parsed(Exception):
    pass


def setup_of(cfg, processes: int) -> dict:
    """What a result's reuse compares (``training.results``): the identity, operational fields (workers, logging)
    left out."""
    out = _identity(asdict(cfg), processes)
    for key in OPERATIONAL:
        section, name = key.split(".")
        out.get(section, {}).pop(name, None)
    return out


def module_args(module: str, argv: list[str]) -> argparse.Namespace:
    """``python -m module argv`` parsed by the module's own parser (its ``main`` up to ``parse_args``)."""
    import importlib
    real = argparse.ArgumentParser.parse_args

    def parse(self, args=None, namespace=None):
        raise _Parsed(real(self, args, namespace))

    err = io.StringIO()
    with mock.patch.object(argparse.ArgumentParser, "parse_args", parse), contextlib.redirect_stderr(err):
        try:
            importlib.import_module(module).main(argv)
        except _Parsed as parsed:
            return parsed.args[0]
        except SystemExit:
            pass
    raise AssertionError(f"its parser says {(err.getvalue().strip().splitlines() or ['nothing'])[-1]!r}")


def notebook_parameters(path: Path) -> dict:
    """The names and default values a notebook's ``parameters`` cell defines, by running it (at $THESIS_PRESET)."""
    nb = json.loads(path.read_text())
    cell = next(c for c in nb["cells"] if "parameters" in c.get("metadata", {}).get("tags", []))
    namespace = {}
    exec("".join(cell["source"]), namespace)
    return {k: v for k, v in namespace.items() if k in (*Parameters._fields, "fusion_variants")}


SBATCH = argparse.ArgumentParser(prog="sbatch", add_help=False, exit_on_error=False)
for _flag in ("--job-name", "--nodes", "--ntasks", "--ntasks-per-node", "--gpus-per-node", "--cpus-per-task", "--time",
              "--wrap", "--output", "--partition", "--account", "--mem", "--dependency", "--signal",
              "--open-mode"):      # no --gpus-per-task: see below
    SBATCH.add_argument(_flag)
SBATCH.add_argument("--requeue", action="store_true")


class Check:
    """Parses commands; collects (result file → [(identity, command)]) of every run a command would write."""

    def __init__(self):
        self.writes: dict[Path, list] = {}
        self.notebook_jobs: list = []

    def command(self, argv: list[str], processes: int = 1, shown: str | None = None) -> None:
        """Check one command; a flag, value, parameter or target the code rejects is an AssertionError naming it."""
        import click

        from thesis_lib.errors import ThesisError
        shown = shown or shlex.join(argv)
        try:
            self._command(argv, processes, shown)
        except (AssertionError, SystemExit, argparse.ArgumentError, click.ClickException, ThesisError) as err:
            raise AssertionError(f"`{shown}` is rejected: {type(err).__name__}: {err}") from None

    def _command(self, argv: list[str], processes: int, shown: str) -> None:
        prog, args = Path(argv[0]).name, argv[1:]
        if prog in ("python", "python3") and args[:1] == ["-m"] and args[1:2] and args[1].startswith("thesis_lib"):
            if args[1] == "thesis_lib.training.run":
                return self.training(args[2:], processes, shown)
            module_args(args[1], args[2:])
        elif prog == "torchrun":
            from torch.distributed.run import get_args_parser
            t = get_args_parser().parse_args(args)
            assert t.module, f"torchrun without -m: {shown}"
            nodes = int(str(t.nnodes).split(":")[-1])
            self._command(["python", "-m", t.training_script, *t.training_script_args],
                          int(t.nproc_per_node) * nodes, shown)
        elif prog == "srun":
            i = next(k for k, a in enumerate(args) if not a.startswith("-"))
            self._command(args[i:], processes, shown)
        elif prog == "sbatch":
            s = SBATCH.parse_args(args)
            assert s.wrap, f"sbatch without --wrap: {shown}"
            tasks = int(s.ntasks) if s.ntasks else int(s.nodes or 1) * int(s.ntasks_per_node or 1)
            self._command(shlex.split(s.wrap), tasks, shown)
        elif prog == "papermill":
            self.papermill(args, shown)
        elif prog == "make":
            targets = set(re.findall(r"^([\w.-]+):", (ROOT / "Makefile").read_text(), re.M))
            for t in [a for a in args if "=" not in a and not a.startswith("-")]:
                assert t in targets, f"make has no target {t!r}: {shown}"

    def training(self, argv, processes, shown):
        a = module_args("thesis_lib.training.run", argv)
        cfg = get_config(a.preset, a.variant, a.seed, overrides_of(a))       # unknown field, bad value: ConfigError
        path = RunPaths(results_dir(a.out), cfg.preset, cfg.model.variant, cfg.seed).result
        self.writes.setdefault(path, []).append((setup_of(cfg, processes), shown))

    def papermill(self, args, shown):
        from papermill.cli import _resolve_type, papermill
        p = papermill.make_context("papermill", list(args)).params       # click: an unknown option raises
        nb = ROOT / p["notebook_path"]
        assert nb.exists(), f"no notebook {p['notebook_path']}: {shown}"
        declared = notebook_parameters(nb)
        given = {k: _resolve_type(v) for k, v in p["parameters"]}
        for text in p["parameters_yaml"] or ():
            given.update(yaml.safe_load(text))
        unknown = set(given) - set(declared)
        assert not unknown, f"{nb.name} has no parameter {', '.join(sorted(unknown))}: {shown}"
        v = {**declared, **given}
        if v.get("preset") != "thesis" or nb.name.startswith("00"):
            return
        seeds = tuple(v["seeds"])
        params = StudyParams("thesis", seeds, "cuda", v["output_dir"], v["data_root"], v["checkpoints"], v["reuse"],
                             tuple(sorted((v["overrides"] or {}).items())))
        get_config("thesis", overrides=params.overrides())                # the overrides' fields and values
        number = nb.name[:2]
        fusion = tuple(v.get("fusion_variants") or ())
        with mock.patch.object(recipe.grids, "FUSION_TRAINED", fusion):
            jobs = recipe.notebook_jobs(number, params, table1_seeds=24)
        for job in jobs:
            cfg = run_config(job["preset"], job["variant"], job["seed"], job["overrides"])
            path = RunPaths(results_dir(job["out_dir"]), cfg.preset, cfg.model.variant, cfg.seed).result
            self.writes.setdefault(path, []).append((setup_of(cfg, 1), shown))
            if job["seed"] < 4 or number != "02":
                self.notebook_jobs.append((path, shown))

    def conflicts(self) -> list[str]:
        out = []
        for path, writers in self.writes.items():
            first = writers[0]
            for other in writers[1:]:
                if other[0] != first[0]:
                    out.append(f"{path}: `{first[1][:200]}` and `{other[1][:200]}` train different setups")
        return out


def check_guide(text: str, tmp_path: Path, layouts=recipe.LAYOUTS) -> Check:
    """Every command of ``text``'s bash blocks and README's subsection, then of each layout's generated script (with
    the variables the guide sets), checked; the result files they write compared."""
    check = Check()
    script = "\n".join(bash_blocks(text)) + "\n" + "\n".join(bash_blocks(readme_subsection()))
    shown = recorded(script, tmp_path)
    for cvd, argv in shown:
        check.command(argv)
    for layout in layouts:
        for cvd, argv in recorded(script + "\n" + recipe.commands(layout), tmp_path)[len(shown):]:
            check.command(argv)
    assert not check.conflicts(), "\n".join(check.conflicts())
    return check


def test_every_command_of_the_guide_is_accepted_and_no_two_write_one_result_differently(tmp_path):
    check = check_guide(GUIDE.read_text(), tmp_path)
    assert len(check.writes) >= len(recipe.planned_jobs())


@pytest.mark.parametrize("layout", recipe.LAYOUTS)
def test_the_notebooks_reuse_every_run_the_recipe_trains(layout, tmp_path):
    """The guide's papermill commands read exactly the runs ``commands --layout`` trains, with the same setup: no
    notebook trains anything."""
    script = "\n".join(bash_blocks(GUIDE.read_text()))
    trained, notebooks = Check(), Check()
    for cvd, argv in recorded(script + "\n" + recipe.commands(layout), tmp_path):
        (notebooks if argv[0] == "papermill" else trained).command(argv)
    wanted = {path for path, _ in notebooks.notebook_jobs}
    assert wanted and wanted <= set(trained.writes), sorted(map(str, wanted - set(trained.writes)))[:5]
    for path in wanted:
        setups = [json.dumps(i, sort_keys=True) for i, _ in trained.writes[path] + notebooks.writes[path]]
        assert len(set(setups)) == 1, path
    if layout == "8gpu":
        lanes = {cvd for cvd, argv in recorded(recipe.commands(layout), tmp_path) if "thesis_lib.training.run" in argv}
        assert lanes == {f"{2 * i},{2 * i + 1}" for i in range(recipe.LANES)}


@pytest.mark.parametrize("right, wrong", [
    ('--checkpoints "$CKPT" --out "$OUT" --set "data.train_sets=$MIX" --set "train.batch_size=512"',
     '--checkpoint-dir "$CKPT" --out "$OUT" --set "data.train_sets=$MIX" --set "train.batch_size=512"'),  # no such flag
    ("--nproc_per_node 8", "--nproc-per-nodes 8"),                                  # torchrun has no such flag
    ('--set "train.batch_size=512" \\\n', '--set "train.batch_size=half" \\\n'),       # not an integer
    ('--set "train.batch_size=256" --set', '--set "train.batchsize=256" --set'),       # no such config field
    ("-p data_root", "-p data_dir"),                                                  # no such notebook parameter
    ("train.batch_size: 512}", "train.batch_size: 512, data.decoders: pil}"),     # no such field in -y overrides
    ("--seed 0 --device cuda --data-root '$DATA'", "--seed zero --device cuda --data-root '$DATA'"),  # in sbatch --wrap
])
def test_a_command_the_code_would_reject_fails_the_check(right, wrong, tmp_path):
    text = GUIDE.read_text()
    bad = text.replace(right, wrong, 1)
    assert bash_blocks(bad) != bash_blocks(text)                # the change is in a command, not in prose
    with pytest.raises(AssertionError, match="is rejected"):
        check_guide(bad, tmp_path, layouts=())


def test_two_commands_writing_one_result_with_different_setups_fail_the_check(tmp_path):
    clash = ("\n```bash\npython -m thesis_lib.training.run --preset thesis --variant baseline --device cuda "
             '--data-root "$DATA" --checkpoints "$CKPT" --out "$OUT" --set train.batch_size=256\n'
             "torchrun --nproc_per_node 2 -m thesis_lib.training.run --preset thesis --variant baseline --device cuda "
             '--data-root "$DATA" --checkpoints "$CKPT" --out "$OUT" --set train.batch_size=256\n```\n')
    with pytest.raises(AssertionError, match="train different setups"):
        check_guide(clash, tmp_path, layouts=())


def test_the_recipe_follows_the_notebooks_parameters_and_the_global_batch():
    for path in sorted((ROOT / "notebooks").glob("0[1-5]_*.ipynb")):                 # what each cell defines
        declared = notebook_parameters(path)
        assert tuple(declared["seeds"]) == recipe.notebook_params(path.name[:2]).seeds, path.name
    assert tuple(notebook_parameters(ROOT / "notebooks" / "05_modality_mechanisms.ipynb")["fusion_variants"]) == \
        grids.FUSION_TRAINED
    variants = {job["variant"] for _, job in recipe.planned_jobs()}
    assert variants >= set(grids.CLAIMED) | set(grids.NOTEBOOKS["05"]) | set(grids.FUSION_TRAINED)
    for layout, per_process in (("1gpu", 512), ("8gpu", 256), ("slurm", 256)):
        assert recipe.commands(layout).count(f"train.batch_size={per_process}") == len(recipe.planned_jobs())


def test_a_checkpoint_holds_twelve_bytes_per_parameter(tmp_path):
    """The disk column's rule (fp32 weights + AdamW's two moments), checked on a smoke model's saved state."""
    from thesis_lib.models.emkum import build_model
    from thesis_lib.training.engine import make_optimizer
    cfg = get_config("smoke", "tte_after_ls", overrides={"weights.source": "random"})
    model = build_model(cfg, pretrained=False)
    opt, _ = make_optimizer(model, cfg.train, 1)
    sum(p.float().sum() for p in model.parameters()).backward()
    opt.step()
    torch.save({"model": model.state_dict(), "optimizer": opt.state_dict()}, tmp_path / "c.pt")
    n = sum(p.numel() for p in model.parameters())
    assert abs((tmp_path / "c.pt").stat().st_size / (cost.BYTES_PER_PARAMETER * n) - 1) < 0.25


def quick_start() -> str:
    return GUIDE.read_text().split("## Quick start, in working order", 1)[1].split("\n## ", 1)[0]


def test_the_quick_start_runs_in_order_on_local_fixtures(tmp_path, monkeypatch, capsys):
    """The guide's quick start followed in miniature: its commands in their order, each parsed by its CLI's own
    parser, the downloads, checks and the shard index run for real from a mirror of tiny files (THESIS_MIRROR; the
    counts each set must reach are the fixtures'), the GPU steps (pilot, recipe) parsed only. A step out of order (a
    check before its download) fails here."""
    from dataclasses import replace

    from thesis_lib.data import download as dd
    from thesis_lib.data import shard_index
    from thesis_lib.data.sources import SOURCES
    from thesis_lib.models import check as mc
    from thesis_lib.models import download as md
    from thesis_lib.full_scale.fixtures import SHRINK, download_mirror
    work, shared = tmp_path / "work", tmp_path / "shared"
    counts = download_mirror(tmp_path / "mirror", work)
    monkeypatch.setenv("THESIS_MIRROR", str(tmp_path / "mirror"))
    monkeypatch.setenv("THESIS_DATA", str(shared / "cache"))
    monkeypatch.chdir(work)                                   # the archive a user brings lies here
    tiny = {"coco": {"train2014": counts["train2014"], "val2014": counts["val2014"]},
            "flickr30k": {"flickr30k-images": counts["flickr30k-images"]},
            "imagenet": {"classes": counts["classes"], "per_class": counts["per_class"]},
            "cc3m": {"first": 0, "last": counts["last"]}, "cc12m": {"first": 0, "last": counts["last"]}}
    steps, mix, check = [], None, Check()
    for _, argv in recorded("\n".join(bash_blocks(quick_start())), tmp_path):
        argv = [a.replace("/shared", str(shared)) for a in argv]
        module = argv[2] if argv[:2] == ["python", "-m"] else argv[0]
        check.command(argv if module != "thesis_lib.data.shard_index" else argv[:3] + [mix or "coco"])
        a = module_args(module, argv[3:]) if module.startswith("thesis_lib") else None
        if module == "thesis_lib.models.download":
            rows = md.download_checkpoints(Path(a.folder), require={}, overrides=SHRINK)
            assert not [r.problem for r in rows if r.problem]
        elif module == "thesis_lib.data.download":
            source = replace(SOURCES[a.what], expected=tiny[a.what], sizes={})
            if a.what in ("cc3m", "cc12m"):
                dd.download_shards(a.data, a.what, min(a.pairs, 10), source)
            else:
                {"coco": lambda: dd.coco(a.data, source), "flickr30k": lambda: dd.flickr30k(a.data, a.archive, source),
                 "imagenet": lambda: dd.imagenet(a.data, a.archive, source)}[a.what]()
        elif module == "thesis_lib.full_scale.recipe" and a.what == "mix":
            capsys.readouterr()
            assert recipe.main(argv[3:]) == 0
            mix = capsys.readouterr().out.strip()
        elif module == "thesis_lib.models.check":
            assert mc.main(argv[3:] + [f"--set={k}={v}" for k, v in SHRINK.items()]) == 0
            assert "as recorded in" in capsys.readouterr().out          # the lock file the download wrote
        elif module == "thesis_lib.data.shard_index":
            assert shard_index.main([mix]) == 0
        steps.append(module)
    assert steps == ["make", "thesis_lib.models.download"] + ["thesis_lib.data.download"] * 5 + [
        "thesis_lib.full_scale.recipe", "thesis_lib.models.check", "thesis_lib.data.shard_index",
        "thesis_lib.full_scale.pilot", "thesis_lib.full_scale.recipe", "bash"]
    assert mix == recipe.mix(str(shared / "data"))
    assert (shared / "data" / "cc12m" / "shards.txt").read_text().split()[0] == "cc12m-train-0000.tar"


def cluster_section() -> str:
    return GUIDE.read_text().split("## Cluster (SLURM), in working order", 1)[1].split("\n## ", 1)[0]


def test_the_cluster_section_marks_where_each_step_runs_and_submits_every_gpu_step(tmp_path):
    """Each numbered step says where it runs (a lint of the guide's hand-written structure: the step headings); every
    GPU step (the pilot, the runs: generated, or the 8-GPU lanes, the notebooks) is an sbatch line asking
    --gpus-per-node, and the login node's setup names a CUDA index (the commands, parsed)."""
    text = cluster_section()
    steps = re.findall(r"^\d\. \*\*(.*?)\*\*", text, re.M)
    assert len(steps) >= 5 and all(s.startswith(("Login node (internet)", "Compute node (GPU, no internet)"))
                                   for s in steps), steps
    shown = [argv for _, argv in recorded("\n".join(bash_blocks(text)), tmp_path)]
    assert ["make", "setup", "TORCH_INDEX_URL=https://download.pytorch.org/whl/cu126"] in shown
    wraps = [SBATCH.parse_args(a[1:]) for a in shown if a[0] == "sbatch"]
    assert {shlex.split(s.wrap)[-1] for s in wraps} >= {"300", "train.bash", "notebooks.bash"}
    assert all(s.gpus_per_node for s in wraps)
    generated = [a for a in shown if a[:3] == ["python", "-m", "thesis_lib.full_scale.recipe"]]
    assert {a[a.index("--layout") + 1] for a in generated} == {"slurm", "8gpu"}


def test_imagenet_is_prepared_without_the_network_from_a_placed_valprep(tmp_path, monkeypatch):
    """The cluster section's ImageNet step: valprep.sh placed in DATA/downloads/ is read where it lies; with nothing
    to fetch from (an empty mirror), the local archive is sorted all the same."""
    import tarfile
    from dataclasses import replace

    from thesis_lib.data import download as dd
    from thesis_lib.data.sources import SOURCES
    from thesis_lib.full_scale.fixtures import jpeg_bytes
    assert any('"$DATA/downloads/valprep.sh"' in block for block in bash_blocks(cluster_section()))   # a command
    (tmp_path / "empty").mkdir()
    monkeypatch.setenv("THESIS_MIRROR", str(tmp_path / "empty"))
    data, archive = tmp_path / "data", tmp_path / "ILSVRC2012_img_val.tar"
    wnids = {k: ("n01440764" if k % 2 else "n01443537") for k in range(1, 7)}
    (data / "downloads").mkdir(parents=True)
    (data / "downloads" / "valprep.sh").write_text("".join(f"mkdir -p {w}\n" for w in sorted(set(wnids.values())))
                                                    + "".join(f"mv ILSVRC2012_val_{k:08d}.JPEG {w}/\n"
                                                              for k, w in wnids.items()))
    with tarfile.open(archive, "w") as tar:
        for k in wnids:
            blob = jpeg_bytes(k, (12, 10))
            info = tarfile.TarInfo(f"ILSVRC2012_val_{k:08d}.JPEG")
            info.size = len(blob)
            tar.addfile(info, io.BytesIO(blob))
    tiny = replace(SOURCES["imagenet"], expected={"classes": 2, "per_class": 3})
    assert dd.imagenet(data, archive, tiny) == {"classes": 2, "images": 6}


def test_the_days_say_what_they_leave_out_with_the_measurements():
    """The assumptions printed with the days (and quoted by the guide and BENCHMARKS.md): both hosts' measured step,
    eager and compiled, the loader's factor, physical cores, SLURM's hyperthreads, the slower CPU measured, the
    storage's reads not measured, the evaluation said an estimate, the queueing said assumed, the pilot."""
    from thesis_lib.full_scale.measured import load, value
    data = load()
    said = recipe.days_table()
    for quoted in (f"ran {value(data, 'gpu_h100.eager_256.pairs_per_s')} and "
                   f"{value(data, 'gpu_h100_rerun.eager_256.pairs_per_s')} pairs/s",
                   f"(compiled: {value(data, 'gpu_h100.compiled_256.pairs_per_s')} and "
                   f"{value(data, 'gpu_h100_rerun.compiled_256.pairs_per_s')})", "14 physical cores per GPU",
                   "SLURM's CPUs are often hyperthreads", f"{value(data, 'data_path.pil')} images/s per core on an "
                   f"{value(data, 'data_path.machine.name')}, about half", f"≈ {cost.SHARDS_GB} GB of tar shards",
                   "Evaluation, an ESTIMATE (no evaluation has been timed on a GPU",
                   f"Queueing, ASSUMED (not measured): {cost.QUEUE_HOURS:g} h per job", "The pilot measures both"):
        assert quoted in said, quoted


def _hand(key: str) -> float:
    from thesis_lib.full_scale import measured
    return float(measured.value(measured.load(), key).replace(",", "").rstrip(" %"))


def test_the_pace_is_the_per_core_model_times_each_hosts_measured_loader_factor():
    """The rule, by hand from benchmarks/measured.json: the mixture's pairs/s per core at the per-core rates, × the
    workers, × each host's loader per worker over the rates' pairs/s per core for the loader's shards (half 256 ×
    256, half 683 × 512); the slower of it and the host's eager step is the pace. Printed in the assumption."""
    rates = {k: float(v["pil"]) for k, v in cost.decode_rates()["rates"].items()}
    mixture = 566_747 + 1_516_133 + 1_181_988
    per_core = mixture / (566_747 / rates["coco"] + (1_516_133 + 1_181_988) / rates["shard512"])
    shards = 2 / (1 / rates["shard256"] + 1 / rates["shard512"])
    found = cost.hosts(14)
    for host, key in zip(found, ("gpu_h100", "gpu_h100_rerun")):
        factor = _hand(f"{key}.loader.pairs_per_s") / _hand(f"{key}.loader.workers") / shards
        assert host.factor == pytest.approx(factor) and host.data == pytest.approx(12 * per_core * factor)
        assert host.eager == _hand(f"{key}.eager_256.pairs_per_s")
        assert host.compiled == _hand(f"{key}.compiled_256.pairs_per_s")
        assert host.per_gpu() == pytest.approx(min(host.eager, 12 * per_core * factor))
    (low, high), said = cost.pace(14)
    assert (low, high) == (min(h.per_gpu() for h in found), max(h.per_gpu() for h in found))
    assert f"The slower, the data path, sets the pace: {low:,.0f}-{high:,.0f} pairs/s per GPU" in said
    assert f"{' and '.join(f'{h.factor:.2f}' for h in found)} ×" in said and "per-core model times each host" in said


def test_the_days_are_training_evaluation_and_queueing_by_hand():
    """GPU-hours and days of the recipe's runs from the measured values, by hand: training at the pace; each run's
    evaluation (3 with a TTE after the encoders: removed, swapped), its 56,000 pictures at the data path's pace and
    166,010 pictures and texts at (1 - the teacher's share) / 3 of the eager step, the run's 2 GPUs held; on 8 GPUs
    4 lanes of 2, in rounds, one queueing wait; on 16 (SLURM) a wait per round."""
    slow = min(cost.hosts(14), key=lambda h: h.per_gpu())
    variants = [job["variant"] for _, job in recipe.planned_jobs()]
    after = {"tte_after", "tte_shared", "tte_after_ls", "tte_after_ls_init1e-3", "tte_after_ls_init1e-1",
             "tte_after_ls_init1", "tte_after_ls_budget"}
    passes = sum(3 if v in after else 1 for v in variants)
    train_h = 44_636 * 512 / slow.per_gpu() / 3600
    eval_h = (56_000 / slow.data + 166_010 * (1 - _hand("gpu_h100.eager_256.teacher_share") / 100)
              / (3 * slow.eager)) / 3600
    assert slow.eval_hours() == pytest.approx(eval_h)
    assert cost.gpu_hours(slow, variants) == pytest.approx((len(variants) * train_h, passes * eval_h * 2))
    rounds8, rounds16 = -(-len(variants) // 4), -(-len(variants) // 8)
    by_hand = {8: (rounds8 * (train_h / 2 + eval_h * passes / len(variants)) + 1.0) / 24,
               16: (rounds16 * (train_h / 2 + eval_h * passes / len(variants)) + rounds16 * 1.0) / 24}
    for gpus, days in by_hand.items():
        assert cost.recipe_days(slow, variants, gpus, 1.0) == pytest.approx((days, (1 if gpus == 8 else rounds16) / 24))
    table = recipe.days_table(14)
    fast = max(cost.hosts(14), key=lambda h: h.per_gpu())
    both = [sum(cost.gpu_hours(h, variants)) for h in (fast, slow)]
    assert f"| **{both[0]:,.0f}-{both[1]:,.0f}** |" in table
    assert f"| 8 | 8gpu: 4 runs × 2 GPUs | {cost.recipe_days(fast, variants, 8)[0]:.1f}-{by_hand[8]:.1f} | 1 |" in table


def test_another_queueing_assumption_changes_the_days_not_the_gpu_hours(capsys):
    host, variants = cost.hosts(14)[0], [job["variant"] for _, job in recipe.planned_jobs()]
    rounds = -(-len(variants) // 8)
    for gpus, waits in ((1, 1), (8, 1), (16, rounds)):
        none, hour = cost.recipe_days(host, variants, gpus, 0.0)[0], cost.recipe_days(host, variants, gpus, 1.0)[0]
        assert cost.recipe_days(host, variants, gpus, 12.0)[0] == pytest.approx(none + 12 * waits / 24)
        assert hour == pytest.approx(none + waits / 24)
    assert recipe.main(["days", "--cores-per-gpu", "14", "--queue-hours", "12"]) == 0
    twelve = capsys.readouterr().out
    assert twelve.strip() == recipe.days_table(14, queue_hours=12) != recipe.days_table(14)
    assert "of it queueing, h (12 per job)" in twelve and "Queueing, ASSUMED (not measured): 12 h per job" in twelve
    assert twelve.split("\n\n")[0] == recipe.days_table(14).split("\n\n")[0]         # the GPU-hours: unchanged


def test_the_data_path_time_enters_the_run_table():
    """The run table and the days use the slower of the step and the data path: with every shape decoding alike the
    data path is each host's loader per worker × the workers; a mixture decoding at twice the rate of the loader's
    shards doubles it and halves the GPU-hours; a data path faster than the step leaves the step's pace."""
    shapes = {s for _, _, s, _ in cost.MIXTURE} | set(cost.LOADER_SHAPES)
    alike = {"rates": {s: {cost.DECODER: 1.0, "pil_draft": 2.0} for s in shapes}, "command": "c", "machine_name": "m"}
    cores, per_worker = 12, cost.loader_per_worker()
    assert [h.data for h in cost.hosts(cores, alike)] == pytest.approx([cost.workers(cores) * w for w in per_worker])
    twice = {**alike, "rates": {s: dict.fromkeys((cost.DECODER, "pil_draft"), 1 / 3 if s == "shard256" else 1.0)
                                for s in shapes}}
    doubled = [cost.workers(cores) * w * 2 for w in per_worker]
    assert [h.data for h in cost.hosts(cores, twice)] == pytest.approx(doubled)
    one, two = cost.hosts(cores, alike)[0], cost.hosts(cores, twice)[0]
    assert cost.gpu_hours(two, ["noln"])[0] == pytest.approx(cost.gpu_hours(one, ["noln"])[0] / 2)
    fast = {**alike, "rates": {s: {cost.DECODER: 1e-6 if s == "shard256" else 1.0} for s in shapes}}
    assert all(h.per_gpu() == h.eager for h in cost.hosts(cores, fast)) and "the GPU, sets" in cost.pace(cores, fast)[1]
    said = cost.pace(cores, twice)[1]
    assert "the data path, sets the pace" in said and f"× {cost.workers(cores)} DataLoader workers" in said
    with mock.patch.object(cost, "decode_rates", lambda: twice):
        assert said in recipe.table(cores_per_gpu=cores) and said in recipe.days_table(cores)
    mixed = {**alike, "rates": {s: {cost.DECODER: 1.0 if s == "coco" else 3.0} for s in shapes}}
    n = {s: sum(p for _, p, sh, _ in cost.MIXTURE if sh == s) for s in ("coco", "shard512")}
    harmonic = sum(n.values()) / (n["coco"] / 1.0 + n["shard512"] / 3.0)
    assert cost.data_pairs_per_s(cores, mixed) == pytest.approx(cost.workers(cores) * harmonic)


def test_the_generated_commands_size_the_workers_and_name_what_slurm_needs():
    assert cost.workers(14) == 12 and cost.workers(1) == 1
    script = recipe.commands("slurm", cores_per_gpu=10)
    lines = [line for line in script.splitlines() if line.startswith("sbatch")]
    assert len(lines) == len(recipe.planned_jobs())
    for flag in ('--partition="$PARTITION"', '--account="$ACCOUNT"', "--mem=", '--output="$OUT/slurm/',
                 "--cpus-per-task=10", "srun --kill-on-bad-exit=1 --cpus-per-task=10 python", "data.num_workers=8"):
        assert all(flag in line for line in lines), flag
    assert ': "$DATA" "$CKPT" "$OUT" "$MIX" "$PARTITION" "$ACCOUNT"' in script
    for layout in recipe.LAYOUTS:                                 # the index, once, before any run reads it
        head = recipe.commands(layout).splitlines()[:3]
        assert head[2].startswith('python -m thesis_lib.data.shard_index "$MIX"')


def sbatch_lines(tmp_path: Path) -> list[tuple[str, argparse.Namespace]]:
    """Every sbatch command of the guide's bash blocks and of each layout's generated script, parsed."""
    script = "\n".join(bash_blocks(GUIDE.read_text()))
    argvs = [argv for _, argv in recorded(script, tmp_path)]
    for layout in recipe.LAYOUTS:
        argvs += [argv for _, argv in recorded(recipe.commands(layout), tmp_path, {"PARTITION": "p", "ACCOUNT": "a"})]
    lines = [shlex.join(argv) for argv in argvs if argv[0] == "sbatch"]
    asked_per_task = [line for line in lines if "--gpus-per-task" in line]
    assert not asked_per_task, asked_per_task
    return [(line, SBATCH.parse_args(shlex.split(line)[1:])) for line in lines]


def test_every_sbatch_line_asks_for_its_gpus_per_node_never_per_task(tmp_path):
    """--gpus-per-task=1 confines each task to its own GPU on many clusters, and NCCL then has no NVLink between the
    ranks (NVIDIA/nccl#1066, NVIDIA/pyxis#73): the GPUs are asked per node, as many as the job's tasks on a node
    (one per GPU, each taking the GPU of its local rank); a job of one task that starts its own processes (the
    pilot, the 8-GPU lanes) asks for all it drives."""
    assert not any("--gpus-per-task" in recipe.commands(layout) for layout in recipe.LAYOUTS)
    lines = sbatch_lines(tmp_path)
    assert sum("thesis_lib.training.run" in s.wrap for _, s in lines) >= len(recipe.planned_jobs()) + 2
    for shown, s in lines:
        assert s.gpus_per_node, f"no --gpus-per-node: {shown}"
        wrap = shlex.split(s.wrap)
        if wrap[0] == "srun":                                        # one task per GPU
            per_node = int(s.ntasks_per_node or int(s.ntasks) // int(s.nodes or 1))
            assert int(s.gpus_per_node) == per_node, shown
        elif "thesis_lib.full_scale.pilot" in wrap:
            assert int(s.gpus_per_node) == int(wrap[wrap.index("--gpus") + 1]), shown
    slurm = [line for line in recipe.commands("slurm").splitlines() if line.startswith("sbatch")]
    assert all(f"--nodes=1 --ntasks={recipe.SLURM_GPUS} --gpus-per-node={recipe.SLURM_GPUS} " in line
               for line in slurm)


SLURM_VARIABLES = ("SLURM_CPUS_ON_NODE", "SLURM_GPUS_ON_NODE", "SLURM_CPUS_PER_TASK")


@pytest.fixture
def no_slurm(monkeypatch):
    for name in SLURM_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    return monkeypatch


@pytest.mark.parametrize("env, task_gpus, cores, source", [
    ({}, None, cost.CORES_PER_GPU, ""),                                        # a login node: no GPU, no SLURM
    ({"SLURM_CPUS_ON_NODE": "28", "SLURM_GPUS_ON_NODE": "2", "SLURM_CPUS_PER_TASK": "14"}, None, 14,
     "SLURM_CPUS_ON_NODE=28 / 2 (SLURM_GPUS_ON_NODE)"),                         # the recipe's job: a task per GPU
    ({"SLURM_CPUS_ON_NODE": "112", "SLURM_GPUS_ON_NODE": "8", "SLURM_CPUS_PER_TASK": "112"}, None, 14,
     "SLURM_CPUS_ON_NODE=112 / 8 (SLURM_GPUS_ON_NODE)"),                        # one task for all 8 GPUs (the lanes)
    ({"SLURM_CPUS_PER_TASK": "10"}, None, 10, "SLURM_CPUS_PER_TASK=10"),
    ({"SLURM_CPUS_PER_TASK": "28"}, 2, 14, "SLURM_CPUS_PER_TASK=28 / 2 GPUs"),  # the pilot's task, 2 GPUs
])
def test_cores_per_gpu_default_from_slurms_variables(no_slurm, env, task_gpus, cores, source):
    for name, value in env.items():
        no_slurm.setenv(name, value)
    assert cost.cores_per_gpu(task_gpus) == (cores, source)


def test_cores_per_gpu_default_from_the_hosts_cpus_and_gpus_and_its_warning(no_slurm, capsys):
    no_slurm.setattr(torch.cuda, "device_count", lambda: 4)
    no_slurm.setattr(cost.os, "sched_getaffinity", lambda pid: set(range(64)), raising=False)
    assert cost.cores_per_gpu() == (16, "this host's 64 CPUs / 4 GPUs")
    said = cost.cores_warning(28, "SLURM_CPUS_PER_TASK=28", threads=2)
    assert "hyperthreads, not physical cores (here 2 threads per core: 28 CPUs are about 14 physical cores)" in said
    assert "decode rate is per physical core" in said and "threads per core" not in cost.cores_warning(8, "x", 1)
    no_slurm.setenv("SLURM_CPUS_ON_NODE", "20")
    no_slurm.setenv("SLURM_GPUS_ON_NODE", "2")
    assert recipe.main(["commands", "--layout", "slurm"]) == 0
    out, err = capsys.readouterr()
    assert ("--cores-per-gpu 10: " in out.splitlines()[0] and "--cpus-per-task=10 " in out
            and "data.num_workers=8" in out)
    assert err.startswith("recipe: --cores-per-gpu 10, from SLURM_CPUS_ON_NODE=20 / 2 (SLURM_GPUS_ON_NODE). Warning")
    assert "hyperthreads, not physical cores" in err
    assert recipe.main(["days", "--cores-per-gpu", "14"]) == 0                # given: no warning, the reference days
    out, err = capsys.readouterr()
    assert err == "" and out.strip() == recipe.days_table(14)


def test_the_mixture_is_declared_once_and_reads_the_download_shard_lists():
    assert recipe.mix("/d") == "coco,wds:/d/cc3m/shards.txt@1516133,wds:/d/cc12m/shards.txt@1181988"
    assert sum(n for _, n, _, _ in cost.MIXTURE) == 3_264_868


@pytest.mark.parametrize("argv, said", [
    (["commands", "--layout", "slurm", "--cores-per-gpu", "0"], "argument --cores-per-gpu: 0 is not at least 1"),
    (["commands", "--layout", "8gpu", "--cores-per-gpu", "-3"], "argument --cores-per-gpu: -3 is not at least 1"),
    (["commands", "--layout", "1gpu", "--cores-per-gpu", "x"], "argument --cores-per-gpu: 'x' is not a whole number"),
    (["days", "--cores-per-gpu", "0"], "argument --cores-per-gpu: 0 is not at least 1"),
    (["days", "--queue-hours", "-1"], "argument --queue-hours: -1 is not at least 0"),
    (["days", "--queue-hours", "x"], "argument --queue-hours: 'x' is not a number"),
    (["table", "--cores-per-gpu", "0"], "argument --cores-per-gpu: 0 is not at least 1"),
    (["commands", "--layout", "1gpu", "--table1-seeds", "0"], "argument --table1-seeds: 0 is not at least 1"),
    (["commands", "--layout", "1gpu", "--table1-seeds", "2"], "--table1-seeds: 2 is fewer than the sequential"),
])
def test_a_bad_argument_is_one_line_and_exit_2_not_a_script(argv, said, capsys):
    """--cores-per-gpu 0 printed a script with --cpus-per-task=0 and exited 0."""
    with pytest.raises(SystemExit) as stop:
        recipe.main(argv)
    out, err = capsys.readouterr()
    assert stop.value.code == 2 and out == "" and said in err.splitlines()[-1]
    with pytest.raises(ValueError, match="cores_per_gpu must be at least 1"):
        recipe.commands("slurm", cores_per_gpu=0)


# Resubmitting (docs/full_scale.md, "Resubmitting"): the generated scripts run by bash with fake sbatch / torchrun /
# python on PATH, the status of a fake results tree, SIGUSR1 in a tiny training run, the run's lock on rank 0.

FAKES = {"python": "exit 0",
         "sbatch": 'case "$*" in *"--job-name=$FAIL "*) echo "sbatch: error: QOSMaxSubmitJobPerUser" >&2; exit 1;; '
                   'esac; echo "$PYTHONUNBUFFERED $THESIS_PROGRESS $*" >> "$REC"',
         "torchrun": 'echo "$PYTHONUNBUFFERED $THESIS_PROGRESS $*" >> "$REC"; case "$*" in *"$FAIL"*) exit 1;; esac'}


def run_script(script: str, tmp_path: Path, fail: str) -> tuple[subprocess.CompletedProcess, list[str]]:
    """``script`` run by bash in ``tmp_path`` with FAKES first on PATH (the one named ``fail`` fails); what it printed
    and each line the fakes recorded (the environment they saw, then their arguments)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name, body in FAKES.items():
        (bin_dir / name).write_text("#!/bin/bash\n" + body + "\n")
        (bin_dir / name).chmod(0o755)
    env = {**DEFAULTS, "OUT": str(tmp_path / "out"), "PARTITION": "p", "ACCOUNT": "a", "REC": str(tmp_path / "rec"),
           "FAIL": fail, "PATH": f"{bin_dir}:/usr/bin:/bin"}
    done = subprocess.run(["bash", "-c", script], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=60)
    rec = tmp_path / "rec"
    return done, rec.read_text().splitlines() if rec.exists() else []


def test_the_slurm_script_names_each_run_once_requeues_appends_and_goes_on_past_a_refused_sbatch(tmp_path):
    """Notebook 01's ablations train `baseline` too: each run's job has its own name; a job is started only when no
    job of its name is queued or running (singleton), warned before its time limit (it checkpoints and requeues),
    appends to its log; a refused sbatch is named on stderr, the others are submitted, the script exits 1."""
    for seeds in (None, 24):
        names = [recipe.job_name(job) for _, job in recipe.planned_jobs(seeds)]
        assert len(set(names)) == len(names), sorted(n for n in names if names.count(n) > 1)
    script = recipe.commands("slurm")
    lines = [line for line in script.splitlines() if line.startswith("sbatch")]
    names = [re.search(r"--job-name=(\S+)", line)[1] for line in lines]
    assert len(set(names)) == len(names) == len(recipe.planned_jobs())
    assert {"tte-baseline-0", "tte-baseline-0-random-init", "tte-baseline-0-thesis-regularisation"} <= set(names)
    for line in lines:
        s = SBATCH.parse_args(shlex.split(line.split(" || ")[0])[1:])
        assert (s.dependency, s.requeue, s.signal, s.open_mode) == ("singleton", True, "USR1@600", "append"), line
        assert s.output == "$OUT/slurm/%x.out", line
    for layout in recipe.LAYOUTS:                                        # no `>` that truncates a log
        assert not [x for x in recipe.commands(layout).splitlines() if re.search(r"(?<![>\d])>(?![>&])", x)], layout
    done, rec = run_script(script, tmp_path, fail="tte-baseline-1")
    submitted = [re.search(r"--job-name=(\S+)", r)[1] for r in rec]
    assert done.returncode == 1 and submitted == [n for n in names if n != "tte-baseline-1"]
    assert "submit: sbatch refused tte-baseline-1 (exit 1)" in done.stderr and "QOSMaxSubmit" in done.stderr
    assert f"submit: 1 of {len(names)} jobs refused" in done.stderr
    assert all(r.startswith("1 0 ") for r in rec)             # the jobs' logs: unbuffered, no progress bars


STAGE_FAKES = {"python": 'case "$*" in *"recipe mix"*) echo "coco,wds:$4/cc3m/shards.txt@5";; esac',
               "rsync": 'echo "rsync $*" >> "$REC"', "sbatch": 'printf "%s\\0" "$@" >> "$REC.args"'}


@pytest.mark.parametrize("layout", ["slurm", "8gpu"])
def test_with_stage_set_each_job_copies_data_to_the_node_and_trains_from_the_copy(layout, tmp_path):
    """$STAGE, given once: the SLURM jobs (each --wrap) or the node's script first rsync DATA's sets (not downloads/)
    to $STAGE/data, then train with DATA and MIX there; MIX names the same sets and @N, so the runs are the same."""
    jobs = [job for _, job in recipe.planned_jobs()][:2]
    with mock.patch.dict(FAKES, STAGE_FAKES):
        done, rec = run_script("export STAGE=/local/me\n" + recipe.commands(layout, jobs=jobs), tmp_path, "none")
    assert done.returncode == 0, done.stderr
    if layout == "8gpu":
        assert rec[0] == "rsync -a --exclude downloads/ /data/ /local/me/data/" and len(rec) == 3
        assert all("--data-root /local/me/data " in r and "data.train_sets=coco,wds:/local/me/data/cc3m/" in r
                   for r in rec[1:])
        return
    args = (tmp_path / "rec.args").read_text().split("\0")[:-1]
    wraps = [shlex.split(args[i + 1]) for i, a in enumerate(args) if a == "--wrap"]
    assert len(wraps) == 2
    for wrap in wraps:
        srun = wrap.index("srun")
        assert wrap[:srun] == ["rsync", "-a", "--exclude", "downloads/", "/data/", "/local/me/data/", "&&", "python",
                               "-m", "thesis_lib.data.shard_index", "coco,wds:/local/me/data/cc3m/shards.txt@5", "&&"]
        assert wrap[wrap.index("--data-root") + 1] == "/local/me/data"
        assert "data.train_sets=coco,wds:/local/me/data/cc3m/shards.txt@5" in wrap


def test_a_lane_goes_on_past_a_failed_run_and_the_script_fails_naming_it(tmp_path):
    jobs = [job for nb, job in recipe.planned_jobs() if nb != "01"][:2 * recipe.LANES]    # 2 runs per lane
    first, second = jobs[0], jobs[recipe.LANES]                            # lane 0's runs
    fail = f"--variant {first['variant']} --seed {first['seed']} "
    done, rec = run_script(recipe.commands("8gpu", jobs=jobs), tmp_path, fail=fail)
    assert len(rec) == len(jobs) and any(f"--seed {second['seed']} " in r for r in rec if "29500" in r)
    assert done.returncode == 1
    assert f"lane 0: 1 of 2 runs failed: {recipe.job_name(first)}" in done.stderr
    assert (tmp_path / "lane0.log").read_text().count("runs failed") == 1 and "lane 1" not in done.stderr
    assert all(r.startswith("1 0 ") for r in rec)
    done, rec = run_script(recipe.commands("8gpu", jobs=jobs), tmp_path, fail="no run")
    assert done.returncode == 0 and (tmp_path / "lane0.log").read_text().count("runs failed") == 1   # appended


def fake_results(out: Path) -> dict:
    """A results tree under ``out`` for a few of the recipe's runs: {name: the state it must be found in}."""
    from filelock import FileLock
    jobs = {recipe.job_name(job): job for _, job in recipe.planned_jobs()}
    files = {name: recipe.run_files(job, str(out)) for name, job in jobs.items()}
    for name in ("tte-baseline-0", "tte-baseline-0-random-init"):
        files[name][0].result.parent.mkdir(parents=True, exist_ok=True)
        files[name][0].result.write_text("{}")
    for name in ("tte-noln-1", "tte-noln-2"):                       # a fresh checkpoint; an hour old
        files[name][0].dir.mkdir(parents=True)
        files[name][0].checkpoint.write_bytes(b"x")
    old = time.time() - 3600
    os.utime(files["tte-noln-2"][0].checkpoint, (old, old))
    log = files["tte-tte_before-3"][1]
    log.parent.mkdir(parents=True)
    log.write_text("step 1\nTraceback (most recent call last):\n  File ...\nRuntimeError: CUDA out of memory\n")
    files["tte-tte_shared-0"][1].write_text("step 1\n")                       # a log and no error: not failed
    held = FileLock(str(files["tte-mome-2"][0].result.with_suffix(".lock")))
    files["tte-mome-2"][0].result.parent.mkdir(parents=True)
    held.acquire()
    want = {name: "missing" for name in jobs}
    want.update({"tte-baseline-0": "done", "tte-baseline-0-random-init": "done", "tte-noln-1": "running",
                 "tte-mome-2": "running", "tte-tte_before-3": "failed"})
    return {"want": want, "held": held, "log": log}


def test_status_finds_each_run_done_running_failed_or_missing_and_missing_only_submits_the_rest(tmp_path, capsys):
    out = tmp_path / "runs"
    fake = fake_results(out)
    try:
        assert recipe.main(["status", "--out", str(out)]) == 0
        lines = capsys.readouterr().out.splitlines()
        found = {line.split()[1]: line.split()[0] for line in lines[:-1]}
        assert found == fake["want"]
        assert next(line for line in lines if " tte-tte_before-3 " in line).endswith(str(fake["log"]))
        assert lines[-1] == f"{len(found)} runs: 2 done, 2 running, 1 failed, {len(found) - 5} missing"
        assert recipe.main(["commands", "--layout", "slurm", "--missing-only", "--out", str(out)]) == 0
        script = capsys.readouterr().out
    finally:
        fake["held"].release()
    names = re.findall(r"--job-name=(\S+)", script)
    assert sorted(names) == sorted(n for n, st in fake["want"].items() if st in ("missing", "failed"))
    assert script.splitlines()[0].endswith(f"{len(names)} runs (missing or failed only)")
    with pytest.raises(SystemExit):
        recipe.build_parser().parse_args(["status", "--fresh-minutes", "0"])


def test_sigusr1_checkpoints_at_the_next_logged_step_requeues_and_resumes_to_the_same_result(tmp_path, monkeypatch,
                                                                                              capsys):
    """SLURM's warning before the time limit (sbatch --signal=USR1@…) in a smoke run, after its first step: the
    checkpoint is written at the next logged step (2, not a checkpoint step), `scontrol requeue` is called, the
    exit code says "to be continued"; the same command continues to the uninterrupted run's result and curve."""
    import signal

    from thesis_lib.training import engine, run
    argv = ["--preset", "smoke", "--variant", "baseline", "--seed", "0", "--resume"]
    assert run.main(argv + ["--out", str(tmp_path / "whole")]) == 0
    real, calls = engine.optimiser_step, []

    def step_then_signal(s, loss, t):
        real(s, loss, t)
        if not calls:
            assert signal.getsignal(signal.SIGUSR1) is engine.request_stop     # else SIGUSR1 would end pytest
            calls.append("signalled")
            os.kill(os.getpid(), signal.SIGUSR1)

    monkeypatch.setattr(engine, "optimiser_step", step_then_signal)
    monkeypatch.setattr(run.subprocess, "run", lambda cmd, **kw: calls.append(cmd) or subprocess.CompletedProcess(
        cmd, 0, "", ""))
    monkeypatch.setenv("SLURM_JOB_ID", "4242")
    assert run.main(argv + ["--out", str(tmp_path / "cut")]) == run.REQUEUE_EXIT
    assert calls == ["signalled", ["scontrol", "requeue", "4242"]]
    assert "job 4242 requeued" in capsys.readouterr().err
    paths = {k: RunPaths(results_dir(tmp_path / k), "smoke", "baseline", 0) for k in ("whole", "cut")}
    assert not paths["cut"].result.exists()
    assert torch.load(paths["cut"].checkpoint, weights_only=False)["step"] == 2
    assert signal.getsignal(signal.SIGUSR1) is signal.SIG_DFL and not engine.STOP["requested"]
    monkeypatch.setattr(engine, "optimiser_step", real)
    assert run.main(argv + ["--out", str(tmp_path / "cut")]) == 0
    whole, cut = (json.loads(paths[k].result.read_text()) for k in ("whole", "cut"))
    assert cut["train"]["resumed_from"] == 2 and cut["metrics"] == whole["metrics"]
    assert paths["cut"].metrics.read_text() == paths["whole"].metrics.read_text()


def test_rank_0_alone_takes_the_runs_lock_and_a_held_lock_stops_a_run_of_several_processes(tmp_path, monkeypatch):
    """With several processes the lock was not taken: two jobs of one run could write one checkpoint."""
    from thesis_lib.errors import ResultConflictError
    from thesis_lib.training import run
    from thesis_lib.training.distributed import DistInfo
    monkeypatch.setattr(run, "on_main", lambda info, decide, what: decide() if info.is_main else None)
    monkeypatch.setattr(run, "check_shared_folder", lambda *a: None)     # one process plays each rank
    monkeypatch.setattr(run, "check_same_view", lambda *a: None)
    monkeypatch.setattr(run, "LOCK_WAIT_S", 0.1)
    cfg, paths = get_config("smoke"), RunPaths(tmp_path, "smoke", "baseline", 0)
    with run.run_folder(paths, cfg, DistInfo(rank=0, world_size=2), False):
        assert recipe.lock_held(paths)
    assert not recipe.lock_held(paths)
    with run.run_folder(paths, cfg, DistInfo(rank=1, world_size=2), False):
        assert not recipe.lock_held(paths)
    with paths.lock():
        with pytest.raises(ResultConflictError, match="another process is training this run"):
            with run.run_folder(paths, cfg, DistInfo(rank=0, world_size=2), False):
                pass
