"""The study's statistics: confidence intervals, paired tests and the verdict rule (``stats``), the group-sequential
design (``sequential``), the fixed-n designs of Table 2 (``designs``), what the verdicts rest on (``verdicts``) and
what ``make verify`` decides (``verify``)."""
