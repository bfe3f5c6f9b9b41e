"""thesis_lib.full_scale.measured: every measured figure README.md, BENCHMARKS.md and docs/*.md quote comes from
benchmarks/measured.json (issue 45). The committed documents are current; a value changed in the data file, a key it
lacks, a hand-edited code block, a figure quoted without a marker and a marker that begins a line each fail, naming
the document; rendering twice changes nothing; the data file agrees with itself where one figure follows from others.
"""
from __future__ import annotations

import copy
import re
import shutil
from pathlib import Path

import pytest

from thesis_lib.paths import ROOT
from thesis_lib.full_scale import measured


@pytest.fixture(scope="module")
def data() -> dict:
    return measured.load()


@pytest.fixture
def copy_root(tmp_path) -> Path:
    """The documents and the data file, copied: a root to change and render."""
    for doc in measured.pages():
        (tmp_path / doc).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / doc, tmp_path / doc)
    (tmp_path / measured.DATA).parent.mkdir(parents=True)
    shutil.copy(ROOT / measured.DATA, tmp_path / measured.DATA)
    return tmp_path


def test_the_committed_documents_are_current():
    """`python -m thesis_lib.full_scale.measured --check` passes: `make figures` renders the documents
    after a data edit."""
    problems = measured.check()
    assert not problems, "\n".join(problems)
    assert measured.main(["--check"]) == 0


def test_the_documents_mark_the_figures_they_quote():
    """The marked figures are there (a document with its markers stripped would pass the check vacuously)."""
    texts = {doc: (ROOT / doc).read_text(encoding="utf-8") for doc in measured.pages()}
    keys = {m.group(1) for text in texts.values() for m in measured.SPAN.finditer(text)}
    keys |= {k for text in texts.values() for m in measured.CODE.finditer(text)
             for k in measured.FIELD.findall(m.group(1))}
    for key in ("make_demo.time", "make_test.time", "make_test.passed", "make_verify.time", "make_reproduce.time",
                "make_rehearsal.time", "make_demo.date", "make_reproduce.runs"):
        assert key in keys, key
    assert len(measured.CODE.findall(texts["README.md"])) == 3


def test_every_measurement_is_quoted_and_every_machine_is_known(data):
    texts = "".join((ROOT / doc).read_text(encoding="utf-8") for doc in measured.pages())
    found = re.findall(r"<!-- m:([\w.-]+) -->|\{\{([\w.-]+)\}\}", texts)
    used = {key.split(".")[0] for pair in found for key in pair if key}
    entries = set(data) - {"about", "machines"}
    assert entries <= used, f"entries no document quotes: {sorted(entries - used)}"
    for name in entries:
        entry = data[name]
        assert {"what", "date", "machine"} <= set(entry), name
        for field, machine in entry.items():
            if (field == "machine" or field.endswith("_machine")) and machine is not None:
                assert machine in data["machines"], f"{name}.{field}: {machine}"


def test_a_changed_value_fails_the_check_naming_the_key_and_every_document(data):
    changed = copy.deepcopy(data)
    changed["make_demo"]["time"] = "9 min 59 s"
    for machine in ("xeon-207", "xeon-167"):
        changed["machines"][machine]["short"] = "2-core Intel Xeon Max"
    problems = measured.check(data=changed)
    assert any(p.startswith("BENCHMARKS.md:") and "make_demo.time" in p and "9 min 59 s" in p for p in problems)
    assert any(p.startswith("README.md:") and "code block" in p and "make_demo.time" in p for p in problems)
    for doc in ("docs/commands.md", "docs/reproducibility.md"):
        assert any(p.startswith(f"{doc}:") and ".machine.short" in p for p in problems), doc
    assert all("make_demo.time" in p or "machine" in p for p in problems), problems


def test_a_key_the_data_file_lacks_fails_and_stops_the_rewrite(data, copy_root):
    lacking = copy.deepcopy(data)
    del lacking["make_verify"]["time"]
    problems = measured.check(data=lacking)
    assert any(p.startswith("docs/commands.md:") and "make_verify.time: no such key" in p for p in problems)
    assert any(p.startswith("README.md:") and "make_verify.time: no such key" in p for p in problems)
    before = (copy_root / "README.md").read_text()
    with pytest.raises(SystemExit, match="make_verify.time"):
        measured.write(copy_root, lacking)
    assert (copy_root / "README.md").read_text() == before


def test_rendering_rewrites_prose_tables_and_code_blocks_and_then_passes(data, copy_root):
    changed = copy.deepcopy(data)
    changed["make_test"]["passed"] = "900"
    changed["make_reproduce"]["date"] = "2027-01-02"
    assert set(measured.write(copy_root, changed)) == {"README.md", "BENCHMARKS.md", "docs/commands.md",
                                                       "docs/reproducibility.md"}
    readme = (copy_root / "README.md").read_text()
    # the code block, from its template
    assert f"install included: 900 passed, {data['make_test']['skipped']} skipped\n" in readme
    assert "<!-- m:make_test.passed -->900<!-- /m --> tests" in (copy_root / "BENCHMARKS.md").read_text()    # prose
    assert "(<!-- m:make_test.passed -->900<!-- /m --> tests +" in (copy_root / "BENCHMARKS.md").read_text()
    commands = (copy_root / "docs/commands.md").read_text()
    assert "<!-- m:make_reproduce.date -->2027-01-02<!-- /m -->" in commands
    assert measured.check(copy_root, changed) == []
    assert measured.write(copy_root, changed) == []                                  # idempotent


def test_a_wrapped_span_keeps_its_line_break_when_rewritten(data):
    date = data["make_verify"]["date"]
    text = f"passed on the committed results, 10 min 53 s on<!-- m:make_verify.date -->\n{date}<!-- /m --> on the\n"
    changed = copy.deepcopy(data)
    changed["make_verify"]["date"] = "2027-01-02"
    new, problems = measured.render(text, changed, "x.md")
    assert new == text.replace(date, "2027-01-02") and len(problems) == 1
    assert measured.render(text.replace(f"\n{date}", date), data)[1] == []          # its words are what counts


@pytest.mark.parametrize("doc", ["README.md", "BENCHMARKS.md", "docs/commands.md", "docs/full_scale.md",
                                 "docs/reproducibility.md"])
def test_render_is_idempotent(doc, data):
    text = (ROOT / doc).read_text(encoding="utf-8")
    once, _ = measured.render(text, data, doc)
    assert once == text
    changed = copy.deepcopy(data)
    changed["make_demo"]["time"], changed["make_reproduce"]["runs"] = "1 h 2 min 3 s", "123"
    once, _ = measured.render(text, changed, doc)
    assert measured.render(once, changed, doc) == (once, [])


def test_a_hand_edited_code_block_fails(data):
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    quoted = f"make verify    # {data['make_verify']['time']} on"
    edited = readme.replace(quoted, "make verify    # 11 min 0 s on", 1)
    assert edited != readme
    problems = measured.render(edited, data, "README.md")[1]
    assert len(problems) == 1 and "not its template's rendering" in problems[0] and "make_verify.time" in problems[0]


def test_a_figure_quoted_without_a_marker_fails_naming_it(copy_root):
    readme = (copy_root / "README.md").read_text()
    added = "A full run took 3 min 12 s (41 passed); the long one 2 h 5 min.\n"
    readme = readme.replace("## Tests\n", "## Tests\n\n" + added)
    (copy_root / "README.md").write_text(readme)
    problems = measured.check(copy_root)
    found = [p for p in problems if "without a marker" in p]
    assert [re.search(r"'([^']+)'", p).group(1) for p in found] == ["3 min 12 s", "41 passed", "2 h 5 min"], problems
    assert all(p.startswith("README.md:") for p in found)
    line = readme[:readme.index("A full run")].count("\n") + 1
    assert found[0].startswith(f"README.md:{line}:")


def test_generated_text_is_neither_scanned_nor_rendered(copy_root):
    """The README's results block and docs/results.md are thesis_lib.study.pages.report's: no marker, no scan."""
    readme = (copy_root / "README.md").read_text()
    start = readme.index("<!-- results:start -->") + len("<!-- results:start -->")
    (copy_root / "README.md").write_text(readme[:start] + "\nit took 3 min 12 s\n" + readme[start:])
    (copy_root / "docs/results.md").write_text("a table quoting 1 h 2 min\n")
    assert measured.check(copy_root) == []
    assert "docs/results.md" not in measured.pages(copy_root)


def test_a_marker_that_begins_a_line_fails(data):
    """A line that begins with an HTML comment ends its paragraph and shows as raw HTML on GitHub."""
    date = data["make_demo"]["date"]
    bad = f"took **10 min 23 s** on\n<!-- m:make_demo.date -->{date}<!-- /m --> on the machine\n"
    problems = measured.render(bad, data, "x.md")[1]
    assert len(problems) == 1 and problems[0].startswith("x.md:2:") and "begins the line" in problems[0]
    assert measured.render("* <!-- m:make_verify.replays -->seven<!-- /m --> replays\n", data)[1]
    good = f"took **10 min 23 s** on<!-- m:make_demo.date -->\n{date}<!-- /m --> on the machine\n"
    assert measured.render(good, data, "x.md")[1] == []


def seconds(text: str) -> int:
    parts = dict((unit, int(n)) for n, unit in re.findall(r"(\d+) (h|min|s)\b", text))
    return 3600 * parts.get("h", 0) + 60 * parts.get("min", 0) + parts.get("s", 0)


def test_the_data_file_agrees_with_itself(data):
    """Where a figure follows from others of the data file, it is what they give."""
    for name, entry in ((n, e) for n, e in data.items() if n not in ("about", "machines")):
        for field, text in (("time", "seconds"), ("pytest_time", "pytest_seconds")):
            if text in entry:
                assert seconds(entry[field]) == entry[text], f"{name}.{field}"
    demo = data["make_demo"]
    assert sum(seconds(demo[k]) for k in ("install_and_notebook", "world_generation", "runs_time")) == demo["seconds"]
    assert seconds(data["make_reproduce"]["time"]) // 60 == seconds(data["make_reproduce"]["time_h_min"]) // 60
    test = data["make_test"]
    assert int(test["passed"]) + int(test["skipped"]) == int(test["collected"])
    assert {"1": "one", "7": "seven"}[test["skipped"]] == test["skipped_words"]
    pin = data["pin_cost"]
    assert f"{float(pin['pinned_ms']) / float(pin['unpinned_ms']):.2f}" == pin["ratio"]
    path = data["data_path"]
    pil, draft = float(path["pil"]), float(path["pil_draft"])
    assert path["ms_per_image"] == f"{round(1000 / draft)}-{round(1000 / pil)}"
    assert path["images_16_cores"] == "-".join(f"{round(float(path[k].replace(',', '')), -2):,.0f}"
                                               for k in ("pil_16_cores", "pil_draft_16_cores"))
    assert f"{float(path['pil_draft_speedup']):.1f}" == path["speedup_rounded"]
    gpu = data["gpu_h100"]
    rate = {k: float(gpu[k]["pairs_per_s"].replace(",", "")) for k in ("eager_256", "eager_512")}
    for k in rate:
        assert f"{rate[k] / 2500:.2f}" == gpu[k]["vs_goal"], k                        # the goal's 2,500 pairs/s
    assert f"{float(gpu['loader']['pairs_per_s']) / rate['eager_256']:.2f}" == gpu["loader"]["ratio"]
    assert int(gpu["demo_run"]["within"]) <= int(gpu["demo_run"]["compared"])
