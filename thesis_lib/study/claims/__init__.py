"""The study's statistics: confidence intervals, paired tests and the verdict rule (``stats``), the group-sequential
design (``sequential``), the fixed-n designs of Table 2 (``designs``), two models' agreement item by item and the
standard error of their paired difference (``item_agreement``), what the verdicts rest on (``verdicts``) and what
``make verify`` decides (``verify``)."""
