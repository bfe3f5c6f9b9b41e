"""Every declared term that the generated first screen or a figure's labels use has an entry in docs/glossary.md: a
lint of the documents (the terms are declared here, as the test's data). A term is matched as written,
case-sensitive, on word boundaries where it begins or ends with a letter."""
import re

import matplotlib.pyplot as plt

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


def test_the_first_screen_uses_only_defined_terms():
    """The README's first screen (generated) uses the terms a reader asked about, and each has a glossary entry."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    first = "\n".join(readme.splitlines()[:60])
    found = used(first)
    assert {"TTE'", "summed learning rate", "dose", "undecided"} <= set(found)     # the words a reader asked about
    assert set(found) <= GLOSSARY, sorted(set(found) - GLOSSARY)


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
