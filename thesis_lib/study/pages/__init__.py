"""The study's reporting: result files turned into the tables (``tables``, ``table2``, ``mechanisms``), the figures
(``figures`` by name, drawn by ``plotting`` and ``forest``), the README's first screen and results block (``answer``,
``report``) and the measured figures the documents quote (``measured``)."""
