"""The package's layout is its architecture (lints of a property of the repository, not of behaviour). Each room imports
only its own room or rooms below it; inside the study, each stage (runs → results → claims → pages) imports only the
chapter's declarations and the stages before it; no module comes back to itself through its imports, no private name
is imported from another module, a variant's name is decoded by the registry alone, docstrings cite what a reader
can open, equations are named with their document, loading never trains, and the layout page (docs/layout.md) names
every module.
"""
import ast
import os
import importlib
import re
from pathlib import Path

import pytest

from thesis_lib.paths import PACKAGE, ROOT

LAYERS = (   # lowest first; a module may import from its own room (without a cycle) or from any room below
    ("errors", "paths", "cache", "version", "numerics", "fetch"),
    ("variants", "metrics", "config_checks", "config", "stored_config"),
    ("data",),
    ("models",),
    ("evaluation", "analysis", "notation", "costs"),
    ("training", "evaluate", "api", "gallery"),
    ("study",),
    ("full_scale",),          # a lab's operations: the recipe, the pilot, the rehearsal, on top of the study
    ("__init__",),
)
LEVEL = {room: i for i, rooms in enumerate(LAYERS) for room in rooms}
STAGES = (   # the study, in the order a result flows; a stage imports only the ones before it (and the declarations)
    ("study.grids", "study.reference"),    # the chapter's declarations: what each table compares, what the thesis says
    ("study.runs",),                       # 1. what to train, and when a design's block is done
    ("study.results",),                    # 2. result files read into one table
    ("study.claims",),                     # 3. each claim's paired test and verdict, and the statistics it calls
    ("study.pages",),                      # 4. tables, figures, the README block, docs/results.md
    ("study",),                            # the package's names for the notebooks (``study.<name>``)
)


def modules() -> dict[str, ast.Module]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = ".".join(path.relative_to(PACKAGE).with_suffix("").parts)
        out[name.removesuffix(".__init__") or "__init__"] = ast.parse(path.read_text())
    return out


def imports(name: str, tree: ast.Module, known: set) -> set:
    """Every thesis_lib module ``name`` imports, anywhere in the file: at the top, inside a function or under a
    ``__main__`` guard (no exception: an entry point is a module like any other)."""
    is_package = name == "__init__" or any(k.startswith(name + ".") for k in known)
    package = [] if name == "__init__" else name.split(".")[:None if is_package else -1]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - node.level + 1] + (node.module.split(".") if node.module else [])
            elif node.module and node.module.split(".")[0] == "thesis_lib":
                base = node.module.split(".")[1:]
            else:
                continue
            for alias in node.names:
                sub = ".".join(base + [alias.name])
                found.add(sub if sub in known else ".".join(base) or "__init__")
        elif isinstance(node, ast.Import):
            found |= {a.name.removeprefix("thesis_lib.") for a in node.names if a.name.startswith("thesis_lib.")}
    return found - {name}


def room(module: str) -> str:
    return module.split(".")[0]


def graph() -> dict[str, set]:
    mods = modules()
    return {name: imports(name, tree, set(mods)) for name, tree in mods.items()}


def test_every_module_belongs_to_a_declared_room():
    assert {room(m) for m in graph()} <= set(LEVEL), "a new room: declare it in LAYERS and in docs/layout.md"


def test_no_module_imports_a_room_above_its_own():
    upward = [f"{m} -> {d}" for m, deps in graph().items() for d in deps if LEVEL[room(d)] > LEVEL[room(m)]]
    assert not upward, "imports against the layers: " + ", ".join(upward)


def stage(module: str) -> int:
    """The stage of the longest declared prefix of ``module``."""
    found = [(len(st), i) for i, stages in enumerate(STAGES) for st in stages
             if module == st or module.startswith(st + ".")]
    return max(found)[1]


def test_every_study_module_belongs_to_a_stage_and_imports_only_the_stages_before_it():
    study = {m: deps for m, deps in graph().items() if room(m) == "study"}
    assert all(any(m == st or m.startswith(st + ".") for sts in STAGES for st in sts) for m in study)
    against = [f"{m} -> {d}" for m, deps in study.items() for d in deps if room(d) == "study" and stage(d) > stage(m)]
    assert not against, "imports against the study's flow (runs → results → claims → pages): " + ", ".join(against)
    assert stage("study.claims.designs") == 3 and stage("study.runs.designs") == 1 and stage("study") == 5


def test_no_private_name_is_imported_from_another_module():
    """``from x import _y`` (a module's private helper used elsewhere) anywhere in the package: a name another
    module needs is public, in the module it belongs to."""
    hits = []
    for name, tree in modules().items():
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("thesis_lib")):
                hits += [f"{name}: from {'.' * node.level}{node.module or ''} import {a.name}" for a in node.names
                         if a.name.startswith("_") and not a.name.startswith("__")]
    assert not hits, hits


def test_a_metric_key_is_spelled_only_in_the_metric_registry():
    """Outside metrics.py no module spells a metric's stored key as a string (``"coco_mean"``) or as a column read as an
    attribute (``df.coco_mean``): it names the registry's constant (``metrics.COCO_MEAN``), a group of it
    (``metrics.TABLE``) or builds a key with ``metrics.key``. Docstrings may name one."""
    from thesis_lib.metrics import METRICS
    hits = []
    for name, tree in modules().items():
        if name == "metrics":
            continue
        docs = {id(n.body[0].value) for n in ast.walk(tree)
                if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef)) and n.body
                and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
        hits += [f"{name}:{n.lineno} {n.value}" for n in ast.walk(tree) if isinstance(n, ast.Constant)
                 and isinstance(n.value, str) and n.value in METRICS and id(n) not in docs]
        hits += [f"{name}:{n.lineno} .{n.attr}" for n in ast.walk(tree)
                 if isinstance(n, ast.Attribute) and n.attr in METRICS]
    assert not hits, hits


def test_the_import_graph_has_no_cycle():
    g = graph()
    state, cycles = {}, []

    def visit(node, trail):
        state[node] = "open"
        for dep in sorted(g.get(node, ())):
            if state.get(dep) == "open":
                cycles.append(" -> ".join(trail[trail.index(dep):] + [dep]))
            elif dep not in state:
                visit(dep, trail + [dep])
        state[node] = "done"

    for node in sorted(g):
        if node not in state:
            visit(node, [node])
    assert not cycles, "import cycles: " + "; ".join(cycles)


def test_a_variant_is_decoded_only_by_the_registry():
    pattern = re.compile(r"variant\s*(==|!=)|variant\s+(not\s+)?in\s*[(\[{]|variant\.startswith")
    hits = [f"{p.relative_to(ROOT)}:{i}" for p in PACKAGE.rglob("*.py") if p.name != "variants.py"
            for i, line in enumerate(p.read_text().splitlines(), 1) if pattern.search(line)]
    assert not hits, hits


def test_a_preset_is_read_by_its_fields_not_branched_on_by_name():
    """What differs by scale (the committed figures' folder, a path test's seeds and steps, the real data, the model a
    notation figure draws, whether the fixed designs run) is a field of ``config.Preset``; no module compares a
    preset's name or looks it up in a collection of names (the registry's own ``PRESETS`` aside)."""
    pattern = re.compile(r"preset\s*(==|!=)|preset\s+(not\s+)?in\s*(?!(PRESETS|PRESET_SPECS)\b)[\w(\[{]"
                         r"|preset\.startswith|(==|!=)\s*[\w.]*preset\b")
    hits = [f"{p.relative_to(ROOT)}:{i}" for p in PACKAGE.rglob("*.py") if p.name != "config.py"
            for i, line in enumerate(p.read_text().splitlines(), 1) if pattern.search(line)]
    assert not hits, hits


def test_the_layerscale_initial_value_is_resolved_only_by_the_config():
    """γ starts at the variant's own value or the configured default: ``ModelConfig.tte`` applies that rule, and every
    other module reads its ``gamma_init`` instead of the default knob."""
    hits = [f"{p.relative_to(ROOT)}:{node.lineno}" for p in PACKAGE.rglob("*.py") if p.name != "config.py"
            for node in ast.walk(ast.parse(p.read_text()))
            if isinstance(node, ast.Attribute) and node.attr == "tte_layer_scale"]
    assert not hits, hits


MARKDOWN = re.compile(r"[\w./-]+\.md\b")
WRITTEN_BY_THE_CODE = {"gpu.md"}                          # benchmarks/gpu.py's output


def test_no_reference_points_outside_the_repository():
    """Every Markdown file a docstring, notebook or page names is in the repository (notes a reader does not have
    are not cited), and no path climbs out of it."""
    files = [*PACKAGE.rglob("*.py"), *(ROOT / "notebooks").glob("*.ipynb"), *(ROOT / "docs").glob("*.md"),
             ROOT / "README.md", ROOT / "BENCHMARKS.md", *(ROOT / "benchmarks").glob("*")]
    present = {p.name for p in ROOT.rglob("*.md") if ".venv" not in p.parts} | WRITTEN_BY_THE_CODE
    hits = [f"{p.relative_to(ROOT)}: {m.group(0)}" for p in files if p.is_file()
            for m in MARKDOWN.finditer(p.read_text()) if Path(m.group(0)).name not in present]
    hits += [f"{p.relative_to(ROOT)}: ../" for p in files if p.is_file() and "../" in p.read_text()]
    assert not hits, hits


def test_equations_are_named_with_their_document():
    """"Eq. 2" alone means two different equations (notation chapter, TTE chapter); each mention names its document."""
    labelled = re.compile(r"(?:TTE chapter|notation(?: chapter)?,?|Switch-BERT) $")
    bare = [f"{p.relative_to(ROOT)}:{i}: {line.strip()[:80]}" for p in PACKAGE.rglob("*.py")
            for i, line in enumerate(p.read_text().splitlines(), 1)
            for m in re.finditer(r"\bEqs?\.", line) if not labelled.search(line[:m.start()])]
    assert not bare, bare


def _layout_section() -> str:
    """docs/layout.md's "## Layout" section (the README links to it)."""
    page = (ROOT / "docs" / "layout.md").read_text()
    section = page[page.index("## Layout"):]
    return section[:section.index("\n## ", 4)]


def test_the_layout_page_names_every_module():
    section = _layout_section()
    missing = [str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
               if p.name != "__init__.py" and p.name not in section]
    assert not missing, f"docs/layout.md '## Layout' does not name {missing}"
    for folder in ("data/", "models/", "training/", "study/"):
        assert folder in section


def test_the_layout_page_names_every_benchmark_script():
    section = _layout_section()
    missing = [p.name for p in (ROOT / "benchmarks").iterdir() if p.suffix in (".py", ".sh") and p.name not in section]
    assert not missing, f"docs/layout.md '## Layout' does not name benchmarks/{missing}"


def test_the_readme_notebook_map_lists_the_figures_each_notebook_draws():
    """The map's third column against the figure registry (study/pages/figures.py FIGURES): one source, tested."""
    from thesis_lib.study.pages.figures import FIGURES
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## Notebook map"):]
    rows = [r for r in section[:section.index("\n\n", section.index("| notebook"))].splitlines()
            if r.startswith("| `0")]
    assert len(rows) == len(sorted((ROOT / "notebooks").glob("0*.ipynb")))
    for row in rows:
        number = row[3:5]
        listed = set(re.findall(r"`(0\d_[a-z0-9_]+)`", row.split("|")[3]))
        assert listed == {f for f in FIGURES if f.startswith(number + "_")}, f"notebook {number}: {sorted(listed)}"


def test_the_documents_name_only_files_that_exist():
    """No stale reference: every script named in README.md, BENCHMARKS.md and docs/ (but docs/sources.md, which cites
    other repositories' files) is one of this repository's, and every thesis_lib/… path exists."""
    ours = {p.name for p in ROOT.rglob("*") if p.suffix in (".py", ".sh") and not {".venv", "build"} & set(p.parts)}
    ours |= {"valprep.sh"}        # soumith/imagenetloader.torch's: docs/full_scale.md says where to place it
    pages = [p.relative_to(ROOT).as_posix() for p in sorted((ROOT / "docs").glob("*.md")) if p.name != "sources.md"]
    for doc in ("README.md", "BENCHMARKS.md", *pages):
        text = (ROOT / doc).read_text()
        assert not sorted(set(re.findall(r"\b(\w+\.(?:py|sh))\b", text)) - ours), doc
        assert not [p for p in set(re.findall(r"thesis_lib/[\w/]+\.py", text)) if not (ROOT / p).exists()], doc


def _resolves(dotted: str) -> bool:
    """A dotted name is a module of the package, or an attribute reached from the longest module prefix."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for name in parts[i:]:
            if not hasattr(obj, name):
                return False
            obj = getattr(obj, name)
        return True
    return False


def test_every_dotted_name_of_the_package_resolves():
    """No stale pointer in code, docs, notebooks or Makefile: every ``thesis_lib.a.b`` named anywhere is a module
    or an attribute that exists (a renamed function or a moved module fails here, not in a reader's hands)."""
    skip = {".venv", "build", ".git", "results", "gpu"}        # benchmarks/gpu/: raw outputs, as the code then wrote
    files = [p for p in ROOT.rglob("*") if (p.suffix in (".py", ".md", ".ipynb", ".sh", ".toml", ".yml")
                                            or p.name == "Makefile") and not skip & set(p.relative_to(ROOT).parts)
             and p != Path(__file__)]                         # this file names stale ones on purpose
    named = {(m, p.relative_to(ROOT).as_posix()) for p in files
             for m in re.findall(r"\bthesis_lib(?:\.[A-Za-z_]\w*)+", p.read_text(errors="ignore"))}
    assert len(named) > 100                                   # the pattern finds what it should
    assert not sorted((f, m) for m, f in named if not _resolves(m))
    assert not _resolves("thesis_lib.pipeline") and not _resolves("thesis_lib.models.checkpoints.load_encoders")


def test_loading_never_prepares(tmp_path, monkeypatch):
    """With nothing cached, building a pretrained model, reading the world and loading the demo tokenizer are errors
    that name the preparation step; nothing is generated or trained, the data folder stays empty."""
    from thesis_lib import build_model, get_config
    from thesis_lib.data.roots import data_root
    from thesis_lib.data.tokenizer import demo_tokenizer
    from thesis_lib.errors import CheckpointError, DataError, TokenizerError
    monkeypatch.setenv("THESIS_DATA", str(tmp_path / "data"))
    cfg = get_config("smoke")
    with pytest.raises(CheckpointError, match="thesis_lib.training.prepare"):
        build_model(cfg, pretrained=True)
    with pytest.raises(DataError, match="thesis_lib.training.prepare"):
        data_root(cfg)
    with pytest.raises(TokenizerError, match="thesis_lib.training.prepare"):
        demo_tokenizer(tmp_path, cfg.model.text)
    assert not (tmp_path / "data").exists() or not any((tmp_path / "data").iterdir())


def test_every_notebook_has_cells_nbval_compares_and_no_marker_that_does_nothing():
    """Under ``--nbval-lax`` only ``NBVAL_CHECK_OUTPUT`` cells are compared; ``NBVAL_IGNORE_OUTPUT`` does nothing."""
    import json
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        sources = ["".join(c["source"]) for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
        assert any(s.startswith("# NBVAL_CHECK_OUTPUT") for s in sources), f"{path.name}: no cell is compared"
        assert not any("NBVAL_IGNORE_OUTPUT" in s for s in sources), f"{path.name}: a marker that does nothing"


def test_every_notebook_cell_with_output_is_compared_or_declared_scale_dependent():
    """nbval runs the notebooks at the smoke scale (CI) against outputs committed at the demo scale: a cell whose
    output does not depend on the scale is compared (``# NBVAL_CHECK_OUTPUT``); every other cell with an output says
    so by its ``scale-dependent`` tag, and a compared cell carries no such tag. Nothing is left undecided."""
    import json
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        for i, cell in enumerate(json.loads(path.read_text())["cells"]):
            if cell["cell_type"] != "code" or "parameters" in cell["metadata"].get("tags", []):
                continue
            compared = "".join(cell["source"]).startswith("# NBVAL_CHECK_OUTPUT")
            declared = "scale-dependent" in cell["metadata"].get("tags", [])
            assert not (compared and declared), f"{path.name} cell {i}: compared and tagged scale-dependent"
            assert compared or declared or not cell["outputs"], f"{path.name} cell {i}: neither compared nor tagged"


def test_a_notebook_collected_alone_runs_at_the_smoke_scale():
    """``pytest notebooks/X.ipynb`` alone gets the environment ``make test`` gives the notebooks (root conftest.py):
    with the shell's THESIS_PRESET=demo it would reuse or retrain results/demo and redraw the committed figures."""
    import subprocess
    import sys
    probe = ("import os, pytest; pytest.main(['--collect-only', '-q', '-p', 'no:cacheprovider', "
             "'notebooks/00_notation.ipynb']); print('ENV', os.environ['THESIS_PRESET'])")
    env = dict(os.environ) | {"THESIS_PRESET": "demo"}
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert "ENV smoke" in out.stdout, out.stdout[-2000:] + out.stderr[-2000:]


PAGES_MAY_IMPORT = ("study.claims.read", "study.grids", "study.reference", "study.pages", "metrics", "variants",
                    "paths", "cache", "errors", "config",
                    "notation",                  # notebook 00's drawings of the notation chapter's equations
                    "api",                       # the shipped example pictures the world strip shows
                    "models.representations")    # the sin-cos table whose similarities a notation figure draws
"""What a page may import from thesis_lib: the claims table's reader (``claims/read.py``: the claims table, the
claims stage's other data and every figure's numbers), the chapter's and the library's declarations, the other pages,
and the drawing aids of notebook 00's figures, which compute no statistic; plotting libraries and jinja2 are not
thesis_lib's. No page computes a statistic, a verdict or a table of its own."""
PAGES_STILL_COMPUTING: dict = {}   # the debt: pages that still call the results or claims stages themselves


def test_the_pages_read_the_claims_table_and_compute_nothing():
    """Every page formats what the claims stage gives it (``claims/read.py``); the modules of
    ``PAGES_STILL_COMPUTING`` are the remaining exceptions, each with exactly the imports it still has (a module
    converted, or an import dropped, shrinks the list)."""
    g = graph()
    pages = {m: deps for m, deps in g.items() if m.startswith("study.pages")}
    allowed = lambda d: any(d == a or d.startswith(a + ".") for a in PAGES_MAY_IMPORT)  # noqa: E731
    beyond = {m: {d for d in deps if not allowed(d)} for m, deps in pages.items()}
    assert {m: d for m, d in beyond.items() if d} == PAGES_STILL_COMPUTING
