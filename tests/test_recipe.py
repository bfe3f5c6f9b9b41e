"""study/recipe and docs/full_scale.md against the code. Every command of the guide (and of README's full-scale
subsection, and of the scripts ``python -m thesis_lib.study.recipe commands`` writes) is expanded by bash with every
program replaced by a recorder (nothing runs), then parsed by the real parser of what it calls: thesis_lib's CLIs
(their own argparse, ``--set`` fields through ``get_config``), torchrun's, papermill's (``-p`` / ``-y`` names
against the notebook's ``parameters`` cell, overrides through ``get_config``), the Makefile's targets. No two
commands may write one result file with different setups, and the notebooks must find every run the recipe trains."""
import argparse
import ast
import contextlib
import io
import json
import re
import shlex
import subprocess
from dataclasses import asdict
from pathlib import Path
from unittest import mock

import pytest
import torch
import yaml

from thesis_lib.config import get_config
from thesis_lib.paths import ROOT, results_dir
from thesis_lib.study import grids, recipe
from thesis_lib.study.runs import SEEDS, StudyParams
from thesis_lib.training.results import RunPaths, _identity
from thesis_lib.training.run import overrides_of, run_config

GUIDE, README = ROOT / "docs" / "full_scale.md", ROOT / "README.md"
DEFAULTS = {"DATA": "/data", "CKPT": "/ckpt", "OUT": "runs", "MIX": "coco"}
RECORD = r"""command_not_found_handle() { local r; r=$(printf '%s\x1f' "${CUDA_VISIBLE_DEVICES-}" "$@")
  printf '%s\x1e' "$r" >> "$REC"; return 0; }
source() { :; }
PATH=/nonexistent-recipe-check
"""
ENTRY = {"thesis_lib.evaluate": "thesis_lib.evaluate_cli"}     # evaluate.py hands its __main__ to evaluate_cli


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
    done = subprocess.run(["bash", "-c", RECORD + prelude + script], cwd=tmp_path, capture_output=True, text=True,
                          env={"REC": str(rec), "HOME": str(tmp_path)}, timeout=60)
    assert done.returncode == 0, done.stderr
    return [(r.split("\x1f")[0], r.split("\x1f")[1:-1]) for r in rec.read_text().split("\x1e")[:-1]]


class _Parsed(Exception):
    pass


def module_args(module: str, argv: list[str]) -> argparse.Namespace:
    """``python -m module argv`` parsed by the module's own parser (its ``main`` up to ``parse_args``)."""
    import importlib
    real = argparse.ArgumentParser.parse_args

    def parse(self, args=None, namespace=None):
        raise _Parsed(real(self, args, namespace))

    err = io.StringIO()
    with mock.patch.object(argparse.ArgumentParser, "parse_args", parse), contextlib.redirect_stderr(err):
        try:
            importlib.import_module(ENTRY.get(module, module)).main(argv)
        except _Parsed as parsed:
            return parsed.args[0]
        except SystemExit:
            pass
    raise AssertionError(f"its parser says {(err.getvalue().strip().splitlines() or ['nothing'])[-1]!r}")


def notebook_parameters(path: Path) -> dict:
    """The names and default values (literals; None where computed) of a notebook's ``parameters`` cell."""
    nb = json.loads(path.read_text())
    cell = next(c for c in nb["cells"] if "parameters" in c.get("metadata", {}).get("tags", []))
    out = {}
    for node in ast.parse("".join(cell["source"])).body:
        if isinstance(node, ast.Assign):
            for target in node.targets:                 # `a = b = None` declares both
                with contextlib.suppress(ValueError):
                    out[target.id] = ast.literal_eval(node.value)
                out.setdefault(target.id, None)
    return out


SBATCH = argparse.ArgumentParser(prog="sbatch", add_help=False, exit_on_error=False)
for _flag in ("--job-name", "--nodes", "--ntasks", "--ntasks-per-node", "--gpus-per-task", "--cpus-per-task", "--time",
              "--wrap", "--output", "--partition", "--account", "--mem"):
    SBATCH.add_argument(_flag)


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
        self.writes.setdefault(path, []).append((_identity(asdict(cfg), processes), shown))

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
        seeds = tuple(v["seeds"] if v["seeds"] is not None else SEEDS)
        params = StudyParams("thesis", seeds, "cuda", v["output_dir"], v["data_root"], v["checkpoints"], v["reuse"],
                             tuple(sorted((v["overrides"] or {}).items())))
        get_config("thesis", overrides=params.overrides())                # the overrides' fields and values
        number = nb.name[:2]
        fusion = tuple(v.get("fusion_variants") or ())
        with mock.patch.object(recipe, "NB05_FUSION", fusion):
            jobs = recipe.notebook_jobs(number, params, table1_seeds=24)
        for job in jobs:
            cfg = run_config(job["preset"], job["variant"], job["seed"], job["overrides"])
            path = RunPaths(results_dir(job["out_dir"]), cfg.preset, cfg.model.variant, cfg.seed).result
            self.writes.setdefault(path, []).append((_identity(asdict(cfg), 1), shown))
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
        lanes = {cvd for cvd, argv in recorded(recipe.commands(layout), tmp_path)}
        assert lanes == {f"{2 * i},{2 * i + 1}" for i in range(recipe.LANES)}


@pytest.mark.parametrize("right, wrong", [
    ('--checkpoints "$CKPT" --out "$OUT" --set "data.train_sets=$MIX" --set "train.batch_size=512"',
     '--checkpoint-dir "$CKPT" --out "$OUT" --set "data.train_sets=$MIX" --set "train.batch_size=512"'),  # no such flag
    ("--nproc_per_node 8", "--nproc-per-nodes 8"),                                  # torchrun has no such flag
    ('--set "train.batch_size=512" --resume', '--set "train.batch_size=half" --resume'),   # not an integer
    ('--set "train.batch_size=256" --resume', '--set "train.batchsize=256" --resume'),     # no such config field
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


def test_the_guide_shows_the_run_table_the_code_computes():
    assert recipe.table() in GUIDE.read_text()


def test_the_recipe_follows_the_notebooks_parameters_and_the_global_batch():
    nb05 = notebook_parameters(ROOT / "notebooks" / "05_modality_mechanisms.ipynb")
    assert tuple(nb05["seeds"]) == recipe.NB05_SEEDS and tuple(nb05["fusion_variants"]) == recipe.NB05_FUSION
    for nb in ("01", "02", "03", "04"):
        assert notebook_parameters(ROOT / "notebooks" / f"{[p.name for p in (ROOT / 'notebooks').glob(nb + '_*')][0]}"
                                   )["seeds"] is None            # the study's SEEDS
    variants = {job["variant"] for _, job in recipe.planned_jobs()}
    assert variants >= set(grids.CLAIMED) | set(grids.NOTEBOOKS["05"]) | set(recipe.NB05_FUSION)
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
    assert abs((tmp_path / "c.pt").stat().st_size / (recipe.BYTES_PER_PARAMETER * n) - 1) < 0.25


def test_the_guide_quotes_the_recipes_per_run_figures():
    """The per-run figures the guide's prose states, against the code that computes the table."""
    thesis_h, h100_h = recipe.run_hours()
    largest = max((recipe.checkpoint_gb(job["variant"]), job["variant"]) for _, job in recipe.planned_jobs())
    assert largest[1] == "switch_sib"
    base, top = recipe.checkpoint_gb("baseline"), largest[0]
    text = " ".join(GUIDE.read_text().split())
    for quoted in (f"{thesis_h:.1f} per run", f"{h100_h:.1f} per run",
                   f"(≈ {recipe.THESIS_PAIRS_PER_S:.0f} pairs/s, derived)",
                   f"took {recipe.THESIS_HOURS} h on {recipe.THESIS_GPUS} × RTX 4090",
                   f"at {recipe.H100_PAIRS_PER_S:,} pairs/s",
                   f"{recipe.parameters('baseline') / 1e6:.1f} M parameters = {base:.2f} GB",
                   f"up to {top:.2f} GB for `switch_sib`", f"| {base:.2f}-{top:.2f} GB |",
                   f"{recipe.BYTES_PER_PARAMETER} bytes per trainable parameter"):
        assert quoted in text, quoted
