"""Every declared term (thesis_lib/study/pages/terms.py) that the generated first screen or a figure's labels use
has an entry in docs/glossary.md."""
import matplotlib.pyplot as plt

from thesis_lib.paths import ROOT
from thesis_lib.study import runs
from thesis_lib.study.pages import figures, terms

GLOSSARY = terms.glossary_entries((ROOT / "docs" / "glossary.md").read_text(encoding="utf-8"))


def test_the_first_screen_uses_only_defined_terms():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    first = "\n".join(readme.splitlines()[:60])
    found = terms.used(first)
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
        found = set(terms.used(text))
        assert found and found <= GLOSSARY, (name, sorted(found - GLOSSARY))


def test_a_term_is_matched_on_word_boundaries():
    assert terms.used("the TTE' helps", ("TTE", "TTE'")) == ["TTE'"]
    assert terms.used("budgets", ("budget",)) == [] and terms.used("a budget", ("budget",)) == ["budget"]
    assert terms.used("a 2 × 2 table", ("2 × 2",)) == ["2 × 2"]
