"""The committed notebooks: one parameters cell each, no injected scale, no machine path in their outputs. (The
thesis-scale path of the notebooks runs in tests/test_rehearsal.py.)"""
import json
import types


def test_committed_notebooks_take_their_scale_from_the_environment():
    """A papermill ``injected-parameters`` cell left in a committed notebook would pin its scale, and nbval in CI
    would then run it at that scale instead of THESIS_PRESET=smoke."""
    from thesis_lib.paths import ROOT
    notebooks = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    assert len(notebooks) >= 5
    for path in notebooks:
        tags = [c.get("metadata", {}).get("tags", []) for c in json.loads(path.read_text())["cells"]]
        assert sum("parameters" in t for t in tags) == 1, f"{path.name}: needs exactly one 'parameters' cell"
        assert not any("injected-parameters" in t for t in tags), f"{path.name}: strip the injected parameters"


def test_committed_notebook_outputs_hold_no_machine_specific_path():
    """Warnings that print a file path (a missing ipywidgets, a pandas deprecation) would leak the path of the
    machine that ran the notebook into the repository; their causes are fixed, and this keeps them out."""
    import re

    from thesis_lib.paths import ROOT
    pattern = re.compile(r"(?:^|[\s'\"(])/(?:home|work|tmp|Users|usr|opt|root|var)/[\w.-]+")
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            for out in cell.get("outputs", []):
                text = "".join(out.get("text", "")) + "".join(out.get("data", {}).get("text/plain", ""))
                assert not pattern.search(text), f"{path.name}: an output holds a machine path: {text[:200]!r}"


def test_every_parameters_cell_takes_its_defaults_from_the_one_declaration(monkeypatch):
    """Each notebook's parameters cell, run, defines the declared parameters (study.runs.Parameters) with the
    notebook's declared defaults (its seeds, the preset from THESIS_PRESET) and nothing else but notebook 05's
    fusion variants (study.grids.FUSION_TRAINED) and notebook 03's regime (its first, study.grids.TABLE2_REGIMES);
    papermill finds each of them in the cell (it warns of a parameter it cannot find, and the cell's names are what
    `papermill --help-notebook` lists)."""
    from papermill.translators import PythonTranslator

    from thesis_lib.paths import ROOT
    from thesis_lib.study import grids, runs
    monkeypatch.setenv("THESIS_PRESET", "smoke")
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        cell = next(c for c in json.loads(path.read_text())["cells"] if "parameters" in c["metadata"].get("tags", []))
        namespace = {}
        exec("".join(cell["source"]), namespace)
        defined = {k: v for k, v in namespace.items() if not k.startswith("_") and not callable(v)
                   and not isinstance(v, types.ModuleType)}
        extra = {"05": {"fusion_variants": list(grids.FUSION_TRAINED)},
                 "03": {"regime": next(iter(grids.TABLE2_REGIMES))}}.get(path.name[:2], {})
        assert defined == {**runs.defaults(path.stem)._asdict(), **extra}, path.name
        assert defined["preset"] == "smoke" and tuple(defined["seeds"]) == runs.seeds_of(path.name)
        found = {p.name for p in PythonTranslator.inspect({"source": "".join(cell["source"])})
                 if not p.name.startswith("_")}
        assert found == set(defined), path.name
