"""models/check.py: a downloaded checkpoint folder checked before a GPU run (sizes, SHA-256, which release, the
thesis loaders' strict checks, the lock file), on tiny files in the original key layouts."""
import torch

from thesis_lib.fetch import file_sha256 as sha256
from thesis_lib.models.check import KNOWN_SHA256, check_folder, main
from thesis_lib.models.checkpoints import D2V2_TEXT
from thesis_lib.models.lock import LOCK, read_lock
from thesis_lib.full_scale.fixtures import SHRINK, TEXT_VOCAB, checkpoint_folder, d2v_text_file


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


def _check_args(folder, *extra):
    return [str(folder), *(f"--set={k}={v}" for k, v in SHRINK.items()), *extra]


def test_the_first_passing_check_writes_the_lock_file_and_a_changed_byte_is_named(tmp_path, capsys):
    folder = _folder(tmp_path)
    assert main(_check_args(folder)) == 0
    assert f"wrote {folder / LOCK}" in capsys.readouterr().out
    lock = read_lock(folder)
    assert {name: (e["size"], e["sha256"]) for name, e in lock.items()} == \
        {p.name: (p.stat().st_size, sha256(p)) for p in folder.iterdir() if p.name != LOCK}
    assert main(_check_args(folder)) == 0
    assert f"as recorded in {folder / LOCK}" in capsys.readouterr().out
    text = (folder / "dict.txt").read_bytes()
    (folder / "dict.txt").write_bytes(text[:-2] + bytes([text[-2] ^ 1]) + text[-1:])   # one byte: a count's digit
    assert main(_check_args(folder)) == 1
    out = capsys.readouterr().out
    problems = [line for line in out.splitlines() if "changed since checkpoints.lock.json" in line]
    assert len(problems) == 1 and problems[0].startswith("| dict.txt |") and "SHA-256" in problems[0]
    assert main(_check_args(folder, "--no-lock")) == 0                     # the changed file itself is fine
    (folder / "nlp_base.pt").write_bytes((folder / "nlp_base.pt").read_bytes() + b"\0")
    rows = {r.name: r for r in check_folder(folder, SHRINK)}
    assert "changed since checkpoints.lock.json: size" in rows["nlp_base.pt"].problem
    assert read_lock(folder) == lock                                        # a failing check never rewrites it


def test_no_lock_neither_reads_nor_writes_the_lock_file(tmp_path, capsys):
    folder = _folder(tmp_path)
    assert main(_check_args(folder, "--no-lock")) == 0 and not (folder / LOCK).exists()
    (folder / LOCK).write_text("{not json")
    assert main(_check_args(folder, "--no-lock")) == 0
    assert main(_check_args(folder)) == 2 and "is not a lock file" in capsys.readouterr().err


def test_a_fine_tuned_beit_is_refused_as_the_teacher(tmp_path):
    folder = _folder(tmp_path)
    beit = folder / "beitv2_base_patch16_224_pt1k.pth"
    state = torch.load(beit, weights_only=False)
    model = state["model"] if "model" in state else state
    for key in [k for k in model if k.startswith("cls_pt_layers.")]:
        del model[key]
    model["head.weight"] = torch.zeros(10, 32)
    torch.save(state, beit)
    rows = {r.name: r for r in check_folder(folder, SHRINK)}
    assert rows[beit.name].release == "BEiT v2, 2 blocks, fine-tuned (a pt1k_ft* file?)"
    assert "not BEiT v2's self-supervised pretraining file" in rows[beit.name].problem


def test_a_file_the_lock_file_has_no_entry_for_is_a_problem_until_added_on_request(tmp_path, capsys):
    """A lock file without an entry for a file (written by hand, or before the file was added) must not pass that
    file unchecked: replaced by another valid checkpoint, it is named; --add-to-lock records it and says so."""
    import json
    folder = _folder(tmp_path)
    assert main(_check_args(folder)) == 0
    lock = json.loads((folder / LOCK).read_text())
    lock["files"] = [f for f in lock["files"] if f["name"] != "nlp_base.pt"]
    (folder / LOCK).write_text(json.dumps(lock))
    other = tmp_path / "other.pt"                                          # another valid data2vec 2.0 text file
    d2v_text_file(other, D=32, V=TEXT_VOCAB, M=20, L=3, seed=2)
    assert sha256(other) != sha256(folder / "nlp_base.pt")
    (folder / "nlp_base.pt").write_bytes(other.read_bytes())
    capsys.readouterr()
    assert main(_check_args(folder)) == 1
    out = capsys.readouterr().out
    problems = [line for line in out.splitlines() if f"not in {LOCK}" in line]
    assert len(problems) == 1 and problems[0].startswith("| nlp_base.pt |") and "--add-to-lock" in problems[0]
    assert "as recorded in" not in out and "1 problem(s)" in out
    assert "nlp_base.pt" not in read_lock(folder)                          # a failing check never writes it
    assert main(_check_args(folder, "--add-to-lock")) == 0
    out = capsys.readouterr().out
    assert f"added nlp_base.pt to {folder / LOCK} (--add-to-lock)" in out and sha256(folder / "nlp_base.pt") in out
    assert read_lock(folder)["nlp_base.pt"]["sha256"] == sha256(folder / "nlp_base.pt")
    assert {n: e for n, e in read_lock(folder).items() if n != "nlp_base.pt"} == \
        {f["name"]: {**f, "size": int(f["size"])} for f in lock["files"]}   # the other entries as they were
    assert main(_check_args(folder)) == 0
    assert f"every file's size and SHA-256 as recorded in {folder / LOCK}" in capsys.readouterr().out
