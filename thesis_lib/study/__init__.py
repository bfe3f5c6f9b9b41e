"""The study: the chapter's question asked of the library. Which variants each table, notebook and figure compares
(``grids``, declared once), its runs (``runs``: parameters, the grid of variants × seeds), its statistics
(``stats``), the thesis's reported numbers and claims (``reference``), the tables and verdicts (``tables``), notebook
05's comparisons (``mechanisms``), the figures and the README's results block. It sits above the library (``data``,
``models``, ``training``, ``evaluate``) and nothing there imports it, as open_clip keeps its training app apart
from the library.

The notebooks call it as ``study.<name>``: the names imported below.
"""
from .runs import (SEEDS, expects_learning, run_grid, run_many, run_random_init, run_thesis_regularisation, start,
                   study_params)
from .results import results_frame
from .claims.paired import claim_table, claims_frame, family_claims, paired_comparison
from .claims.verdicts import (conclusions, gamma_table, run_sequential, sensitivity, shown, thesis_noise,
                              thesis_noise_note)
from .pages.tables import (ablation_table, declared_claims, declared_variants, difference_table, factorial_means,
                           precision_table, preconditions, results_table, summary)
