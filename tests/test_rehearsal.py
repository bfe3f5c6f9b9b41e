"""study/rehearsal.py: the full-scale path in miniature, on tiny real-format files the repository writes (Karpathy
JSONs with JPEGs, ImageNet class folders, two webdataset shard sets with broken samples, the checkpoints in their
original key layouts, GPT-2 tokenizer files), at the thesis preset with the model shrunk. CI runs its core: the
checkpoint check, a 2-process torchrun training (gloo) on the COCO + shards mixture, and notebook 03, which must reuse
the torchrun run; `make rehearsal` runs all six notebooks, the figures and the report (README: time measured)."""
import json

import pytest

from thesis_lib.study import rehearsal
from thesis_lib.study.grids import TABLE2


def test_the_rehearsal_core_trains_with_torchrun_and_notebook_03_reuses_the_run(tmp_path, capsys):
    pytest.importorskip("papermill")
    out = tmp_path / "r"
    assert rehearsal.main(["--out", str(out), "--notebooks", "03_tte_layerscale", "--seeds", "0"]) == 0
    printed = capsys.readouterr().out
    assert "torchrun: tte_after_ls seed 0 on 2 processes, reused by notebook 03" in printed
    assert "2 shard sets, 10 broken samples counted and skipped" in printed
    folder = out / "runs" / "results" / "thesis"
    for variant in TABLE2:                                  # what notebook 03 trains
        result = json.loads((folder / variant / "seed0.json").read_text())
        assert result["train"]["steps"] == 1 and result["config"]["data"]["teacher_view"] == "augmented"
        assert result["config"]["weights"]["checkpoint_dir"] == str(out / "CKPT")
        assert ("tte_contribution" in result) == variant.startswith("tte_after")   # from the files, as in memory
        assert (result["train"]["world_size"] == 2) == (variant == "tte_after_ls")
    assert (out / "runs" / "figures" / "thesis" / "03_table2_bars.png").exists()


def test_a_bad_notebook_name_is_refused(tmp_path):
    with pytest.raises(SystemExit):
        rehearsal.main(["--out", str(tmp_path), "--notebooks", "07_nothing"])
