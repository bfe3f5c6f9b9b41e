"""models/check.py: a downloaded checkpoint folder checked before a GPU run (sizes, SHA-256, which release, the
thesis loaders' strict checks), on tiny files in the original key layouts."""
import torch

from thesis_lib.models.check import KNOWN_SHA256, check_folder, main, sha256
from thesis_lib.models.checkpoints import D2V2_TEXT
from thesis_lib.study.fixtures import SHRINK, checkpoint_folder


def _folder(tmp_path):
    return checkpoint_folder(tmp_path)


def test_a_complete_folder_is_described_hashed_and_accepted(tmp_path):
    rows = {r.name: r for r in check_folder(_folder(tmp_path), SHRINK)}
    assert not [r.problem for r in rows.values() if r.problem]
    assert rows["base_imagenet.pt"].release == "data2vec 2.0 image, 0 prenet + 4 blocks, EMA yes"
    assert rows["nlp_base.pt"].release == "data2vec 2.0 text, 3 blocks"
    assert rows["beitv2_base_patch16_224_pt1k.pth"].release == "BEiT v2, 2 blocks, pretraining (pt1k)"
    assert rows["nlp_base.pt"].sha256 == sha256(tmp_path / "nlp_base.pt") and len(rows["nlp_base.pt"].sha256) == 64
    assert rows["encoder.json"].release == "not OpenAI's GPT-2 file"          # the fixtures' BPE is a tiny one
    assert len(KNOWN_SHA256["vocab.bpe"]) == 64


def test_the_data2vec_1_text_release_is_recognised_and_refused(tmp_path, capsys):
    folder = _folder(tmp_path)
    torch.save({"model": {"encoder.sentence_encoder.embed_tokens.weight": torch.zeros(8, 4)}}, folder / "nlp_base.pt")
    assert main([str(folder)]) == 1
    out = capsys.readouterr().out
    assert "is the data2vec 1.0 text model" in out and D2V2_TEXT in out and "1 problem(s)" in out


def test_missing_files_are_named_and_a_loader_refusal_is_reported(tmp_path, capsys):
    folder = _folder(tmp_path)
    (folder / "dict.txt").unlink()
    assert [r.name for r in check_folder(folder, SHRINK) if r.problem] == ["dict.txt"]
    (folder / "dict.txt").write_text("")
    rows = check_folder(folder)                       # the thesis preset's full width: the shapes do not fit
    assert any(r.name.startswith("(thesis loader") and r.problem for r in rows)
