"""thesis_lib.analysis: the TTE's share along training, the modality probe, analyses on a stored checkpoint."""
import json

import numpy as np
import pytest
import torch

from thesis_lib import get_config, run_experiment
from thesis_lib.analysis import load_trained, modality_probe, tte_contribution
from thesis_lib.models.emkum import build_model
from thesis_lib.training import run as run_module


@pytest.fixture(scope="module")
def smoke_ls(tmp_path_factory):
    out = tmp_path_factory.mktemp("out")
    return out, run_experiment("smoke", "tte_after_ls", 0, out_dir=out)


def _curve(out):
    path = out / "results" / "smoke" / "tte_after_ls" / "seed0" / "metrics.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_the_tte_ratio_is_logged_along_training_and_changes_no_training_number(smoke_ls, tmp_path, monkeypatch):
    out, result = smoke_ls
    rows = _curve(out)
    assert all(set(r["tte_ratio"]) == {"image", "text"} and r["tte_ratio"]["image"] > 0 for r in rows)
    assert rows[-1]["tte_ratio"] == pytest.approx(result["tte_contribution"], rel=1e-5)   # the same inputs at the end
    monkeypatch.setattr(run_module, "tte_monitor", lambda *a: None)                       # the same run, unmonitored
    bare = run_experiment("smoke", "tte_after_ls", 0, out_dir=tmp_path)
    assert bare["metrics"] == result["metrics"]
    assert [{k: v for k, v in r.items() if k != "tte_ratio"} for r in rows] == _curve(tmp_path)


def test_a_stored_checkpoint_gives_the_model_the_run_evaluated(smoke_ls):
    out, result = smoke_ls
    model = load_trained(out / "results" / "smoke" / "tte_after_ls" / "seed0" / "checkpoint.pt")
    gamma = np.load(out / "results" / "smoke" / "tte_after_ls" / "seed0" / "layerscale.npy")
    assert not model.training and np.array_equal(model.tte_scale.gamma.detach().numpy(), gamma)
    assert model.cfg.variant == "tte_after_ls"


def _inputs(cfg, n=24, generator=None):
    g = generator or torch.Generator().manual_seed(0)
    images = torch.rand(n, 3, cfg.image.img_size, cfg.image.img_size, generator=g)
    tokens = torch.randint(4, cfg.text.vocab_size, (n, 10), generator=g)
    tokens[:, 0] = cfg.text.bos_id
    return images, tokens


def test_the_probe_reads_a_modality_that_differs_and_not_one_that_does_not():
    """Two encoders whose outputs differ in one direction: the probe reads it (≈ 100 %). The same encoder output
    for both modalities: nothing to read (≈ 50 %, the balanced chance)."""
    torch.manual_seed(0)
    model = build_model(get_config("smoke", "baseline"))
    images, tokens = _inputs(model.cfg)
    D = model.cfg.dim

    def fake(modality):
        def encoder_outputs(inputs, m, types="own"):
            g = torch.Generator().manual_seed(1 + m)
            h = torch.randn(inputs.shape[0], 10, D, generator=g)
            return h + (8.0 if m == 1 and modality else 0.0) * torch.eye(D)[0], None
        return encoder_outputs

    model.encoder_outputs = fake(True)
    assert modality_probe(model, images, tokens)["accuracy_vector"] > 99
    model.encoder_outputs = fake(False)
    probe = modality_probe(model, images, tokens)
    assert 35 < probe["accuracy_vector"] < 65 and 35 < probe["accuracy_norm"] < 65
    assert probe["tokens_per_modality"] == 12 * 10                     # half the items × 10 tokens, balanced


def test_tte_contribution_is_the_ratio_of_norms():
    model = build_model(get_config("smoke", "tte_after_ls"))
    images, tokens = _inputs(model.cfg)
    ratio = tte_contribution(model, images, tokens)
    h, _ = model.image_encoder(images)
    added = (model.tte_scale.gamma * model.token_type_embeddings.weight[1]).norm()
    assert ratio["image"] == pytest.approx((added / h.norm(dim=-1)).mean().item(), rel=1e-5)
    assert model.training                                                   # the mode it had is restored
    assert tte_contribution(build_model(get_config("smoke", "baseline")), images, tokens) is None
