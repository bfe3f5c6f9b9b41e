"""study/grids.py: the variant groups are declared once. Every group names registered variants; every claim can be
decided from the runs of one notebook; every figure reads variants some notebook trains; and no module or notebook
lists two or more variants again (a literal group outside grids.py fails here)."""
import ast
import json

import pytest

from thesis_lib.metrics import METRICS
from thesis_lib.paths import PACKAGE, ROOT
from thesis_lib.study.pages import figures
from thesis_lib.study import grids, reference
from thesis_lib.variants import VARIANT_SPECS

NAMES = {name: value for name, value in vars(grids).items() if name.isupper() and isinstance(value, str)}
METRIC_GROUPS = {name: value for name, value in vars(grids).items() if name.endswith("_METRICS")}
GROUPS = {name: value for name, value in vars(grids).items()
          if name.isupper() and name not in NAMES and name not in METRIC_GROUPS}
# where a literal of several variant names is not a group: a claim's contrast (two arms) is the claim itself
CONTRASTS = {PACKAGE / "study" / "reference.py"}


def _names(group) -> set:
    if isinstance(group, dict):
        return set().union(*map(_names, group.values()))
    return {v for item in group for v in ((item,) if isinstance(item, str) else item)}


def test_every_group_names_registered_variants():
    assert {"TABLE1", "TABLE2", "DOSE", "NOTEBOOKS", "DUAL"} <= set(GROUPS)
    assert {name: sorted(_names(g) - set(VARIANT_SPECS)) for name, g in GROUPS.items()
            if _names(g) - set(VARIANT_SPECS)} == {}


def test_every_name_is_a_registered_variant_and_every_metric_group_registered_metrics():
    assert {"BASELINE", "TTE_AFTER_LS"} <= set(NAMES) and set(NAMES.values()) <= set(VARIANT_SPECS)
    assert {"FUSION_METRICS", "NOISE_METRICS"} <= set(METRIC_GROUPS)
    assert {name: sorted(set(g) - set(METRICS)) for name, g in METRIC_GROUPS.items() if set(g) - set(METRICS)} == {}


def test_a_variant_is_spelled_only_where_it_is_declared_or_grouped():
    """Outside variants.py and grids.py no module of the package spells a variant of the chapter's tables or its
    controls as a string (a docstring or comment may name one; the baseline is every comparison's control and the
    default of the CLIs, and stays a word)."""
    import re
    spelled = {v for v in grids.CLAIMED if v != grids.BASELINE}
    hits = [f"{p.relative_to(ROOT)}:{i}" for p in sorted(PACKAGE.rglob("*.py"))
            if p.name not in ("variants.py", "grids.py", "rehearsal.py")     # rehearsal.py: its torchrun run (issue 39)
            for i, line in enumerate(p.read_text().splitlines(), 1)
            if any(re.search(rf"[\"']{re.escape(v)}[\"']", line) for v in spelled)]
    assert hits == []


def test_every_claim_is_decided_from_one_notebooks_runs():
    trained = {nb: set(vs) | {"baseline"} for nb, vs in grids.NOTEBOOKS.items()}   # notebook 01's baseline is shared
    for claim in reference.CLAIMS:
        arms = {variant for variant, _ in claim.arms}                  # an arm: (variant, TTE ablation)
        assert any(arms <= runs for runs in trained.values()), claim.text
        assert arms <= set(grids.CLAIMED), claim.text


def test_every_figure_reads_what_some_notebook_trains():
    trained = _names(grids.NOTEBOOKS) | {"baseline"} | set(grids.FUSION)          # 05's fusion_variants ⊂ FUSION
    for name, figure in figures.FIGURES.items():
        assert set(figure.reads.variants) <= trained, name


def _group_name(node) -> str | None:
    """``grids.DOSE``, ``DOSE`` or ``grids.NOTEBOOKS["04"]`` (any subscript of a group) -> the group's name."""
    while isinstance(node, ast.Subscript):
        node = node.value
    name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else None
    return name if name in GROUPS else None


def _literal_groups(source: str) -> list[tuple[int, list[str]]]:
    """(line, members) of every tuple, list or set literal holding two or more variant names or unpacked groups
    (``["baseline", *DOSE]`` lists a group again as surely as writing its names out)."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            members = [e.value for e in node.elts if isinstance(e, ast.Constant) and e.value in VARIANT_SPECS]
            members += [f"*{g}" for e in node.elts if isinstance(e, ast.Starred) and (g := _group_name(e.value))]
            if len(members) >= 2:
                out.append((node.lineno, members))
    return out


def _code_cells(path):
    """A notebook's code cells, but its parameters cell (knobs such as notebook 05's fusion_variants)."""
    for i, cell in enumerate(json.loads(path.read_text())["cells"]):
        if cell["cell_type"] == "code" and "parameters" not in cell["metadata"].get("tags", []):
            yield i, "".join(line for line in cell["source"] if not line.lstrip().startswith(("%", "!")))


def test_no_group_is_listed_again_outside_grids():
    sources = {str(p.relative_to(ROOT)): p.read_text() for p in sorted(PACKAGE.rglob("*.py"))
               if p != PACKAGE / "study" / "grids.py" and p not in CONTRASTS}
    sources |= {f"benchmarks/{p.name}": p.read_text() for p in sorted((ROOT / "benchmarks").glob("*.py"))}
    sources |= {f"{p.relative_to(ROOT)} cell {i}": src for p in sorted((ROOT / "notebooks").glob("*.ipynb"))
                for i, src in _code_cells(p)}
    found = {where: groups for where, src in sources.items() if (groups := _literal_groups(src))}
    assert found == {}


@pytest.mark.parametrize("source, hits", [
    ('VARIANTS = ["baseline", "tte_after", "tte_after_ls"]', 1),        # a group listed again
    ('PAIRS = (("mome", "baseline"),)', 1),                             # a comparison is a group too
    ('one = "tte_after_ls"; curves(params, ["tte_after_ls"])', 0),      # a single variant is a name, not a group
    ('labels = ["baseline", "not a variant"]', 0),
    ('dose = ["baseline", *DOSE]', 1),                                  # a group unpacked into another
    ('arms = ("tte_after", *grids.DOSE)', 1),
    ('both = [*grids.DUAL, *grids.NOTEBOOKS["05"]]', 1),
    ('alone = [*grids.DOSE]; cols = ["seed", *metrics]', 0),            # one group, or not a group
])
def test_the_scan_finds_literal_groups(source, hits):
    assert len(_literal_groups(source)) == hits
