"""The study's full-scale tooling: the recipe of runs, its cost and its launch commands (``recipe``, ``launches``),
the pilot (``pilot``), and the rehearsal of the whole path on tiny files in the real formats (``rehearsal``,
``fixtures``, ``kill_resume``)."""
