"""The thesis-scale path of the notebooks, end to end, on tiny real-format fixtures: Karpathy JSONs with JPEGs,
ImageNet-style class folders, checkpoints in the original files' key layouts and GPT-2 tokenizer files. The model is
shrunk to the fixtures' width; everything else is the thesis preset (real loaders, DataLoader workers, the augmented
teacher view, fairseq tokenizer, OpenAI's 80 templates)."""
import json

import numpy as np
import pytest
from checkpoint_fixtures import beitv2_file, d2v_image_file, d2v_text_file, gpt2_tokenizer_files
from PIL import Image

VOCAB = 4 + 261 + 1          # fairseq specials + dict.txt lines of the tiny GPT-2 BPE + <mask>


@pytest.fixture
def thesis_fixtures(tmp_path, tiny_coco, tiny_flickr):
    for label, wnid in enumerate(["n01440764", "n01443537", "n01484850"]):
        for k in range(2):
            folder = tmp_path / "imagenet" / "val" / wnid
            folder.mkdir(parents=True, exist_ok=True)
            rgb = np.random.default_rng(10 * label + k).integers(0, 255, (40, 30, 3), dtype=np.uint8)
            Image.fromarray(rgb).save(folder / f"ILSVRC2012_val_{label:04d}{k}.JPEG")
    (tmp_path / "imagenet" / "classnames.json").write_text(json.dumps({"classnames": ["tench", "goldfish", "shark"]}))
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    d2v_image_file(ckpt / "base_imagenet.pt", D=32, L=4)
    d2v_text_file(ckpt / "nlp_base.pt", D=32, V=VOCAB, M=20, L=3)
    beitv2_file(ckpt / "beitv2_base_patch16_224_pt1k.pth", D=32, L=2)
    gpt2_tokenizer_files(ckpt)
    return tmp_path, ckpt


SHRINK = {"model.dim": 32, "model.num_heads": 2, "model.image.img_size": 32, "model.image.patch_size": 8,
          "model.image_depth": 2, "model.text_depth": 2, "model.text.vocab_size": VOCAB, "model.text.max_len": 16,
          "model.text.max_positions": 20, "model.text.mask_id": VOCAB - 1, "teacher.dim": 32, "teacher.depth": 2,
          "teacher.num_heads": 2, "teacher.patch_size": 8, "train.batch_size": 8, "train.steps": 1,
          "data.num_workers": 2, "eval.batch_size": 16}


def test_notebook_03_runs_at_the_thesis_scale_on_fixtures(thesis_fixtures, tmp_path):
    pm = pytest.importorskip("papermill")
    data, ckpt = thesis_fixtures
    pm.execute_notebook("notebooks/03_tte_layerscale.ipynb", str(tmp_path / "out.ipynb"), kernel_name="python3",
                        progress_bar=False, parameters={"preset": "thesis", "seeds": [0], "data_root": str(data),
                                                        "checkpoints": str(ckpt), "output_dir": str(tmp_path / "o"),
                                                        "overrides": SHRINK})
    for variant in ("baseline", "tte_before", "tte_after", "tte_after_ls"):
        result = json.loads((tmp_path / "o" / "results" / "thesis" / variant / "seed0.json").read_text())
        assert result["train"]["steps"] == 1 and result["config"]["data"]["teacher_view"] == "augmented"
        assert result["config"]["weights"]["checkpoint_dir"] == str(ckpt)
        assert ("tte_contribution" in result) == variant.startswith("tte_after")   # from the files, as in memory
    assert (tmp_path / "o" / "figures" / "thesis" / "03_table2_bars.png").exists()


def test_committed_notebooks_take_their_scale_from_the_environment():
    """A papermill ``injected-parameters`` cell left in a committed notebook would pin its scale, and nbval in CI
    would then run it at that scale instead of THESIS_PRESET=smoke."""
    from thesis_lib.paths import ROOT
    notebooks = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    assert len(notebooks) >= 5
    for path in notebooks:
        tags = [c.get("metadata", {}).get("tags", []) for c in json.loads(path.read_text())["cells"]]
        assert sum("parameters" in t for t in tags) == 1, f"{path.name}: needs exactly one 'parameters' cell"
        assert not any("injected-parameters" in t for t in tags), f"{path.name}: strip the injected parameters"


def test_committed_notebook_outputs_hold_no_machine_specific_path():
    """Warnings that print a file path (a missing ipywidgets, a pandas deprecation) would leak the path of the
    machine that ran the notebook into the repository; their causes are fixed, and this keeps them out."""
    import re

    from thesis_lib.paths import ROOT
    pattern = re.compile(r"(?:^|[\s'\"(])/(?:home|work|tmp|Users|usr|opt|root|var)/[\w.-]+")
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            for out in cell.get("outputs", []):
                text = "".join(out.get("text", "")) + "".join(out.get("data", {}).get("text/plain", ""))
                assert not pattern.search(text), f"{path.name}: an output holds a machine path: {text[:200]!r}"
