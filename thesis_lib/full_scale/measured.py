"""Every measured figure the documents quote, from one data file: ``benchmarks/measured.json``.

``python -m thesis_lib.full_scale.measured`` rewrites each marked figure of README.md, BENCHMARKS.md and docs/*.md from
the data file (``make figures`` runs it). ``--check`` changes nothing and exits 1 listing every marked figure that
differs from the data file or names a key it lacks, every marker that begins a line, and every measured-looking figure
left unmarked (a time such as ``12 min 22 s`` or ``1 h 40 min``, a count such as ``832 passed`` or ``833 tests``).

The data file holds one entry per measurement (``make_demo``, ``make_test``, …: its values as the documents quote
them, ``seconds`` where useful, its date, machine, command and commit) and a ``machines`` table. A key is a dotted
path into it (``make_demo.time``, ``machines.xeon-207.name``); a field ``machine`` (or ``…_machine``) leads into the
machines table: ``make_demo.machine.short`` is the short name of the machine ``make_demo`` ran on.

Markers are HTML comments, invisible on GitHub in prose and table cells: ``<!-- m:make_demo.time -->10 min 23 s<!--
/m -->``. A span may wrap across lines; it is current when its words are the value's (its line breaks are kept). A
line that begins with ``<!--`` ends its paragraph and shows as raw HTML, so a figure that begins a line has its
opening marker at the end of the line before. In a fenced code block a comment would show: a block that quotes
figures is rendered whole from a template in a comment just above its fence, each figure written ``{{key}}``::

    <!-- m:code
    make demo    # {{make_demo.time}}: the main job from scratch
    -->
    ```bash
    make demo    # 10 min 23 s: the main job from scratch
    ```

Edit the template, not the block. Neither read nor written: the README's generated results block and docs/results.md
(thesis_lib.study.pages.report writes them).
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from thesis_lib.paths import ROOT

DATA = Path("benchmarks") / "measured.json"
GENERATED = ("docs/results.md",)
SPAN = re.compile(r"<!-- m:([\w.-]+) -->(.*?)<!-- /m -->", re.S)
CODE = re.compile(r"<!-- m:code\n(.*?)\n-->\n(```[^\n]*\n)(.*?)(?=^```)", re.S | re.M)
FIELD = re.compile(r"\{\{([\w.-]+)\}\}")
RESULTS_BLOCK = re.compile(r"<!-- results:start -->.*?<!-- results:end -->", re.S)
LINE_START = re.compile(r"^[ \t]*(?:[*+>-][ \t]+|\d+[.)][ \t]+)*<!-- (?:m:(?!code\n)|/m -->)", re.M)
UNMARKED = re.compile(r"\b\d+\s+h\s+\d+\s+min(?:\s+\d+\s+s)?\b|\b\d+\s+min\s+\d+\s+s\b"
                      r"|\b\d+\s+(?:passed|skipped|tests)\b")


def load(path: Path | None = None) -> dict:
    return json.loads((path or ROOT / DATA).read_text(encoding="utf-8"))


def value(data: dict, key: str) -> str | None:
    """The text of ``key`` in the data file, or None where it holds no such key."""
    node = data
    for part in key.split("."):
        if not isinstance(node, dict) or node.get(part) is None:
            return None
        machine = part == "machine" or part.endswith("_machine")
        node = data["machines"].get(node[part]) if machine and isinstance(node[part], str) else node[part]
    return None if node is None or isinstance(node, (dict, list)) else str(node)


def pages(root: Path = ROOT) -> list[str]:
    """The documents that quote measurements: README.md, BENCHMARKS.md, docs/*.md but the generated page."""
    docs = [p.relative_to(root).as_posix() for p in sorted((root / "docs").glob("*.md"))]
    return ["README.md", "BENCHMARKS.md", *(d for d in docs if d not in GENERATED)]


def _line(text: str, at: int) -> int:
    return text.count("\n", 0, at) + 1


def render(text: str, data: dict, doc: str = "") -> tuple[str, list[str]]:
    """``text`` with every marked span and templated code block rendered from ``data``, and what was not current:
    each span or block that differed, each key the data file lacks, each marker that begins a line."""
    problems = []

    def get(key: str, at: int) -> str | None:
        found = value(data, key)
        if found is None:
            problems.append(f"{doc}:{_line(text, at)}: {key}: no such key in the data file ({DATA})")
        return found

    def span(m: re.Match) -> str:
        key, old = m.group(1), m.group(2)
        new = get(key, m.start())
        if new is None or old.split() == new.split():
            return m.group(0)
        problems.append(f"{doc}:{_line(text, m.start())}: {key}: the document says {' '.join(old.split())!r}, "
                        f"the data file {new!r}")
        lead, trail = old[:len(old) - len(old.lstrip())], old[len(old.rstrip()):]
        return f"<!-- m:{key} -->{lead}{new}{trail}<!-- /m -->"

    def block(m: re.Match) -> str:
        template, old = m.group(1), m.group(3)
        values = {k: get(k, m.start()) for k in FIELD.findall(template)}
        if None in values.values():
            return m.group(0)
        new = FIELD.sub(lambda f: values[f.group(1)], template) + "\n"
        if new != old:
            problems.append(f"{doc}:{_line(text, m.start(3))}: the code block is not its template's rendering "
                            f"({', '.join(values)}): edit the template above it, then render")
        return m.group(0)[:m.start(3) - m.start()] + new

    problems += [f"{doc}:{_line(text, m.start())}: a marker begins the line (it would show as raw HTML): put it at "
                 f"the end of the line before" for m in LINE_START.finditer(text)]
    text = CODE.sub(block, text)
    return SPAN.sub(span, text), problems


def unmarked(text: str, doc: str = "") -> list[str]:
    """Every measured-looking figure outside a marker, a templated code block and the README's generated block."""
    for pattern in (RESULTS_BLOCK, CODE, SPAN):
        text = pattern.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)      # blanked: the lines stay
    return [f"{doc}:{_line(text, m.start())}: {' '.join(m.group(0).split())!r} is quoted without a marker: put the "
            f"measurement in {DATA} and mark it" for m in UNMARKED.finditer(text)]


def check(root: Path = ROOT, data: dict | None = None) -> list[str]:
    """What is not current in the documents under ``root`` against ``data`` (default: the data file there)."""
    data = load(root / DATA) if data is None else data
    problems = []
    for doc in pages(root):
        text = (root / doc).read_text(encoding="utf-8")
        problems += render(text, data, doc)[1] + unmarked(text, doc)
    return problems


def write(root: Path = ROOT, data: dict | None = None) -> list[str]:
    """Render every document under ``root`` in place; the documents rewritten. A key the data file lacks stops it."""
    data = load(root / DATA) if data is None else data
    return rewrite(root, pages(root), lambda text, doc: render(text, data, doc), "no such key")


def rewrite(root: Path, docs, render_doc, fatal: str) -> list[str]:
    """Each of ``docs`` under ``root`` rendered by ``render_doc(text, doc)`` (→ text, problems) and written where it
    changed; the documents rewritten. A problem containing ``fatal`` stops it before anything is written."""
    rendered = {doc: render_doc((root / doc).read_text(encoding="utf-8"), doc) for doc in docs}
    stops = [p for _, problems in rendered.values() for p in problems if fatal in p]
    if stops:
        raise SystemExit("\n".join(stops))
    changed = [doc for doc, (text, _) in rendered.items() if text != (root / doc).read_text(encoding="utf-8")]
    for doc in changed:
        (root / doc).write_text(rendered[doc][0], encoding="utf-8")
    return changed


def command(argv, prog: str, description: str, check, write, current: str, source: str) -> int:
    """A renderer's command line: ``--check`` prints ``check()``'s problems (or ``current``) and exits 1 on any;
    without it, ``write()`` renders the documents in place and each one rewritten is named with its ``source``."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 listing what is not current")
    if parser.parse_args(argv).check:
        problems = check()
        print("\n".join(problems) or current)
        return 1 if problems else 0
    for doc in write():
        print(f"rewritten from {source}: {doc}")
    return 0


def main(argv: list[str] | None = None) -> int:
    return command(argv, "python -m thesis_lib.full_scale.measured", __doc__.split("\n")[0], check, write,
                   f"every measured figure the documents quote is current with {DATA}", str(DATA))


if __name__ == "__main__":
    sys.exit(main())
