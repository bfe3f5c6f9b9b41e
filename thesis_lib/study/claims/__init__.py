"""Stage 3 of the study, the claims and the statistics they call: confidence intervals, paired tests and the verdict
rule (``stats``), the group-sequential design (``sequential``), the fixed-n designs of Table 2 (``designs``), the
claims' paired rows (``paired``), what the verdicts rest on (``verdicts``) and what ``make verify`` decides
(``verify``). Two models' agreement item by item is measured where the runs are evaluated
(``study.runs.item_agreement``)."""
