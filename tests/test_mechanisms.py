import pandas as pd

from thesis_lib import study
from thesis_lib.study.claims import mechanisms


def test_comparisons_and_summary_tables():
    df = pd.DataFrame({"variant": ["mome"] * 3 + ["baseline"] * 3, "seed": [0, 1, 2] * 2,
                       "imagenet_top1": [12.0, 13.0, 14.0, 10.0, 11.0, 12.0]})
    table = mechanisms.comparisons(df, [("mome", "baseline")], ("imagenet_top1",))
    assert table.loc[0, "difference (95 % CI)"] == "2.00 ± 0.00" and table.loc[0, "verdict"] == "better"
    for column in ("p (unadjusted)", "p (Holm, this table)"):                   # fixed notation (stats.fmt_p)
        assert table[column].str.fullmatch(r"< 0\.001|[01]\.\d{3}").all()
    assert study.summary(df, ["mome"], ("imagenet_top1",)).iloc[0]["seeds"] == 3
