import json
import math
import subprocess
import sys

import pytest
import torch

from thesis_lib import ConfigError, ResultConflictError, get_config, run_experiment
from thesis_lib.models.emkum import build_model
from thesis_lib.models.teacher import build_teacher
from thesis_lib.training.engine import compute_loss, make_optimizer, param_groups
from thesis_lib.training.losses import SINGLE
from thesis_lib.training.results import RunPaths
from thesis_lib.training.run import main


@pytest.fixture(scope="module")
def smoke_ls(tmp_path_factory):
    out = tmp_path_factory.mktemp("out")
    return out, run_experiment("smoke", "tte_after_ls", 0, out_dir=out)


def test_end_to_end_result_file(smoke_ls):
    out, result = smoke_ls
    paths = RunPaths(out / "results", "smoke", "tte_after_ls", 0)
    path = paths.result
    stored = json.loads(path.read_text())
    assert stored["metrics"] == result["metrics"] and stored["config"]["model"]["variant"] == "tte_after_ls"
    from thesis_lib import metrics
    keys = {*metrics.TABLE, *metrics.retrieval("coco"), *metrics.retrieval("flickr")}
    assert keys <= set(result["metrics"]) and all(math.isfinite(v) for v in result["metrics"].values())
    ls = result["layerscale"]
    gamma = __import__("numpy").load(path.parent / ls["values_file"])
    assert gamma.shape == (get_config("smoke").model.dim,) and abs(gamma.mean() - ls["mean"]) < 1e-7
    assert ls["init"] == 1e-5 and set(result["tte_contribution"]) == {"image", "text"}
    rows = [json.loads(line) for line in paths.metrics.read_text().splitlines()]
    assert [r["step"] for r in rows][-1] == get_config("smoke").train.steps
    assert all(r["layerscale"]["max"] >= r["layerscale"]["min"] for r in rows)
    assert all(0 <= math.log(r["logit_scale"]) <= math.log(100) + 1e-6 for r in rows)
    assert set(result["tte_ablation"]) == {"removed", "swapped"}                      # notebook 04's ablation
    assert set(result["tte_ablation"]["removed"]) == {"imagenet_top1", "imagenet_top5", "coco_mean", "flickr_mean"}


def test_finished_result_is_reused_and_never_overwritten_by_another_config(smoke_ls):
    out, result = smoke_ls
    path = out / "results" / "smoke" / "tte_after_ls" / "seed0.json"
    stamp = path.stat().st_mtime_ns
    assert run_experiment("smoke", "tte_after_ls", 0, out_dir=out) == result
    assert path.stat().st_mtime_ns == stamp
    with pytest.raises(ResultConflictError, match="another config.*train.steps: 6 -> 7"):
        run_experiment("smoke", "tte_after_ls", 0, out_dir=out, overrides={"train.steps": 7})
    assert path.stat().st_mtime_ns == stamp


def test_no_weight_decay_on_embeddings_norms_tte_and_layerscale():
    model = build_model(get_config("smoke", "tte_after_ls"))
    decay, no_decay = param_groups(model, 0.01)
    names = {id(p): n for n, p in model.named_parameters()}
    skipped = {names[id(p)] for p in no_decay["params"]}
    assert {"token_type_embeddings.weight", "tte_scale.gamma", "logit_scale", "shared.0.ls1.gamma",
            "text_encoder.embed.embed_tokens.weight", "image_encoder.embed.cls_token"} <= skipped
    assert all(p.ndim >= 2 for p in decay["params"]) and decay["weight_decay"] == 0.01


def test_learning_rate_scales_with_the_global_batch():
    cfg = get_config("thesis")
    model = torch.nn.Linear(2, 2)
    opt, _ = make_optimizer(model, cfg.train, world_size=2)
    assert opt.param_groups[0]["initial_lr"] == pytest.approx(2e-4)      # 1e-4 × 512 / 256
    assert opt.defaults["betas"] == (0.9, 0.98) and opt.defaults["eps"] == 1e-6


def test_thesis_preset_trains_a_few_steps_on_cpu():
    cfg = get_config("thesis", "tte_after_ls", overrides={"train.batch_size": 2, "train.steps": 2})
    torch.manual_seed(0)
    model, teacher = build_model(cfg), build_teacher(cfg.teacher, 224)
    opt, sched = make_optimizer(model, cfg.train, 1)
    batch = {"images": torch.randn(2, 3, 224, 224), "teacher_images": torch.randn(2, 3, 224, 224),
             "tokens": torch.randint(4, 50000, (2, 64))}
    for _ in range(2):
        loss, parts = compute_loss(model, model, batch, teacher, cfg.train, SINGLE,
                                   torch.autocast("cpu", enabled=False))
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        assert torch.isfinite(loss) and set(parts) == {"kd", "kd_image", "kd_text", "itc"}


def test_cli_errors_are_one_line(capsys):
    assert main(["--preset", "huge"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["error: unknown preset 'huge'; choose one of thesis, demo, smoke"]
    with pytest.raises(ConfigError):
        main(["--preset", "huge", "--debug"])


def test_cli_runs_as_a_module(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "thesis_lib.training.run", "--preset", "smoke", "--variant",
                           "tte_before", "--out", str(tmp_path), "--no-progress"], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("tte_before seed 0: ImageNet top-1")
    assert (tmp_path / "results" / "smoke" / "tte_before" / "seed0.json").exists()


def test_the_cli_reaches_the_loss_in_four_frames(tmp_path, monkeypatch):
    """``python -m thesis_lib.training.run`` to the loss: main → run_experiment (config, data, model) → train_loop →
    compute_loss (L = L_KD + L_ITC), each a function of the package a reader can open (docs/layout.md)."""
    import inspect

    from thesis_lib.paths import PACKAGE
    from thesis_lib.training import engine
    stacks, real = [], engine.compute_loss

    def recording(*args, **kwargs):
        stacks.append([f.function for f in inspect.stack()[1:] if f.filename.startswith(str(PACKAGE))][::-1])
        return real(*args, **kwargs)

    monkeypatch.setattr(engine, "compute_loss", recording)
    assert main(["--preset", "smoke", "--out", str(tmp_path), "--no-progress", "--set", "train.steps=1"]) == 0
    assert stacks[0] == ["main", "run_experiment", "train_loop"]            # + compute_loss itself: 4 frames


def _strings(obj):
    if isinstance(obj, dict):
        for v in obj.values():
            yield from _strings(v)
    elif isinstance(obj, list):
        yield from (s for v in obj for s in _strings(v))
    elif isinstance(obj, str):
        yield obj


def test_committed_results_hold_no_machine_specific_path():
    from thesis_lib.paths import ROOT
    files = sorted((ROOT / "results").rglob("*.json"))
    assert files, "no committed results found"
    for path in files:
        config = json.loads(path.read_text()).get("config", {})
        absolute = [s for s in _strings(config) if s.startswith(("/", "~")) or ":\\" in s]
        assert not absolute, f"{path} stores machine-specific paths {absolute}: a fresh clone would not reuse it"


def test_symbolic_demo_part_resolves_to_the_demo_pretraining_file():
    from thesis_lib.models.sources import part_source
    cfg = get_config("smoke", overrides={"weights.source": "random", "weights.teacher": "demo"})
    demo = get_config("smoke", overrides={"weights.source": "demo"})
    assert part_source(cfg, "image") == "" and part_source(cfg, "teacher") == part_source(demo, "teacher")
    assert part_source(cfg, "teacher").endswith(".pth")


def test_committed_demo_results_are_runs_of_the_current_demo_config():
    """A committed result made with another config (an older world, a changed default) would be reused by no
    notebook and describe a model the code no longer builds; every chapter variant has every seed of the study."""
    from dataclasses import asdict

    from thesis_lib.paths import ROOT
    from thesis_lib.study import SEEDS
    from thesis_lib.training.results import differences
    from thesis_lib.study.grids import TTE
    seeds = {}
    for path in RunPaths.results(ROOT / "results", "demo"):
        stored = json.loads(path.read_text())
        wanted = asdict(get_config("demo", stored["variant"], stored["seed"]))
        assert not differences(stored["config"], wanted, stored["train"].get("world_size")), path
        seeds.setdefault(stored["variant"], set()).add(stored["seed"])
    assert all(seeds.get(v, set()) >= set(SEEDS) for v in TTE), seeds


def test_fp16_training_scales_the_loss_and_resumes_the_scale(tmp_path):
    """fp16 trains through a GradScaler (its scale is logged and checkpointed); other precisions bypass it."""
    from thesis_lib.training.engine import grad_scaler
    assert grad_scaler("fp16", torch.device("cpu")).is_enabled()
    assert not any(grad_scaler(p, torch.device("cpu")).is_enabled() for p in ("fp32", "bf16", "auto"))
    over = {"train.precision": "fp16", "train.steps": 4, "train.ckpt_every": 2, "train.log_every": 2}
    run_experiment("smoke", "baseline", 0, out_dir=tmp_path, overrides=over)
    run_dir = tmp_path / "results" / "smoke" / "baseline" / "seed0"
    rows = [json.loads(x) for x in (run_dir / "metrics.jsonl").open()]
    assert [r["grad_scale"] for r in rows] and all(r["grad_scale"] > 1 for r in rows)
    state = torch.load(run_dir / "checkpoint.pt", weights_only=False)
    assert state["scaler"]["scale"] == rows[-1]["grad_scale"]
    fp32 = run_experiment("smoke", "baseline", 0, out_dir=tmp_path / "fp32", overrides={"train.steps": 2})
    assert fp32["metrics"] and "grad_scale" not in (tmp_path / "fp32" / "results" / "smoke" / "baseline" / "seed0" /
                                                    "metrics.jsonl").read_text()


def test_a_result_is_found_by_what_it_computes_not_where_its_files_lie():
    from thesis_lib.training.results import identity_differences
    wanted = asdict_config(get_config("smoke", overrides={"data.root": "/data/coco-karpathy",
                                                          "weights.checkpoint_dir": "/ckpt",
                                                          "weights.text": "/ckpt/nlp_base.pt"}))
    moved = json.loads(json.dumps(wanted))
    moved["data"]["root"], moved["weights"]["checkpoint_dir"] = "./data/../data/coco", "/mnt/other"
    moved["weights"]["text"] = "/mnt/other/nlp_base.pt/"
    assert identity_differences(moved, wanted) == []
    moved["weights"]["text"] = "/mnt/other/nlp_base_v2.pt"                       # another file: another run
    assert identity_differences(moved, wanted) == ["weights.text: 'nlp_base_v2.pt' -> 'nlp_base.pt'"]
    half = json.loads(json.dumps(wanted))
    half["train"]["batch_size"] //= 2
    assert identity_differences(half, wanted, stored_world=2, world_size=1) == []    # two processes × half
    assert identity_differences(half, wanted, stored_world=1, world_size=1) == [
        f"global batch (train.batch_size × processes): {half['train']['batch_size']} -> "
        f"{wanted['train']['batch_size']}"]


def asdict_config(cfg):
    from dataclasses import asdict
    return json.loads(json.dumps(asdict(cfg)))


def test_run_experiment_refuses_a_config_together_with_the_names_it_would_ignore(tmp_path):
    """A resolved config names the run: preset, variant, seed or overrides given beside it are an error, not ignored."""
    cfg = get_config("smoke", "tte_after_ls", 2)
    for named in ({"variant": "baseline"}, {"seed": 0}, {"overrides": {"train.steps": 1}}, {"preset": "smoke"}):
        with pytest.raises(ConfigError, match=f"config= and {next(iter(named))}"):
            run_experiment(config=cfg, out_dir=tmp_path, **named)
    assert not any(tmp_path.iterdir())                                  # refused before anything is written


def test_adamw_moves_gamma_by_about_one_learning_rate_per_step_whatever_the_gradient_size():
    """Notebook 04's premise for the ablation: a γ leaving 1e-5 is no evidence of use."""
    from thesis_lib.training.engine import adamw_drift
    drift = adamw_drift(get_config("demo").train, grad_scales=(1e-7, 1e-3, 1.0), steps=50)
    for scale in (1e-3, 1.0):
        assert 0.9 < drift[scale]["over the summed lr"] <= 1.0
    assert drift[1e-3]["mean |Δγ|"] == pytest.approx(drift[1.0]["mean |Δγ|"], rel=0.02)   # 1000× the gradient
    assert drift[1e-7]["over the summed lr"] < 0.2          # below Adam's eps (1e-6) the step shrinks


def test_the_budget_variant_gives_the_tte_the_thesis_summed_learning_rate():
    """tte_after_ls_budget: type vectors and γ in a third AdamW group whose lr × schedule sums to the thesis run's
    (4.46 over 44,632 steps at 2e-4), everything else as in TTE'; the other variants keep two groups."""
    from transformers import get_cosine_schedule_with_warmup

    from thesis_lib.config import THESIS_GLOBAL_BATCH, THESIS_STEPS_RUN
    from thesis_lib.training.engine import make_optimizer, summed_lr, thesis_summed_lr, tte_lr_scale
    t = get_config("demo").train
    p = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([p], lr=1.0)
    sched, total = get_cosine_schedule_with_warmup(opt, int(t.warmup_frac * t.steps), t.steps), 0.0
    for _ in range(t.steps):
        total += opt.param_groups[0]["lr"]
        opt.step()
        sched.step()
    assert summed_lr(t, 256) == pytest.approx(total * t.base_lr, rel=1e-9)        # HF's own schedule, summed
    thesis = get_config("thesis").train
    assert (summed_lr(thesis, THESIS_GLOBAL_BATCH, THESIS_STEPS_RUN) == thesis_summed_lr()
            == pytest.approx(4.4636, abs=1e-3))
    assert tte_lr_scale(thesis, THESIS_GLOBAL_BATCH, thesis_summed_lr()) == pytest.approx(1.0, abs=1e-4)
    assert tte_lr_scale(t, 128, None) is None
    model = build_model(get_config("smoke", "tte_after_ls_budget"))
    opt, _ = make_optimizer(model, get_config("smoke").train, 1, thesis_summed_lr())
    assert len(opt.param_groups) == 3
    names = {id(p): n for n, p in model.named_parameters()}
    assert sorted(names[id(p)] for p in opt.param_groups[2]["params"]) == ["token_type_embeddings.weight",
                                                                            "tte_scale.gamma"]
    scale = tte_lr_scale(get_config("smoke").train, get_config("smoke").train.batch_size, thesis_summed_lr())
    assert opt.param_groups[2]["lr"] == pytest.approx(opt.param_groups[1]["lr"] * scale)
    assert len(make_optimizer(build_model(get_config("smoke", "tte_after_ls")), get_config("smoke").train,
                              1)[0].param_groups) == 2


def test_the_thesis_decay_rule_decays_the_type_vectors_positions_and_cls():
    """train.decay_rule='thesis' (TimCares/MasterThesis@63a7062 Sx3HRe.py:166-173): only 1-D parameters, biases and
    the token table are exempt; ours also exempts every embedding. The two differ on exactly three tensors here."""
    from thesis_lib.training.engine import exempt
    model = build_model(get_config("demo", "tte_after_ls"))
    differ = sorted(n for n, p in model.named_parameters() if exempt(n, p) != exempt(n, p, "thesis"))
    assert differ == ["image_encoder.embed.cls_token", "text_encoder.embed.embed_positions.weight",
                      "token_type_embeddings.weight"]
    opt, _ = make_optimizer(model, get_config("demo", overrides={"train.decay_rule": "thesis"}).train, 1)
    decayed = {id(p) for p in opt.param_groups[0]["params"]}
    assert id(model.token_type_embeddings.weight) in decayed


def test_the_teacher_target_cache_is_keyed_by_the_kernels_that_compute_it():
    """Targets cached by other kernels (a data folder shared with another machine, a GPU run) differ in the last bits
    and would break "the same run on one machine gives the same bits": their key differs."""
    from thesis_lib.training.teacher_targets import _kernels
    assert _kernels(torch.device("cpu")) == f"cpu-{torch.backends.cpu.get_cpu_capability()}"
    assert _kernels(torch.device("meta")) == "meta"
