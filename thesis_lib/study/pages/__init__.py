"""Stage 4 of the study, the pages: tables (``tables``, ``table2``, ``mechanisms``, ``beside``), figures (``figures`` by
name, drawn by ``plotting``, ``forest``, ``headline``, ``gamma`` and ``dose``), the notebooks' conclusions
(``conclusion``) and the README's first screen and results block (``answer``, ``report``). The measured figures the
documents quote are a lab's records: ``full_scale.measured``."""
