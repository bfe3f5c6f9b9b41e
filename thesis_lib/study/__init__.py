"""The study: the chapter's question asked of the library, in four stages, each importing only those before it
(docs/layout.md): the runs (``runs``: parameters, the grid of variants × seeds, the designs' runners), the results
(``results``: the result files as one table), the claims (``claims``: paired tests, verdicts, designs) and the pages
(``pages``: tables, figures, the README's block). ``grids`` (which variants each table compares) and ``reference``
(the thesis's numbers and claims) are declared once beside them. It sits above the library (``data``, ``models``,
``training``, ``evaluation``) and nothing there imports it, as open_clip keeps its training app apart from the library.

The notebooks call it as ``study.<name>``: the names imported below.
"""
from .runs import (SEEDS, expects_learning, run_grid, run_many, run_random_init, run_thesis_regularisation, start,
                   study_params)
from .results import results_frame
from .claims.paired import claim_table, claims_frame, family_claims, paired_comparison
from .claims.verdicts import (conclusion_rows, gamma_table, run_sequential, sensitivity, shown, thesis_noise,
                              thesis_noise_counts)
from .pages import sentences
from .claims.tables import (ablation_table, declared_claims, declared_variants, difference_table, factorial_means,
                           precision_table, preconditions, results_table, summary)


def conclusions(df, family: str) -> list[str]:
    """One line per claim of ``family`` on the results frame ``df``: claim, verdict, difference, seeds."""
    return sentences.conclusions(conclusion_rows(df, family))


def thesis_noise_note(table) -> str:
    """What one run per variant could show, from ``thesis_noise``'s table."""
    return sentences.thesis_noise_note(thesis_noise_counts(table) if len(table) else None)
