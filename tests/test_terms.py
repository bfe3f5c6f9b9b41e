"""Every term the generated first screen, docs/results.md or a figure's labels use has an entry in docs/glossary.md: a
lint of the documents. In the documents the candidates are found in the text itself (``candidates``); in the
figures, the declared terms below are matched as written, case-sensitive, on word boundaries."""
import re

import matplotlib.pyplot as plt
import pytest

from thesis_lib.paths import ROOT
from thesis_lib.study import runs
from thesis_lib.study.pages import figures

TERMS = (
    # the model and the chapter's question
    "EMKUM", "TTE", "TTE'", "LayerScale", "γ", "KD", "ITC", "shared block", "input LayerNorm",
    # how long and how hard it trains
    "summed learning rate", "learning-rate budget", "budget", "dose", "long schedule", "600 steps",
    "share of the shared block's input",
    # how a claim is decided
    "paired", "seed", "fresh seeds", "margin", "smallest effect of interest", "carried to this scale", "2 × 2",
    "main effect", "Holm", "TOST", "95 % interval", "90 % interval",
    # the verdict words (stats.WORDS) and the ratio a reproduced effect carries
    "equivalent", "trivial", "undecided", "reproduced", "in direction", "contradicted", "confirmed", "refuted",
    "better", "worse", "descriptive", "pending",
)


def used(text: str, terms=TERMS) -> list[str]:
    """The terms of ``terms`` that ``text`` uses."""
    def pattern(term: str) -> str:
        left = r"(?<![\w'])" if term[0].isalnum() else ""
        right = r"(?![\w'])" if term[-1].isalnum() or term[-1] == "'" else ""
        return left + re.escape(term) + right
    return [t for t in terms if re.search(pattern(t), text)]


def glossary_entries(markdown: str) -> set[str]:
    """The terms docs/glossary.md defines: each entry's bold head (``* **term** — …``), split on " / " and ", "."""
    heads = re.findall(r"^\* \*\*(.+?)\*\*", markdown, re.M)
    return {part.strip() for head in heads for part in re.split(r" / |, ", head)}


GLOSSARY = glossary_entries((ROOT / "docs" / "glossary.md").read_text(encoding="utf-8"))


PLAIN = {"Scale", "README"}   # words the documents use as plain English, not terms


def candidates(markdown: str) -> set[str]:
    """The terms a rendered document uses, found in its text (code, link targets and comments left out):
    abbreviations and names with two capitals (TTE, LayerScale, BEiTv2), Greek letters, primed names (TTE'), names
    with digits (Data2Vec2, R@1) and italic phrases of up to three words."""
    text = re.sub(r"`[^`]*`|<!--.*?-->|!\[[^\]]*\]", " ", markdown, flags=re.S)
    text = re.sub(r"\]\([^)]*\)", "]", text)
    found = set(re.findall(r"(?<![\w/.])[A-Za-z]*[A-Z][a-z0-9]*[A-Z]\w*(?:'(?!\w))?", text))
    found |= set(re.findall(r"[α-ωΑ-Ω]", text))
    found |= set(re.findall(r"(?<![\w.,])[A-Za-z]+\d[\w@]*|\b[A-Za-z]+@\d+", text))
    found |= {m.strip() for m in re.findall(r"(?<!\*)\*([^*\n]{1,40})\*(?!\*)", text) if len(m.split()) <= 3}
    return {re.sub(r"@\d+$", "@K", t) for t in found} - PLAIN


def test_candidates_are_found_in_the_text_not_in_a_list():
    found = candidates("A *new term* beside TTE', BEiTv2, R@5, γ and `code_name`, in [a link](docs/x.md).")
    assert found == {"new term", "TTE'", "BEiTv2", "R@K", "γ"}


@pytest.mark.parametrize("document", ["README first screen", "docs/results.md"])
def test_every_term_a_document_uses_is_defined(document):
    """The README's first screen (title to the first section) and docs/results.md use no undefined term: a new
    abbreviation, Greek letter, primed name or italic term fails here until docs/glossary.md defines it."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    text = readme[:readme.index("\n## ")] if document.startswith("README") else \
        (ROOT / document).read_text(encoding="utf-8")
    found = candidates(text)
    assert found and found <= GLOSSARY | {t.rstrip("'") for t in GLOSSARY}, sorted(found - GLOSSARY)


def test_the_headline_and_dose_figures_use_only_defined_terms():
    params = runs.study_params("demo", need_data=False)
    for name in ("headline", "04_effect_vs_dose"):
        fig = figures.FIGURES[name].build(params, figures.FIGURES[name].reads.variants)
        text = "\n".join(t.get_text() for t in fig.findobj(plt.Text))
        legend = fig.legends[0] if fig.legends else None
        if legend is not None:
            text += "\n".join(t.get_text() for t in legend.get_texts())
        plt.close(fig)
        found = set(used(text))
        assert found and found <= GLOSSARY, (name, sorted(found - GLOSSARY))


def test_a_term_is_matched_on_word_boundaries():
    assert used("the TTE' helps", ("TTE", "TTE'")) == ["TTE'"]
    assert used("budgets", ("budget",)) == [] and used("a budget", ("budget",)) == ["budget"]
    assert used("a 2 × 2 table", ("2 × 2",)) == ["2 × 2"]
