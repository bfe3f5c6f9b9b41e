"""The study: the chapter's question asked of the library. Which variants each table, notebook and figure compares
(``grids``, declared once), its runs (``runs``: parameters, the grid of variants × seeds), its statistics
(``stats``), the thesis's reported numbers and claims (``reference``), the tables and verdicts (``tables``), notebook
05's comparisons (``mechanisms``), the figures and the README's results block. It sits above the library (``data``,
``models``, ``training``, ``evaluate``) and nothing there imports it, as open_clip keeps its training app apart
from the library.

The notebooks call it as ``study.<name>``: the names below.
"""
from .runs import SEEDS, StudyParams, cpu_workers, expects_learning, run_grid, run_many, run_random_init, run_thesis_regularisation, start, study_params  # noqa: E501
from .results import arm_values, curves, results_frame, runs_of
from .claims.paired import claim_table, claims_frame, difference_frame, family_claims
from .claims.paired import paired_comparison, paired_test
from .claims.verdicts import conclusions, gamma_table, run_sequential, sensitivity, sensitivity_note, shown, thesis_noise, thesis_noise_note  # noqa: E501
from .pages.tables import ablation_table, declared_claims, declared_variants, difference_table, factorial_means
from .pages.tables import precision_table, preconditions, results_table, summary

__all__ = ["SEEDS", "StudyParams", "cpu_workers", "expects_learning", "run_grid", "run_many", "run_random_init",
           "run_thesis_regularisation", "start", "study_params",
           "ablation_table", "arm_values", "claim_table", "claims_frame", "curves", "declared_claims",
           "declared_variants", "difference_frame", "difference_table", "factorial_means", "paired_comparison",
           "paired_test", "precision_table",
           "preconditions", "results_frame", "results_table", "runs_of", "summary", "family_claims", "gamma_table",
           "conclusions", "run_sequential", "sensitivity", "sensitivity_note", "shown", "thesis_noise",
           "thesis_noise_note"]
