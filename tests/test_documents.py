"""One value per quantity across the documents (issue 27; fewer, simpler checks since issue 37).

The documents are README.md, BENCHMARKS.md, docs/*.md and the markdown cells of notebooks/*.ipynb. What is generated
needs no check here: the README's results block and docs/results.md are rewritten from results/ by
``python -m thesis_lib.study.report --update-readme``, and tests/test_study.py compares the block with what the
results give, so the block is cut out of the README before any pattern is read and docs/results.md is not read.
What remains is written by hand, and each check below is one of two kinds:

* **quoted twice** (``Check.same``): a measurement (a time, a count, a rate) stated in several places must be the same
  string in each; a disagreement names both places;
* **stated from the code** (``Check.equal``): a number the code or the committed results define (steps, batch, seeds,
  run counts, parameter counts, the smallest effect of interest) must be what they give, or what a stated relation
  between hand-written numbers gives (the mixture's total, the GPU table's runs and hours).

Every pattern must match in its document: a statement reworded or moved fails with "matches nothing" rather than
passing for any text. ``test_each_check_reports_a_perturbed_document`` edits one statement per check and requires
the check to name that document.
"""
from __future__ import annotations

import ast
import json
import math
import re
import statistics
from dataclasses import dataclass
from fnmatch import fnmatch
from functools import lru_cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GENERATED = ("docs/results.md",)                         # written whole by thesis_lib.study.report
BLOCK = re.compile(r"<!-- results:start -->.*?<!-- results:end -->", re.S)
MARKERS = re.compile(r"<!-- m:code\n.*?\n-->\n|<!-- m:[\w.-]+ -->|<!-- /m -->", re.S)   # thesis_lib.study.measured's
NB03, NB04, NB05 = ("notebooks/03_tte_layerscale.ipynb", "notebooks/04_layerscale_weights.ipynb",
                    "notebooks/05_modality_mechanisms.ipynb")


def read_documents(root: Path = ROOT) -> dict[str, str]:
    """{document: text}: the README without its generated block (blank lines keep the line numbers), BENCHMARKS.md,
    every hand-written page of docs/, and each notebook's markdown cells joined by blank lines."""
    pages = [root / "README.md", root / "BENCHMARKS.md", *sorted((root / "docs").glob("*.md"))]
    docs = {p.relative_to(root).as_posix(): p.read_text(encoding="utf-8") for p in pages}
    docs = {name: MARKERS.sub(lambda m: "\n" * m.group(0).count("\n"), text) for name, text in docs.items()
            if name not in GENERATED}
    docs["README.md"] = BLOCK.sub(lambda m: "\n" * m.group(0).count("\n"), docs["README.md"])
    for nb in sorted((root / "notebooks").glob("*.ipynb")):
        cells = json.loads(nb.read_text(encoding="utf-8"))["cells"]
        docs[f"notebooks/{nb.name}"] = "\n\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    return docs


def notebook_code(name: str, root: Path = ROOT) -> list[str]:
    cells = json.loads((root / name).read_text(encoding="utf-8"))["cells"]
    return ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]


def _assignments(source: str) -> dict:
    """Top-level ``NAME = <literal>`` of a piece of Python."""
    out = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                out[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                pass
    return out


def committed_demo_runs() -> list[Path]:
    """Every demo result `make reproduce` trains and commits: results/demo and the baseline's ablations."""
    return [*(ROOT / "results" / "demo").glob("*/seed*.json"),
            *(ROOT / "results" / "_ablations").glob("*/results/demo/*/seed*.json")]


@lru_cache(maxsize=None)
def facts() -> dict:
    """The values the documents must state, from the code and the committed results."""
    import torch

    from thesis_lib import get_config
    from thesis_lib.models.emkum import build_model
    from thesis_lib.models.teacher import build_teacher
    from thesis_lib.study import SEEDS, grids
    from thesis_lib.study.reference import relative_effect
    from thesis_lib.training.engine import resolve_precision

    def count(module):
        return sum(p.numel() for p in module.parameters())

    thesis, demo = get_config("thesis"), get_config("demo")
    with torch.device("meta"):
        emkum = build_model("thesis", "baseline")
        bert = build_model(get_config("thesis", "baseline", overrides={"model.text_encoder": "bert"}))
        teacher = build_teacher(thesis.teacher, thesis.model.image.img_size)
        demo_model = build_model("demo", "baseline")

    # make reproduce's new runs: the union of the notebooks' grids, in the order the notebooks run
    seeds = tuple(SEEDS)
    code = {nb: "\n".join(notebook_code(nb)) for nb in ("notebooks/01_baseline.ipynb", NB03, NB04, NB05,
                                                          "notebooks/02_tte_before_encoders.ipynb")}
    nb05 = _assignments(next(c for c in notebook_code(NB05) if "fusion_variants =" in c))
    assert 'study.run_grid(params, ["baseline"])' in code["notebooks/01_baseline.ipynb"]
    assert "study.run_grid(params, TABLE1)" in code["notebooks/02_tte_before_encoders.ipynb"]
    assert "study.run_grid(params, VARIANTS)" in code[NB03]
    assert 'VARIANTS = grids.NOTEBOOKS["04"]' in code[NB04]
    assert 'VARIANTS = list(grids.NOTEBOOKS["05"]) + list(fusion_variants)' in code[NB05]
    needs = [[(v, s) for v in ("baseline", "random-init baseline") for s in seeds],
             *[[(v, s) for v in grids.NOTEBOOKS[nb] for s in seeds] for nb in ("02", "03", "04")],
             [(v, s) for v in [*grids.NOTEBOOKS["05"], *nb05["fusion_variants"]] for s in nb05["seeds"]]]
    done, new = set(), []
    for runs in needs:
        new.append(len(set(runs) - done))
        done |= set(runs)

    baseline_coco = statistics.mean(
        json.loads((ROOT / "results" / "demo" / "baseline" / f"seed{s}.json").read_text())["metrics"]["coco_mean"]
        for s in seeds)
    rel = relative_effect(("tte_before", "baseline"), "coco_mean")
    assert abs(rel) == abs(relative_effect(("tte_after_ls", "baseline"), "coco_mean"))   # one COCO margin
    return dict(
        emkum=count(emkum), image=count(emkum.image_encoder), text=count(emkum.text_encoder),
        shared=count(emkum.shared), vit_block=count(emkum.image_encoder.blocks.blocks[0]), bert=count(bert),
        bert_text=count(bert.text_encoder), teacher=count(teacher), demo_params=count(demo_model),
        steps=thesis.train.steps, thesis_batch=thesis.train.batch_size, thesis_lr=thesis.train.base_lr,
        warmup=thesis.train.warmup_frac, demo_warmup=demo.train.warmup_frac,
        demo_steps=demo.train.steps, demo_batch=demo.train.batch_size, demo_lr=demo.train.base_lr,
        itm_batch=demo.train.itm_batch, demo_negatives=demo.train.itm_negatives,
        thesis_negatives=thesis.train.itm_negatives,
        teacher_steps=demo.pretrain.teacher_steps, image_steps=demo.pretrain.image_steps,
        rerank_demo=demo.eval.rerank_k, rerank_thesis=thesis.eval.rerank_k, precision=thesis.train.precision,
        thesis_cuda=resolve_precision(thesis.train.precision, torch.device("cuda")),
        demo_cpu=resolve_precision(demo.train.precision, torch.device("cpu")),
        seeds=seeds, nb05_seeds=tuple(nb05["seeds"]), demo_runs=len(grids.TABLE2) * len(seeds),
        reproduce_runs=len(committed_demo_runs()), nb05_new=new[-1], verify_runs=len(grids.VERIFIED),
        rel=rel, baseline_coco=baseline_coco, sesoi=abs(rel) * baseline_coco,
    )


# ---------------------------------------------------------------------------------------------------------------------
# Reading statements

LR = r"(\d+(?:\.\d+)?(?:e-?\d+)?)"   # a learning rate: 3e-3, 1e-4, 0.001
T = r"((?:\d+ h )?\d+ min \d+ s)"    # a wall-clock time
WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10}


def num(text: str):
    """A number as the documents write it: 44,636 / 3e-3 / −0.45 / four / 7{,}087{,}872."""
    t = text.strip().replace("{,}", "").replace(",", "").replace("−", "-").replace("\u202f", "")
    if t.lower() in WORDS:
        return WORDS[t.lower()]
    value = float(t)
    return int(value) if re.fullmatch(r"-?\d+", t) else value


def rx(pattern: str) -> re.Pattern:
    """A regex in which a literal space outside a character class matches any run of whitespace (prose wraps) and
    " ?" any run or none."""
    out, in_class, escaped, skip = [], False, False, False
    for i, ch in enumerate(pattern):
        if skip:
            skip = False
        elif escaped:
            out.append(ch)
            escaped = False
        elif ch == "\\":
            out.append(ch)
            escaped = True
        elif ch in "[]" and in_class == (ch == "]"):
            in_class = ch == "["
            out.append(ch)
        elif ch == " " and not in_class:
            skip = pattern[i + 1:i + 2] == "?"
            out.append(r"\s*" if skip else r"\s+")
        else:
            out.append(ch)
    return re.compile("".join(out))


@dataclass(frozen=True)
class Hit:
    doc: str
    line: int
    text: str
    groups: tuple

    @property
    def where(self) -> str:
        return f"{self.doc}:{self.line}"


def half_up(x: float, digits: int = 0) -> float:
    q = 10 ** digits
    return math.floor(x * q + 0.5) / q


def _same(a, b) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        try:
            return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)
        except (TypeError, ValueError):
            return False
    return a == b


def _show(values) -> str:
    values = tuple(values) if isinstance(values, (tuple, list)) else (values,)
    return repr(values[0]) if len(values) == 1 else repr(values)


def _clip(text: str, width: int = 90) -> str:
    return text if len(text) <= width else text[:width // 2 - 2] + " … " + text[-(width // 2 - 2):]


class Check:
    """The disagreements one check finds in ``docs``."""

    def __init__(self, docs: dict[str, str]):
        self.docs, self.problems = docs, []

    def hits(self, what: str, where: str, pattern: str) -> list[Hit]:
        """Every match of ``pattern`` in the documents ``where`` (a glob); none is a problem."""
        out = []
        for doc, text in self.docs.items():
            if fnmatch(doc, where):
                for m in rx(pattern).finditer(text):
                    out.append(Hit(doc, text.count("\n", 0, m.start()) + 1, " ".join(m.group(0).split()),
                                   tuple(" ".join(g.split()) for g in m.groups())))
        if not out:
            self.problems.append(f"{what}: nothing in {where} matches {pattern!r}; the statement was reworded or "
                                 f"moved, update this check")
        return out

    def equal(self, what: str, want, where: str, pattern: str, parse=num, source: str = "the code") -> list[Hit]:
        """Every match must parse to ``want`` (a tuple for several groups)."""
        found = self.hits(what, where, pattern)
        want = want if isinstance(want, tuple) else (want,)
        for h in found:
            self.expect(what, h, tuple(parse(g) for g in h.groups), want, source)
        return found

    def same(self, what: str, *places: tuple[str, str]) -> list[Hit]:
        """A quantity quoted in several places: every (document glob, pattern) must match, all alike."""
        found = [h for where, pattern in places for h in self.hits(what, where, pattern)]
        first = {}
        for h in found:
            first.setdefault(h.groups, h)
        a, *others = first.values() if first else [None]
        for b in others:
            self.problems.append(f"{what}: {a.where} says {_show(a.groups)} but {b.where} says {_show(b.groups)} "
                                 f"({_clip(a.text)!r} / {_clip(b.text)!r})")
        return found

    def expect(self, what: str, hit: Hit, got, want, source: str) -> None:
        got, want = (got if isinstance(got, tuple) else (got,)), (want if isinstance(want, tuple) else (want,))
        if len(got) != len(want) or not all(_same(a, b) for a, b in zip(got, want)):
            self.problems.append(f"{what}: {hit.where} states {_clip(hit.text)!r} ({_show(got)}), but {source} "
                                 f"gives {_show(want)}")


# ---------------------------------------------------------------------------------------------------------------------
# The checks: each takes the documents and returns the disagreements it found

def check_model_sizes(docs) -> list[str]:
    """Parameter counts against the models built on the meta device: EMKUM (Data2Vec2 text) 132,328,705 = its parts;
    the BERT-text model ≈ 117 M; the teacher ≈ 86 M; a ViT-B block; the demo's model ≈ 0.64 M."""
    f, c = facts(), Check(docs)
    c.equal("EMKUM", f["emkum"], "docs/sources.md", r"(\d{3},\d{3},\d{3}) = image encoder", source="build_model")
    c.equal("EMKUM image encoder", f["image"], "docs/sources.md", r"= image encoder ([\d,]+) \+")
    c.equal("EMKUM text encoder", f["text"], "docs/sources.md", r"\+ text encoder ([\d,]+) \+")
    c.equal("EMKUM shared block", f["shared"], "docs/sources.md", r"\+ shared block ([\d,]+) \+")
    c.equal("image encoder (M)", half_up(f["image"] / 1e6, 1), "docs/sources.md", r"([\d.]+)M image \+")
    c.equal("image encoder (M)", half_up(f["image"] / 1e6, 1), "notebooks/00_*", r"([\d.]+) M, as the thesis reports")
    c.equal("BERT-6 text encoder (M)", half_up(f["bert_text"] / 1e6, 1), "docs/sources.md", r"M image \+ ([\d.]+)M text")
    c.equal("the BERT-text model (M)", half_up(f["bert"] / 1e6), "docs/sources.md",
            r"The final text's model \(BERT-6 text\):[^≈]*≈ (\d+)M")
    c.equal("teacher (M)", half_up(f["teacher"] / 1e6), "docs/sources.md", r"Teacher ≈(\d+)M")
    c.equal("ViT-B block", f["vit_block"], "notebooks/00_*", r"13D = ([\d{},]+)\$ parameters")
    c.equal("demo model (M)", half_up(f["demo_params"] / 1e6, 2), "notebooks/02_*", r"~(\d+\.\d+) M-parameter model")
    return c.problems


def check_thesis_schedule(docs) -> list[str]:
    """The thesis's mixture (COCO + CC3M + CC12M subsets), its steps — 44,636 the schedule was set for (the thesis
    preset's train.steps), 44,632 the 7 epochs ran (7 × ⌊pairs / 512⌋) — and the thesis preset's batch, LR, warm-up."""
    f, c = facts(), Check(docs)
    parts = {}
    for name, label in (("coco", r"COCO Karpathy train ?\+ ?restval"), ("cc3m", r"CC3M subset"),
                        ("cc12m", r"CC12M subset")):
        found = c.same(f"{name} pairs", ("docs/full_scale.md", label + r" \(([\d,]+)\)"),
                       ("docs/sources.md", label + r" \(([\d,]+)(?: pairs)?\)"))
        parts[name] = num(found[0].groups[0]) if found else 0
    total = sum(parts.values())
    c.equal("mixture total", total, "docs/full_scale.md", r"trained on ([\d,]+) pairs", source="its three parts")
    c.equal("mixture total", total, "docs/full_scale.md", r"data: ([\d,]+) / 512", source="its three parts")
    c.equal("mixture total", total, "docs/sources.md", r"= ([\d,]+) pairs \(", source="its three parts")
    c.equal("mixture (M pairs)", half_up(total / 1e6, 1), "notebooks/*", r"(\d\.\d) M (?:image-caption )?pairs",
            source="its three parts")
    c.equal("CC3M subset in the command", parts["cc3m"], "docs/full_scale.md", r"tar@(\d+),wds:\$DATA/cc12m",
            source="the subset size stated")
    c.equal("CC12M subset in the command", parts["cc12m"], "docs/full_scale.md", r"cc12m/\{[\d.]+\}\.tar@(\d+)",
            source="the subset size stated")
    ran, per_epoch = 7 * (total // 512), total // 512
    S, R = "the steps the schedule was set for (thesis train.steps)", "the steps the 7 epochs ran (7 × ⌊pairs / 512⌋)"
    for where, pattern in (("docs/full_scale.md", r"schedule was set for ([\d,]+) steps"),
                           ("docs/full_scale.md", r"`train\.steps` is the ([\d,]+) the thesis's schedule"),
                           ("docs/full_scale.md", r"cosine schedule with 10 % warm-up, ([\d,]+) steps"),
                           ("docs/full_scale.md", r"a run here is ([\d,]+) steps"),
                           ("docs/sources.md", r"([\d,]+) scheduled \("), ("docs/sources.md", r"2e-4 and ([\d,]+) \(§3\)")):
        c.equal(S, f["steps"], where, pattern)
    for where, pattern in (("docs/full_scale.md", r"ended at step ([\d,]+),"),
                           ("docs/full_scale.md", r"for ([\d,]+) × 512 pairs"),
                           ("docs/full_scale.md", r"7 epochs = ([\d,]+) steps run"),
                           ("docs/sources.md", r"7 epochs = ([\d,]+) run"),
                           ("notebooks/04_*", r"trained for ([\d,]+) steps on"),
                           ("notebooks/04_*", r"over the thesis's ([\d,]+) \(peak")):
        c.equal(R, ran, where, pattern, source=f"7 × ⌊{total:,} / 512⌋")
    c.equal("steps per epoch", per_epoch, "docs/full_scale.md", r"/ 512 = ([\d,]+) per epoch", source="pairs / 512")
    for h in c.hits("the thesis config's steps", "docs/sources.md", r"the config's ([\d,]+) steps halved"):
        c.expect(S, h, num(h.groups[0]) // 2, f["steps"], "thesis preset train.steps × 2")
    c.equal("warm-up steps", int(f["warmup"] * f["steps"]), "docs/sources.md", r"\(([\d,]+) warmup\)")
    c.equal("warm-up share", round(100 * f["warmup"]), "docs/full_scale.md", r"cosine schedule with (\d+) % warm-up")
    c.equal("thesis batch per GPU", f["thesis_batch"], "docs/full_scale.md", r"batch (\d+) per GPU")
    c.equal("thesis base LR", f["thesis_lr"], "docs/full_scale.md", r"LR " + LR + r" × global batch ?/ ?256")
    c.equal("thesis base LR", (f["thesis_lr"], f["thesis_lr"] * 2), "docs/sources.md",
            r"LR " + LR + r" × global batch / 256 = " + LR)
    return c.problems


def check_seeds(docs) -> list[str]:
    """The study's seeds are thesis_lib.study.SEEDS; notebook 05 takes its own (its parameter cell), and so does the
    GPU recipe (study/recipe.py); the study before 2026-11-24 ran five (every place that says so agrees)."""
    f, c = facts(), Check(docs)
    n, S = len(f["seeds"]), "the study's seeds (thesis_lib.study.SEEDS)"
    as_list = lambda t: tuple(int(x) for x in t.split(","))  # noqa: E731
    c.equal(S, n, "README.md", r"× (\d) paired seeds,")
    c.equal(S, (f["seeds"],), "docs/commands.md", r"`thesis_lib\.study\.SEEDS`, `\[([\d,\s]+)\]`", parse=as_list)
    c.equal(S, n, "docs/reproducibility.md", r"(\w+) seeds instead of five")
    c.equal(S, n, "docs/decision_rule.md", r"at the study's (\w+) seeds")
    c.equal(S, n, "notebooks/02_*", r"the study's (\w+) seeds")
    c.equal(S, n, "BENCHMARKS.md", r"The study runs (\w+) \(`thesis_lib\.study\.SEEDS`\)")
    c.equal(S, n, "BENCHMARKS.md", r"What (\w+) seeds cost")
    c.equal(S, n, "BENCHMARKS.md", r"Table 2's 2 variants × (\d) seeds")
    c.equal(S, n, "BENCHMARKS.md", r"\d runs \(2 variants × (\d) seeds\): notebook 03")
    c.equal("notebook 05's seeds (its parameter cell)", len(f["nb05_seeds"]), "BENCHMARKS.md", r"notebook 05 (\w+)\. What")
    c.equal("notebook 05's seeds (its parameter cell)", len(f["nb05_seeds"]), "BENCHMARKS.md", r"switch \+ SIB; (\d) seeds\)")
    c.equal(S, (f["seeds"][0], f["seeds"][-1]), "docs/full_scale.md", r"seeds (\d)-(\d) \(`thesis_lib\.study\.SEEDS`\)")
    c.equal("notebook 05's seeds (its parameter cell)", (f["nb05_seeds"][0], f["nb05_seeds"][-1]),
            "docs/full_scale.md", r"SEEDS`\) in notebooks 01-04, (\d)-(\d) in notebook 05")
    c.same("the previous study's seeds", ("docs/reproducibility.md", r"seeds instead of (\w+)"),
           ("BENCHMARKS.md", r"committed (\w+)-seed results"), ("BENCHMARKS.md", r"estimated from (\w+) seeds"))
    return c.problems


def check_demo_schedule(docs) -> list[str]:
    """The demo preset, wherever it is quoted: get_config('demo') (600 steps, batch 128, lr 3e-3, 10 % warm-up,
    ITM on 32 pairs with random negatives, re-ranking the top 10; pretraining teacher 800 / encoders 600 steps),
    the thesis preset's ITM negatives and re-ranking depth, and the precision each preset trains in."""
    f, c = facts(), Check(docs)
    D = "demo train.steps"
    c.equal(D, f["demo_steps"], "README.md", r"paired seeds, (\d+) steps each")
    c.equal(D, f["demo_steps"], "README.md", r"\d+ runs of (\d+) steps \(")
    c.equal(D, f["demo_steps"], "BENCHMARKS.md", r"variants × \d seeds, (\d+) steps, two one-thread runs")
    c.equal(D, f["demo_steps"], "BENCHMARKS.md", r"runs: training \((\d+) steps, one thread")
    c.equal(D, f["demo_steps"], "notebooks/03_*", r"at (\d+) steps the summed learning rate")
    c.equal(D, f["demo_steps"], "notebooks/04_*", r"over the demo's (\d+) steps")
    c.equal(D, f["demo_steps"], "notebooks/05_*", r"for all (\d+) steps")
    c.equal("demo steps × batch at lr", (f["demo_steps"], f["demo_batch"], f["demo_lr"]), "BENCHMARKS.md",
            r"the demo keeps (\d+) steps × batch (\d+) at " + LR)
    c.equal("demo schedule (sweep row)", (f["demo_steps"], f["demo_batch"], f["demo_lr"], round(100 * f["demo_warmup"])),
            "BENCHMARKS.md", r"\| \*\*(\d+)\*\* \| \*\*(\d+)\*\* \| \*\*" + LR + r"\*\* \| \*\*(\d+) %\*\* \|[^\n]*"
            r"the demo's schedule")
    for where in ("BENCHMARKS.md",):
        c.equal("demo pretraining steps", (f["teacher_steps"], f["image_steps"]), where,
                r"teacher (\d+) steps, image and text encoders (\d+) each")
    c.equal("demo ITM pairs (train.itm_batch)", f["itm_batch"], "docs/layout.md", r"ITM uses (\d+) pairs of each batch")
    c.equal("demo ITM pairs (train.itm_batch)", f["itm_batch"], "BENCHMARKS.md", r"ITM on (\d+) pairs per step")
    c.equal("demo ITM negatives", f["demo_negatives"], "docs/layout.md", r"uniformly \(`(\w+)`, the demo's", parse=str)
    c.equal("demo ITM negatives", f["demo_negatives"], "notebooks/05_*", r"at the thesis scale, (\w+) ones at the demo's",
            parse=str)
    c.equal("demo ITM negatives", f["demo_negatives"], "BENCHMARKS.md", r"the demo now draws them at (\w+),", parse=str)
    c.equal("thesis ITM negatives", f["thesis_negatives"], "docs/layout.md", r"`train\.itm_negatives=(\w+)`", parse=str)
    K, KT = "eval.rerank_k at the demo scale", "eval.rerank_k at the thesis scale"
    c.equal(K, f["rerank_demo"], "docs/layout.md", r"re-ranks the top (\d+) \(`eval\.rerank_k`\)")
    c.equal(KT, f["rerank_thesis"], "docs/layout.md", r"the whole batch and the top (\d+)\.")
    c.equal(K + " / " + KT, (f["rerank_thesis"], f["rerank_demo"]), "notebooks/05_*",
            r"`eval\.rerank_k`: (\d+), the demo (\d+)")
    c.equal(K, f["rerank_demo"], "BENCHMARKS.md", r"top-(\d+) re-ranking at the demo scale")
    amp = c.hits("the thesis's own precision", "docs/sources.md", r"(\w+) AMP, no clipping")
    amp = amp[0].groups[0] if amp else None
    c.equal("thesis preset precision on CUDA / the thesis's", (f["thesis_cuda"], amp), "docs/full_scale.md",
            r"(\w+) autocast \(the thesis trained with (\w+) AMP", parse=str, source="resolve_precision / sources §3")
    c.equal("the thesis's own precision", amp, "docs/full_scale.md", r"`--set train\.precision=(\w+)` for the thesis's",
            parse=str, source="docs/sources.md §3")
    c.equal("train.precision and its CUDA value", (f["precision"], f["thesis_cuda"]), "BENCHMARKS.md",
            r'`train\.precision="(\w+)"` = (\w+) only on CUDA', parse=str)
    c.equal("demo precision on CPU", f["demo_cpu"], "BENCHMARKS.md", r"The demo therefore stays (\w+) on CPU", parse=str)
    return c.problems


def check_run_counts(docs) -> list[str]:
    """make demo trains Table 2's variants × SEEDS; make reproduce's new runs are the union of the notebooks' grids;
    notebook 05's own; make verify retrains one run per family (grids.VERIFIED); the GPU
    recipe's runs are its variants × its seeds, its GPU-hours runs × the per-run figures beside them."""
    f, c = facts(), Check(docs)
    M = "make demo's runs (grids.TABLE2 × SEEDS)"
    c.equal(M, f["demo_runs"], "README.md", r"(\d+) runs of \d+ steps \(")
    c.equal(M, f["demo_runs"], "README.md", r"Of its (\d+) results, \d+ equal")
    c.equal(M, f["demo_runs"], "README.md", r"trains its (\d+) runs \(see `make demo`\)")
    c.equal(M, f["demo_runs"], "BENCHMARKS.md", r"(\d+) runs of notebook 03 \(Table 2's")
    c.equal(M, f["demo_runs"], "BENCHMARKS.md", r"of its (\d+) results \d+ equal the committed")
    c.equal(M, f["demo_runs"], "BENCHMARKS.md", r"\| (\d+) runs \(2 variants × \d seeds\): notebook 03")
    R = "make reproduce's runs (the committed demo results)"
    c.equal(R, f["reproduce_runs"], "README.md", r"\*\*1 h 40 min 38 s\*\*, (\d+) runs,")
    c.equal(R, f["reproduce_runs"], "docs/commands.md", r"all six notebooks, (\d+) runs \(")
    c.equal(R, f["reproduce_runs"], "BENCHMARKS.md", r"all six notebooks, (\d+) runs \(")
    c.equal("notebook 05's new runs", f["nb05_new"], "BENCHMARKS.md", r"notebook 05, (\d+) new runs")
    V = "make verify's runs (grids.VERIFIED)"
    for h in c.hits(V, "docs/commands.md", r"of each variant family \(([^)]+)\)"):
        c.expect(V, h, len([w for w in h.groups[0].split(",") if w.strip()]), f["verify_runs"],
                 "thesis_lib/study/grids.py")
    c.equal(V, f["verify_runs"], "README.md", r"one committed demo run of each of (\w+) variant families")
    c.equal(V, f["verify_runs"], "BENCHMARKS.md", r"(\w+) committed seed-0 runs retrained")
    from thesis_lib.study.sequential import TABLE1_PRIMARY
    later = 2 * (TABLE1_PRIMARY.looks[-1] - TABLE1_PRIMARY.looks[0])      # both arms, seeds past the first look
    c.equal("the GPU recipe's runs of Table 1's later looks", later, "docs/full_scale.md", r"counts those (\d+) runs",
            source="study/sequential.py's looks × 2 arms")
    return c.problems


def check_measured_times(docs) -> list[str]:
    """A measurement quoted in more than one place is the same string in each."""
    c = Check(docs)
    c.same("make demo from a fresh clone",
           ("README.md", T + r" in a fresh clone: set up \.venv, train"),
           ("README.md", r"make demo # " + T + ": the main job from scratch"),
           ("README.md", r"in a fresh clone took \*\*" + T + r"\*\*"),
           ("BENCHMARKS.md", r"\*\*main job from scratch\*\*[^\n]*\| \*\*" + T + r"\*\*"))
    c.same("make demo, second call", ("README.md", r"make demo # (\d+ s): the same again"),
           ("BENCHMARKS.md", r"the same command again in that clone[^\n]*\| (\d+ s) \|"))
    c.same("notebook 03 reusing the committed results", ("README.md", r"reuses the committed results and finishes in (\d+ s)"),
           ("BENCHMARKS.md", r"notebook 03 reusing the committed results, empty data folder[^\n]*\| (\d+ s) \|"))
    c.same("make demo: world generation", ("README.md", r"world generation \((\d+ s)\)"),
           ("BENCHMARKS.md", r"\| world generation \(\+ teacher targets\) \| (\d+ s) \|"))
    c.same("make demo: its runs", ("README.md", r"runs of \d+ steps \(" + T + ";"),
           ("BENCHMARKS.md", r"\| all runs \| " + T + r" \(≈"))
    c.same("make test in a fresh clone",
           ("README.md", r"make test # " + T + " in a fresh clone: set up"),
           ("README.md", r"make test # " + T + " in a fresh clone, install included"),
           ("README.md", r"install included, took \*\*" + T + r"\*\*"),
           ("BENCHMARKS.md", r"CI \(`make test`\):[^\n]*\| " + T + r" \(pytest"))
    c.same("make test: pytest's time", ("README.md", r"\(pytest " + T + r": \d+ passed"),
           ("BENCHMARKS.md", r"CI \(`make test`\):[^\n]*\(pytest " + T + r"\)"))
    c.same("make test: the commit timed", ("README.md", r"`time bash \.ci/run` in a fresh clone of (\w+), install"),
           ("BENCHMARKS.md", r"CI \(`make test`\):[^\n]*fresh clone of (\w+),"))
    counts = c.same("make test: passed, skipped", ("README.md", r"(\d+) passed, (\d+) skipped\)"),
                    ("README.md", r"install included: (\d+) passed, (\d+) skipped"),
                    ("BENCHMARKS.md", r"CI \(`make test`\):[^\n]*\((\d+) tests \+ (\d+) skipped\)"))
    if counts:
        passed, skipped = (num(g) for g in counts[0].groups)
        c.equal("make test: tests collected", passed + skipped, "README.md", r"`make test` collects (\d+) tests",
                source=f"{counts[0].where} (passed + skipped)")
        c.equal("make test: tests skipped", skipped, "README.md", r"and skips (\w+) \(", source=counts[0].where)
    c.same("make verify", ("README.md", r"make verify # " + T + " "),
           ("README.md", r"passed on the committed results, " + T),
           ("docs/commands.md", r"passed on the committed results, " + T),
           ("BENCHMARKS.md", r"`make verify` against the committed results[^\n]*\| " + T + r", \*\*passed"))
    c.same("make pretrained", ("docs/commands.md", r"only on purpose, " + T + r"\)"),
           ("BENCHMARKS.md", r"\| `make pretrained`: [^\n]*\| " + T + ";"))
    c.same("make reproduce", ("README.md", r"\(\*\*" + T + r"\*\*, \d+ runs,"),
           ("docs/commands.md", r"touches only X's results; " + T + " on"),
           ("docs/reproducibility.md", r"\(`make reproduce`, " + T + r", \d+ runs,"),
           ("BENCHMARKS.md", r"\| `make reproduce`: all six notebooks[^\n]*\| \*\*" + T + r"\*\* \(190 % CPU"))
    c.same("make rehearsal", ("docs/full_scale.md", r"`make rehearsal` took " + T + r" \(the rehearsal"),
           ("BENCHMARKS.md", r"\| `make rehearsal`:[^\n]*\| " + T + r" \(notebooks"))
    c.same("make rehearsal: its notebooks", ("docs/full_scale.md", r"kill and resume \d+ s, notebooks (\d+ s)\)"),
           ("BENCHMARKS.md", r"\(notebooks (\d+ s), torchrun"))
    c.same("the demo's CPU time budget", ("docs/layout.md", r"to fit the (\d+)-minute CPU budget"),
           ("BENCHMARKS.md", r"The (\d+)-minute budget"))
    # the removed pin's cost on an Intel Xeon: BENCHMARKS.md's table, quoted in docs/reproducibility.md
    table = c.hits("pin cost", "BENCHMARKS.md", r"model 207 \(AVX-512, AMX\), [\d-]+ \| unpinned \| ([\d.]+) \| "
                   r"1\.00 \|\n\| the same \| pinned \| ([\d.]+) \| ([\d.]+) \|")
    if table:
        unpinned, pinned, ratio = (num(g) for g in table[0].groups)
        c.expect("pin cost ratio", table[0], ratio, round(pinned / unpinned, 2), "its ms per step")
        c.equal("pin cost", (pinned, unpinned), "docs/reproducibility.md",
                r"\(([\d.]+) ms pinned against ([\d.]+) ms\s+unpinned", source=table[0].where)
        c.equal("pin cost", ratio, "docs/reproducibility.md", r"cost a demo training step ([\d.]+)×",
                source=table[0].where)
    # the thesis's own run and the GPU goal
    c.same("the thesis's run on 2 × RTX 4090", ("docs/full_scale.md", r"run took ([\d.]+ h) on 2 × RTX 4090"),
           ("notebooks/03_*", r"RTX 4090 for ([\d.]+ h)"))          # the recipe's figures: tests/test_recipe.py
    # the data path: docs/full_scale.md rounds BENCHMARKS.md's table
    pil, draft = (c.hits(f"data path: the {name} row", "BENCHMARKS.md", r"\| " + name + r" \([^|]*\| (\d+) \| "
                         r"([\d.]+)× \| ([\d,]+) \|") for name in ("pil", "pil_draft"))
    if pil and draft:
        pil, draft = pil[0].groups, draft[0].groups
        c.equal("data path: ms per image per core", (half_up(1000 / num(draft[0])), half_up(1000 / num(pil[0]))),
                "docs/full_scale.md", r"views costs (\d+)-(\d+) ms per CPU core", source="BENCHMARKS.md's images/s")
        c.equal("data path: 16 cores", (half_up(num(pil[2]), -2), half_up(num(draft[2]), -2)), "docs/full_scale.md",
                r"16 cores deliver ([\d,]+)-([\d,]+) images/s", source="BENCHMARKS.md (to the hundred)")
        c.equal("data path: pil_draft speed-up", num(draft[1]), "docs/full_scale.md", r"\(([\d.]+) × `pil`\)",
                source="BENCHMARKS.md")
    return c.problems


def check_sesoi(docs) -> list[str]:
    """The smallest effect of interest on COCO: the thesis's relative effect (−0.3 / 66.3) × the demo baseline's mean
    over SEEDS in results/demo (the rule of docs/decision_rule.md)."""
    f, c = facts(), Check(docs)
    sesoi, base, rel = f"{f['sesoi']:.3f}", f"{f['baseline_coco']:.2f}", f"{abs(f['rel']) * 100:.2f}"
    W, src = "smallest effect of interest on COCO", "reference.relative_effect × results/demo's baseline over SEEDS"
    c.equal(W + " / the baseline it is carried to", (sesoi, base), "docs/decision_rule.md",
            r"becomes ±(0\.\d+) points on a demo baseline of ([\d.]+);", parse=str, source=src)
    c.equal(W + " / the baseline it is carried to", (sesoi, base), "docs/decision_rule.md",
            r"becomes ±(0\.\d+) on a demo baseline of ([\d.]+)\)", parse=str, source=src)
    c.equal(W, sesoi, "BENCHMARKS.md", r"smallest effect of interest \(±(0\.\d+) on COCO\)", parse=str, source=src)
    c.equal("the thesis's relative effect (%)", rel, "docs/decision_rule.md", r"(\d\.\d\d) % becomes", parse=str,
            source="reference.relative_effect (−0.3 / 66.3)")
    return c.problems


CHECKS = {f.__name__[len("check_"):]: f for f in (
    check_model_sizes, check_thesis_schedule, check_seeds, check_demo_schedule, check_run_counts,
    check_measured_times, check_sesoi)}


@pytest.fixture(scope="module")
def documents():
    return read_documents()


@pytest.mark.parametrize("name", CHECKS)
def test_documents_agree(name, documents):
    problems = CHECKS[name](documents)
    assert not problems, "\n".join(problems)


# One edit per check (and more for the measurements): the check must report the edited document.
PERTURBATIONS = [
    ("model_sizes", "docs/sources.md", "132,328,705 = image", "132,328,706 = image"),
    ("model_sizes", "notebooks/02_tte_before_encoders.ipynb", "~0.64 M-parameter", "~1.64 M-parameter"),
    ("thesis_schedule", "docs/sources.md", "7 epochs = 44,632 run", "7 epochs = 44,636 run"),
    ("thesis_schedule", "docs/full_scale.md", "schedule was set for 44,636 steps", "schedule was set for 44,632 steps"),
    ("thesis_schedule", "docs/full_scale.md", "CC3M subset (1,516,133)", "CC3M subset (1,516,134)"),
    ("thesis_schedule", "notebooks/04_layerscale_weights.ipynb", "over the thesis's 44,632", "over the thesis's 44,636"),
    ("seeds", "README.md", "× 4 paired seeds,", "× 5 paired seeds,"),
    ("seeds", "notebooks/02_tte_before_encoders.ipynb", "At the study's four seeds", "At the study's five seeds"),
    ("seeds", "BENCHMARKS.md", "notebook 05 three.", "notebook 05 four."),
    ("seeds", "docs/full_scale.md", "0-2 in notebook 05", "0-3 in notebook 05"),
    ("demo_schedule", "BENCHMARKS.md", "the demo keeps 600 steps × batch 128 at 3e-3",
     "the demo keeps 600 steps × batch 128 at 1e-3"),
    ("demo_schedule", "README.md", "600 steps each", "500 steps each"),
    ("demo_schedule", "docs/layout.md", "re-ranks the top 10", "re-ranks the top 16"),
    ("demo_schedule", "docs/full_scale.md", "bf16 autocast (the thesis trained with fp16 AMP",
     "fp16 autocast (the thesis trained with fp16 AMP"),
    ("run_counts", "BENCHMARKS.md", "all six notebooks, 97 runs (", "all six notebooks, 53 runs ("),
    ("run_counts", "README.md", "trains its 8 runs", "trains its 20 runs"),
    ("run_counts", "docs/full_scale.md", "counts those 40 runs", "counts those 20 runs"),
    ("measured_times", "README.md", "**10 min 23 s** on 2026-11-25", "**10 min 24 s** on 2026-11-25"),
    ("measured_times", "docs/commands.md", "passed on the committed results, 10 min 53 s",
     "passed on the committed results, 13 min 59 s"),
    ("measured_times", "BENCHMARKS.md", "| 12 min 22 s (pytest 10 min 22 s) |", "| 12 min 22 s (pytest 10 min 23 s) |"),
    ("measured_times", "docs/reproducibility.md", "(208.5 ms pinned against", "(208.4 ms pinned against"),
    ("measured_times", "docs/full_scale.md", "kill and resume 32 s, notebooks 59 s)", "kill and resume 32 s, notebooks 58 s)"),
    ("measured_times", "docs/full_scale.md", "run took 6.9 h on 2 × RTX 4090", "run took 7.9 h on 2 × RTX 4090"),
    ("sesoi", "docs/decision_rule.md", "becomes ±0.076 points", "becomes ±0.077 points"),
    ("sesoi", "BENCHMARKS.md", "(±0.076 on COCO)", "(±0.08 on COCO)"),
]


def perturb(docs: dict[str, str], doc: str, old: str, new: str) -> dict[str, str]:
    text = docs[doc]
    assert " ".join(text.split()).count(" ".join(old.split())) == 1, f"{doc}: {old!r} is not there exactly once"
    pattern = r"\s+".join(map(re.escape, old.split()))
    return {**docs, doc: re.sub(pattern, lambda _: new, text, count=1)}


def test_every_check_has_a_perturbation():
    assert set(CHECKS) == {name for name, *_ in PERTURBATIONS}


@pytest.mark.parametrize("name, doc, old, new", PERTURBATIONS,
                         ids=[f"{p[0]}:{p[1]}:{p[2][:30]}" for p in PERTURBATIONS])
def test_each_check_reports_a_perturbed_document(name, doc, old, new, documents):
    before, after = CHECKS[name](documents), CHECKS[name](perturb(documents, doc, old, new))
    assert not before and after, f"{name} did not notice {old!r} -> {new!r} in {doc}"
    assert any(doc in p for p in after), f"{name} reported the edit without naming {doc}: {after}"


def test_a_measurement_that_differs_names_both_places(documents):
    """The issue's example: a README that quotes another `make demo` time than BENCHMARKS.md."""
    problems = check_measured_times(perturb(documents, "README.md", "**10 min 23 s** on 2026-11-25", "**8 min 59 s** on 2026-11-25"))
    assert any("README.md:" in p and "8 min 59 s" in p and "10 min 23 s" in p for p in problems), problems


def test_a_statement_that_is_gone_fails_loudly(documents):
    """A pattern that matches nothing is a failure, not a pass: reword the layout page's rerank sentence."""
    layout = documents["docs/layout.md"].replace("re-ranks the top 10 (`eval.rerank_k`)", "re-ranks a few candidates")
    problems = check_demo_schedule({**documents, "docs/layout.md": layout})
    assert any("nothing in docs/layout.md matches" in p for p in problems), problems


def test_generated_text_is_not_read(documents):
    """The README's results block and docs/results.md are generated: no pattern reads them, so none can pin them."""
    assert "<!-- results:start -->" in (ROOT / "README.md").read_text()
    assert "Where this scale disagrees" not in documents["README.md"]
    assert not any(name in documents for name in GENERATED)
    assert documents["README.md"].count("\n") == (ROOT / "README.md").read_text().count("\n")


def test_checks_read_what_the_code_says():
    """The values the checks compare with, as the code states them today (a change here is a change to the docs)."""
    f = facts()
    assert f["emkum"] == 132_328_705 and half_up(f["bert"] / 1e6) == 117
    assert (f["steps"], f["demo_steps"], f["demo_batch"], f["demo_lr"]) == (44_636, 600, 128, 3e-3)
    assert (f["rerank_demo"], f["rerank_thesis"], f["thesis_cuda"], f["demo_cpu"]) == (10, 16, "bf16", "fp32")
    assert len(f["seeds"]) == 4 and f["demo_runs"] == 8 and f["verify_runs"] == 7
