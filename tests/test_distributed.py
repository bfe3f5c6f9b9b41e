"""thesis_lib.training.distributed under several CPU processes (gloo): ranks stay in sync, the fusion heads included.
(The gathered contrastive loss equals the one-process loss: tests/test_losses.py.)"""
import json
import os
import re
import socket
import subprocess
import sys

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from thesis_lib import CheckpointError, ResultConflictError, ThesisError, run_experiment
from thesis_lib.errors import DistributedError
from thesis_lib.training.distributed import (DistInfo, Launch, check_in_sync, first_host, launch_from_env, slurm_port,
                                            sum_over_ranks)

LAUNCH_VARIABLES = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "SLURM_", "TORCHELASTIC_")


def _exiting(rank, worker, *args):
    """Run ``worker(rank, *args)`` in a spawned process, then leave it at once (``os._exit``): gloo's connection
    threads, torn down by the interpreter's exit while the other rank is leaving too, can abort the process
    ("terminate called without an active exception") after the work is done and written. An exception still fails."""
    worker(rank, *args)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def clean_env(**extra) -> dict:
    """This environment without any launcher's variables (torchrun's, Slurm's), plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(LAUNCH_VARIABLES)}
    return {**env, "OMP_NUM_THREADS": "1", **{k: str(v) for k, v in extra.items()}}


def free_slurm_job_id() -> int:
    """A SLURM_JOB_ID whose derived port (slurm_port) is free on this machine now."""
    for job in range(4242, 4242 + 200):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", slurm_port(str(job))))
                return job
            except OSError:
                continue
    pytest.skip("no free port in the range slurm_port derives")


def _sync_worker(rank, world, init_file, out_dir, diverge):
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.Linear(2, 2))
    if diverge and rank == 1:
        with torch.no_grad():
            model[1].bias[0] += 1e-6
    try:
        check_in_sync(model, DistInfo(rank, world))
        message = ""
    except ThesisError as err:
        message = str(err)
    (out_dir / f"rank{rank}.txt").write_text(message)
    dist.destroy_process_group()


@pytest.mark.parametrize("diverge", [False, True])
def test_check_in_sync_names_the_parameter_that_differs_on_every_rank(tmp_path, diverge):
    mp.spawn(_exiting, args=(_sync_worker, 2, str(tmp_path / "init"), tmp_path, diverge), nprocs=2, join=True)
    messages = [(tmp_path / f"rank{r}.txt").read_text() for r in range(2)]
    if not diverge:
        assert messages == ["", ""]
    else:
        for m in messages:                          # every rank raises, so none waits on the others
            assert "1.bias" in m and "weight" not in m and "0." not in m


def _sum_worker(rank, world, init_file, out_dir):
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    total = sum_over_ranks(DistInfo(rank, world), [0, 1][rank], "replaced samples")   # one met by rank 1 alone
    (out_dir / f"rank{rank}.txt").write_text(str(total))
    dist.destroy_process_group()


def test_what_each_process_counts_is_summed_over_the_processes(tmp_path):
    """A training image that fails to decode is met by one rank's loader; the result (written by rank 0) counts it."""
    mp.spawn(_exiting, args=(_sum_worker, 2, str(tmp_path / "init"), tmp_path), nprocs=2, join=True)
    assert [(tmp_path / f"rank{r}.txt").read_text() for r in range(2)] == ["1", "1"]
    assert sum_over_ranks(DistInfo(), 3, "anything") == 3


def test_torchrun_trains_a_fusion_variant_in_sync_and_records_the_processes(tmp_path):
    """Two gloo processes train switch + SIB (the fusion head is called outside the DDP wrapper); the run ends
    only if every parameter is equal on both ranks; the result records 2 processes. A one-process call with the
    same global batch reuses it (notebooks 03/04 after a torchrun training), one with another global batch refuses
    it. Its checkpoint is continued by one process with the same global batch (the data are the same:
    tests/test_global_batch.py); with another global batch it is refused with the setting that would keep it."""
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
           "-m", "thesis_lib.training.run", "--preset", "smoke", "--variant", "switch_sib", "--out", str(tmp_path),
           "--no-progress"]
    run = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"},
                         timeout=600, check=False)
    assert run.returncode == 0, run.stderr[-2000:]
    result = json.loads((tmp_path / "results" / "smoke" / "switch_sib" / "seed0.json").read_text())
    assert result["train"]["world_size"] == 2 and "fusion" in result
    with pytest.raises(ResultConflictError, match=r"global batch \(train.batch_size × processes\): 32 -> 16"):
        run_experiment("smoke", "switch_sib", 0, out_dir=tmp_path)
    reused = run_experiment("smoke", "switch_sib", 0, out_dir=tmp_path, overrides={"train.batch_size": 32})
    assert reused["metrics"] == result["metrics"] and reused["train"]["world_size"] == 2
    checkpoint = tmp_path / "results" / "smoke" / "switch_sib" / "seed0" / "checkpoint.pt"
    with pytest.raises(CheckpointError, match=r"global batch \(train.batch_size × processes\): 32 -> 16 \(to continue "
                                              r"this checkpoint keep its global batch: --set train.batch_size=32 on 1 "
                                              r"process\)"):
        run_experiment("smoke", "switch_sib", 0, out_dir=tmp_path / "one", resume=str(checkpoint))
    resumed = run_experiment("smoke", "switch_sib", 0, out_dir=tmp_path / "one", resume=str(checkpoint),
                             overrides={"train.batch_size": 32})
    assert resumed["train"]["resumed_from"] == 6 and resumed["train"]["world_size"] == 1
    assert resumed["metrics"] == result["metrics"]


def test_a_checkpoint_is_continued_on_another_number_of_processes_with_the_same_global_batch():
    from thesis_lib.training.results import resume_differences
    wanted = json.loads(json.dumps(__import__("dataclasses").asdict(__import__("thesis_lib").get_config("smoke"))))
    half = json.loads(json.dumps(wanted))
    half["train"]["batch_size"] //= 2                                      # 2 × 8 = 1 × 16
    assert resume_differences(half, wanted, stored_world=2, world_size=1) == []
    assert resume_differences(wanted, half, stored_world=1, world_size=2) == []
    assert resume_differences(wanted, wanted, stored_world=1, world_size=2) == [
        "global batch (train.batch_size × processes): 16 -> 32 (to continue this checkpoint keep its global batch: "
        "--set train.batch_size=8 on 2 processes)"]
    assert "a number of processes that divides 16" in resume_differences(wanted, wanted, 1, 3)[0]
    other = json.loads(json.dumps(wanted))
    other["train"]["base_lr"] *= 2
    assert [d.split(":")[0] for d in resume_differences(other, wanted)] == ["train.base_lr"]


def test_each_torchrun_process_takes_its_own_gpu_before_the_nccl_group(monkeypatch):
    """Without a GPU: torch.cuda.set_device and the process group are mocked and their call order recorded. The group
    gets the configured timeout; beside NCCL's, a gloo group (same timeout) holds the waits."""
    from thesis_lib.training import distributed
    calls = []
    monkeypatch.setenv("RANK", "3")
    monkeypatch.setenv("WORLD_SIZE", "4")
    monkeypatch.setenv("LOCAL_RANK", "1")
    monkeypatch.setenv("THESIS_DIST_TIMEOUT", "90m")
    monkeypatch.setattr(distributed, "_WAIT_GROUP", None)
    monkeypatch.setattr(torch.cuda, "set_device", lambda i: calls.append(("set_device", i)))
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 4)
    backend = []
    monkeypatch.setattr(dist, "is_initialized", lambda: False)
    monkeypatch.setattr(dist, "init_process_group",
                        lambda b, timeout: calls.append(("init", b, timeout.total_seconds())) or backend.append(b))
    monkeypatch.setattr(dist, "get_backend", lambda: backend[-1])
    monkeypatch.setattr(dist, "new_group", lambda backend, timeout: calls.append(("group", backend)) or "waits")
    monkeypatch.setattr(dist, "get_rank", lambda: 3)
    monkeypatch.setattr(dist, "get_world_size", lambda: 4)
    info = distributed.init_distributed(torch.device("cuda"))
    assert calls == [("set_device", 1), ("init", "nccl", 5400.0), ("group", "gloo")]
    assert info == DistInfo(3, 4, 1) and info.group == "waits" and info.timeout_s == 5400
    assert distributed.rank_device(torch.device("cuda"), info) == torch.device("cuda", 1)
    calls.clear()
    info = distributed.init_distributed(torch.device("cpu"), timeout=120)
    assert info == DistInfo(3, 4, 1) and calls == [("init", "gloo", 120.0)] and info.group is None
    assert distributed.rank_device(torch.device("cpu"), info) == torch.device("cpu")


def test_the_process_group_timeout_is_read_from_the_option_or_the_environment(monkeypatch):
    from thesis_lib.errors import ConfigError
    from thesis_lib.training.distributed import DEFAULT_TIMEOUT, dist_timeout
    monkeypatch.delenv("THESIS_DIST_TIMEOUT", raising=False)
    assert dist_timeout() == DEFAULT_TIMEOUT == 6 * 3600
    monkeypatch.setenv("THESIS_DIST_TIMEOUT", "2h")
    assert dist_timeout() == 7200 and dist_timeout("45m") == 2700 and dist_timeout(30) == 30
    for bad in ("soon", "0", "-5m"):
        with pytest.raises(ConfigError, match="--dist-timeout"):
            dist_timeout(bad)


def _slow_cache_worker(rank, world, port, tmp, timeout):
    """A rank of a torchrun-style gloo group building a teacher-target cache of one image (one batch: rank 1's
    part) slowly (4 s)."""
    import time
    from types import SimpleNamespace
    from thesis_lib import get_config
    from thesis_lib.training.distributed import init_distributed
    from thesis_lib.training.teacher_targets import teacher_targets
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank), MASTER_ADDR="127.0.0.1",
                      MASTER_PORT=str(port), THESIS_DATA=str(tmp / "data"))
    if timeout is None:
        os.environ.pop("THESIS_DIST_TIMEOUT", None)
    else:
        os.environ["THESIS_DIST_TIMEOUT"] = timeout
    cfg = get_config("smoke", "baseline", 0, {"weights.source": "random"})
    assert cfg.data.teacher_view == "fixed" and cfg.train.cache_teacher

    def teacher(x):
        time.sleep(4)
        return torch.zeros(len(x), 8)
    pairs = SimpleNamespace(image_files=[tmp / "a.png"],
                            teacher_view_images=lambda bs, start, stop: [torch.zeros(stop - start, 3, 4, 4)])
    try:
        info = init_distributed(torch.device("cpu"))
        targets = teacher_targets(cfg, teacher, pairs, "cpu", info)
        message = f"ok {tuple(targets.shape)}"
    except ThesisError as err:
        message = f"{type(err).__name__}: {err}"
    (tmp / f"rank{rank}.txt").write_text(message)


@pytest.mark.parametrize("timeout", ["2", None])
def test_a_wait_longer_than_the_timeout_is_an_error_that_names_it(tmp_path, timeout):
    """Rank 1 builds the only batch of the teacher-target cache (4 s) while rank 0, with no part, waits. With a 2 s
    timeout both processes stop with an error (rank 0: it waited for the cache past the timeout; rank 1: the other
    process left), not a hang; with the default timeout (6 h) both get the targets."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.spawn(_exiting, args=(_slow_cache_worker, 2, port, tmp_path, timeout), nprocs=2, join=True)
    messages = [(tmp_path / f"rank{r}.txt").read_text() for r in range(2)]
    if timeout is None:
        assert messages == ["ok (1, 8)", "ok (1, 8)"]
    else:
        assert re.match(r"DistributedTimeoutError: rank 0 waited 2(\.\d+)? s for the other processes to build the "
                        r"teacher-target cache in parts, longer than the process-group timeout \(2 s\)",
                        messages[0]), messages[0]
        assert "--dist-timeout or THESIS_DIST_TIMEOUT (default 6 h)" in messages[0]
        assert messages[1].startswith("DistributedError: rank 1: another process left"), messages[1]


def _cache_setup(shard):
    """A fixed-view teacher-target cache to build: 10 training images (the 8th does not decode: a NaN row), eval
    batches of 3 (4 batches, the last short), a random teacher of the same weights in every process."""
    from thesis_lib import get_config
    from thesis_lib.data.tokenizer import CaptionTokenizer
    from thesis_lib.data.train_pairs import TrainPairs
    from thesis_lib.models.sources import load_teacher
    cfg = get_config("thesis", overrides={
        "data.train_sets": f"wds:{shard}", "data.root": str(shard.parent), "data.num_workers": 0,
        "data.teacher_view": "fixed", "weights.source": "random", "eval.batch_size": 3, "train.batch_size": 2,
        "model.image.img_size": 32, "model.image.patch_size": 8, "model.dim": 32, "model.num_heads": 2,
        "teacher.dim": 32, "teacher.depth": 2, "teacher.num_heads": 2, "teacher.patch_size": 8})
    tok = CaptionTokenizer(lambda caps: [[5 + ord(c) % 40 for c in cap] for cap in caps], 64, 0, 2, 1, 3, 16, "chars")
    torch.manual_seed(0)
    return cfg, TrainPairs.of(cfg, tok, shard.parent), load_teacher(cfg).eval()


def _write_cache_shard(tmp):
    from thesis_lib.full_scale.fixtures import jpeg_bytes, write_shard
    samples = {f"{k:04d}": {"jpg": jpeg_bytes(k, (48, 64)), "txt": f"caption {k}"} for k in range(10)}
    samples["0007"]["jpg"] = jpeg_bytes(7, (48, 64))[:20] + bytes(range(256)) * 4 + b"\xff\xd9"   # decodes not
    write_shard(tmp / "00000.tar", samples)
    return tmp / "00000.tar"


class _Counted:
    """A teacher that counts the images it is given."""

    def __init__(self, teacher):
        self.teacher, self.images = teacher, 0

    def __call__(self, x):
        self.images += len(x)
        return self.teacher(x)


def _bits(x: torch.Tensor) -> torch.Tensor:
    return x.view(torch.int32)                      # NaN rows compare equal bit for bit (torch.equal: NaN != NaN)


def _parts_worker(rank, port, tmp, lagging):
    """Both ranks ask for the cache (built in parts unless it exists), then again (reused); with ``lagging``, rank
    1's view of the data folder lags: for it, the cache does not exist yet."""
    import warnings
    from thesis_lib.data.train_pairs import DataWarning
    from thesis_lib.training.distributed import init_distributed
    from thesis_lib.training.teacher_targets import teacher_targets
    _torchrun_env(rank, 2, port)
    os.environ["THESIS_DATA"] = str(tmp / "data")
    cfg, pairs, teacher = _cache_setup(tmp / "00000.tar")
    if lagging and rank == 1:
        import pathlib
        exists = pathlib.Path.exists
        pathlib.Path.exists = lambda p: False if p.parent.name == "teacher-targets" else exists(p)
    info = init_distributed(torch.device("cpu"))
    counted = _Counted(teacher)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = teacher_targets(cfg, counted, pairs, "cpu", info)
    built, parts = counted.images, sorted(p.name for p in (tmp / "data" / "teacher-targets").glob("*.part-*"))
    again = teacher_targets(cfg, counted, pairs, "cpu", info)
    torch.save(first.clone(), tmp / f"rank{rank}.pt")
    (tmp / f"rank{rank}.json").write_text(json.dumps({
        "built": built, "reused": counted.images - built, "parts_left": parts,
        "same": torch.equal(_bits(first), _bits(again)),
        "undecodable": sum(issubclass(w.category, DataWarning) for w in caught)}))


def _one_process_cache(data, shard, monkeypatch) -> torch.Tensor:
    """The cache as one process builds it in ``data`` (the reference); its teacher sees every image once."""
    from thesis_lib.training.distributed import DistInfo
    from thesis_lib.training.teacher_targets import teacher_targets
    monkeypatch.setenv("THESIS_DATA", str(data))
    cfg, pairs, teacher = _cache_setup(shard)
    counted = _Counted(teacher)
    with pytest.warns(UserWarning, match="cached as NaN"):
        targets = teacher_targets(cfg, counted, pairs, "cpu", DistInfo()).clone()
    assert counted.images == len(targets) == 10
    return targets


def test_two_processes_build_the_teacher_cache_in_parts_equal_to_one_process_bit_for_bit(tmp_path, monkeypatch):
    """Each of 2 gloo processes runs its own teacher on its own slice of the images only, in whole batches of 3:
    images [0, 6) and [6, 10) (before, rank 0 ran all 10 while rank 1 waited). Rank 0 joins the parts into the file
    one process writes, with the same content bit for bit (the undecodable image's NaN row included), and removes
    them; both ranks read it, and a second call reuses it without running the teacher."""
    shard = _write_cache_shard(tmp_path)
    spawn_two(_parts_worker, (free_port(), tmp_path, False))
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(2)]
    assert [r["built"] for r in ranks] == [6, 4]                      # each only its slice
    assert [r["undecodable"] for r in ranks] == [0, 1]                # image 7 lies in rank 1's slice
    assert [r["parts_left"] for r in ranks] == [[], []]               # rank 0 removed them before any rank read
    assert [r["reused"] for r in ranks] == [0, 0] and all(r["same"] for r in ranks)
    reference = _one_process_cache(tmp_path / "one", shard, monkeypatch)
    (cache,) = (tmp_path / "data" / "teacher-targets").glob("*.pt")
    assert cache.name == next((tmp_path / "one" / "teacher-targets").glob("*.pt")).name    # same path, same key
    for built in [torch.load(cache), *(torch.load(tmp_path / f"rank{r}.pt") for r in range(2))]:
        assert torch.equal(_bits(built), _bits(reference))
    assert reference[7].isnan().all() and torch.isfinite(reference[torch.arange(10) != 7]).all()
    left = [p.name for p in (tmp_path / "data" / "teacher-targets").iterdir() if ".part-" in p.name or
            p.name.endswith(".tmp")]
    assert left == []


def test_an_existing_teacher_cache_is_reused_by_every_process_as_rank_0_decides(tmp_path, monkeypatch):
    """The cache one process built is read by both ranks without running the teacher, even by a rank whose view of
    the data folder lags (rank 0 decides, and tells every rank)."""
    shard = _write_cache_shard(tmp_path)
    reference = _one_process_cache(tmp_path / "data", shard, monkeypatch)
    spawn_two(_parts_worker, (free_port(), tmp_path, True))
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(2)]
    assert [(r["built"], r["reused"], r["undecodable"]) for r in ranks] == [(0, 0, 0), (0, 0, 0)]
    for r in range(2):
        assert torch.equal(_bits(torch.load(tmp_path / f"rank{r}.pt")), _bits(reference))


def test_each_rank_takes_whole_batches_and_the_slices_cover_every_image_once():
    from thesis_lib.training.teacher_targets import rank_slice
    assert [rank_slice(10, 3, r, 2) for r in range(2)] == [(0, 6), (6, 10)]
    assert [rank_slice(1, 3, r, 2) for r in range(2)] == [(0, 0), (0, 1)]          # fewer batches than ranks
    for n, batch, world in [(10, 3, 3), (3_300_000, 256, 16), (7, 7, 4), (100, 1, 8)]:
        slices = [rank_slice(n, batch, r, world) for r in range(world)]
        assert slices[0][0] == 0 and slices[-1][1] == n
        assert all(a[1] == b[0] for a, b in zip(slices, slices[1:]))                 # contiguous, in rank order
        assert all(start % batch == 0 or start == stop for start, stop in slices)


@pytest.mark.parametrize("nodelist, host", [
    ("gpu07", "gpu07"), ("gpu[01-04],gpu07", "gpu01"), ("gpu[07,01-04]", "gpu07"), ("n[001-128]", "n001"),
    ("rack[2-3]-n[08,11]", "rack2-n08"), ("a1,b[1-2]", "a1"), ("node-[9-10].cluster", "node-9.cluster")])
def test_first_host_of_a_compact_slurm_host_list(nodelist, host):
    assert first_host(nodelist) == host


def test_first_host_refuses_a_list_it_cannot_read():
    with pytest.raises(DistributedError, match="MASTER_ADDR"):
        first_host("gpu[01-04")


SRUN = {"SLURM_JOB_ID": "1234", "SLURM_STEP_ID": "2", "SLURM_NTASKS": "4", "SLURM_STEP_NUM_TASKS": "4",
        "SLURM_PROCID": "3", "SLURM_LOCALID": "1", "SLURM_STEP_NODELIST": "gpu[03-04]",
        "SLURM_JOB_NODELIST": "gpu[01-04]"}


def test_srun_tasks_read_their_place_from_slurm_variables(capsys):
    """srun without torchrun: rank, world size and node rank from Slurm; the group meets on the step's first host, on
    a port derived from the job and step; MASTER_ADDR / MASTER_PORT override; torchrun's variables win over Slurm's
    (srun ... torchrun); one task, or python run by a batch script itself (no step variables), is one process."""
    assert launch_from_env(SRUN) == Launch(3, 4, 1, f"tcp://gpu03:{slurm_port('1234', '2')}", "srun")
    assert slurm_port("1234", "2") == 10000 + (16 * 1234 + 2) % 20000
    assert launch_from_env({**SRUN, "MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "29500"}).init_method == \
        "tcp://10.0.0.1:29500"
    assert launch_from_env({k: v for k, v in SRUN.items() if k != "SLURM_STEP_NODELIST"}).init_method.startswith(
        "tcp://gpu01:")
    assert launch_from_env({**SRUN, "RANK": "0", "WORLD_SIZE": "8", "LOCAL_RANK": "0"}) == Launch(0, 8, 0, None,
                                                                                                  "torchrun")
    assert launch_from_env({**SRUN, "SLURM_STEP_NUM_TASKS": "1", "SLURM_NTASKS": "1"}) == Launch()
    batch = {k: v for k, v in SRUN.items() if not k.startswith("SLURM_STEP")}
    assert launch_from_env({**batch, "SLURM_PROCID": "0", "SLURM_LOCALID": "0"}) == Launch()
    assert "not started by srun" in capsys.readouterr().err
    assert launch_from_env({}) == Launch()


def test_srun_tasks_without_a_meeting_point_name_what_is_missing():
    env = {k: v for k, v in SRUN.items() if k not in ("SLURM_JOB_ID", "SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST")}
    with pytest.raises(DistributedError, match=r"MASTER_ADDR \(or SLURM_STEP_NODELIST.*MASTER_PORT \(or SLURM_JOB_ID"):
        launch_from_env(env)


def test_srun_without_torchrun_trains_one_run_on_two_processes(tmp_path):
    """Two processes started as srun starts them (Slurm's variables only, no RANK / WORLD_SIZE) form one process
    group and train one run: the result records 2 processes (before, each trained a one-process run of its own)."""
    job = free_slurm_job_id()
    cmd = [sys.executable, "-m", "thesis_lib.training.run", "--preset", "smoke", "--out", str(tmp_path),
           "--no-progress"]
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=clean_env(
        SLURM_JOB_ID=job, SLURM_STEP_ID=0, SLURM_NTASKS=2, SLURM_STEP_NUM_TASKS=2, SLURM_PROCID=rank,
        SLURM_LOCALID=rank, SLURM_JOB_NODELIST="localhost,node[02-04]")) for rank in range(2)]
    outputs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [err[-2000:] for _, err in outputs]
    result = json.loads((tmp_path / "results" / "smoke" / "baseline" / "seed0.json").read_text())
    assert result["train"]["world_size"] == 2


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spawn_two(worker, args, timeout: float = 240):
    """``worker(rank, *args)`` in 2 processes; fails the test (and kills them) if they have not ended in ``timeout``
    seconds: a hang is a failure, not a stuck test run."""
    import time
    ctx = mp.start_processes(_exiting, args=(worker, *args), nprocs=2, join=False, start_method="spawn")
    deadline = time.monotonic() + timeout
    while not ctx.join(timeout=5):
        if time.monotonic() > deadline:
            for p in ctx.processes:
                p.kill()
            pytest.fail(f"the 2 processes did not end within {timeout} s (they wait for each other)")


def _torchrun_env(rank, world, port):
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank), MASTER_ADDR="127.0.0.1",
                      MASTER_PORT=str(port), THESIS_PROGRESS="0")


def _unshared_worker(rank, port, tmp):
    """Each rank sees its own folder at the output path (a node-local disk): simulated by a folder per rank."""
    _torchrun_env(rank, 2, port)
    try:
        run_experiment("smoke", out_dir=tmp / f"node{rank}")
        message = "trained"
    except ThesisError as err:
        message = f"{type(err).__name__}: {err}"
    (tmp / f"rank{rank}.txt").write_text(message)


def test_an_output_folder_not_shared_by_the_processes_is_refused_at_the_start(tmp_path):
    """Before any training, every rank stops with a SharedFolderError that names the rank that does not see rank
    0's files and what is needed (before: each trained, rank 0 writing checkpoints the others could not resume)."""
    spawn_two(_unshared_worker, (free_port(), tmp_path))
    messages = [(tmp_path / f"rank{r}.txt").read_text() for r in range(2)]
    for rank, m in enumerate(messages):              # (on a cluster both name the same path)
        assert m.startswith(f"SharedFolderError: the output folder {tmp_path / f'node{rank}'}"), m
        assert "rank 1 (on " in m and "--out (or THESIS_RESULTS) on a file system every node mounts" in m
    assert not (tmp_path / "node0" / "results" / "smoke" / "baseline" / "seed0" / "checkpoint.pt").exists()


def _lagging_view_worker(rank, port, tmp):
    """Rank 1's view of the (shared) output folder lags: for it, the result and the checkpoint do not exist yet."""
    import pathlib
    _torchrun_env(rank, 2, port)
    out = tmp / "shared"
    first = run_experiment("smoke", out_dir=out)
    result = out / "results" / "smoke" / "baseline" / "seed0.json"
    if rank == 0:
        result.unlink()                                  # a run killed after its last checkpoint
    dist.barrier()
    if rank == 1:
        exists = pathlib.Path.exists
        pathlib.Path.exists = lambda p: False if p.name in ("seed0.json", "checkpoint.pt") else exists(p)
    resumed = run_experiment("smoke", out_dir=out, resume=True)
    reused = run_experiment("smoke", out_dir=out)
    (tmp / f"rank{rank}.json").write_text(json.dumps({
        "first": first.get("train", {}).get("resumed_from"), "resumed": resumed.get("train", {}).get("resumed_from"),
        "same": resumed.get("metrics") == reused.get("metrics") == first.get("metrics")}))


def test_resume_and_reuse_are_decided_on_rank_0_for_every_process(tmp_path):
    """Whether a finished result is reused and which checkpoint a run continues from is rank 0's decision, sent to
    every rank: a rank whose view of the folder lags continues from rank 0's checkpoint (step 6) and reuses rank 0's
    result with the others (before: it started at step 0 while rank 0 resumed at 6, and the two waited forever)."""
    spawn_two(_lagging_view_worker, (free_port(), tmp_path))
    rank0, rank1 = (json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(2))
    assert rank0 == {"first": 0, "resumed": 6, "same": True}
    assert rank1 == {"first": None, "resumed": None, "same": True}        # rank 1 returns {}; it trained along


def _view_worker(rank, port, tmp):
    """Both ranks compare what they see (check_same_view) four times: alike; rank 1 running an edited file; rank 1
    seeing another data folder; then through run_experiment with a THESIS_DATA of each rank's own (a node-local
    disk) in which the world is still to be generated."""
    from thesis_lib.training import distributed, same_view
    from thesis_lib.training.distributed import init_distributed
    _torchrun_env(rank, 2, port)
    os.environ["THESIS_DATA"] = str(tmp / f"data{rank}")
    distributed.SHARED_WAIT_S = 1.0
    info = init_distributed(torch.device("cpu"))
    real = same_view.process_view
    edited = lambda data: {**real(data), "code": {**real(data)["code"], "training/run.py": "edited"}}   # noqa: E731
    messages = []
    for scenario in ("alike", "code", "data", "run"):
        same_view.process_view = edited if scenario == "code" and rank == 1 else real
        try:
            if scenario == "run":
                run_experiment("smoke", out_dir=tmp / "out")
            else:
                same_view.check_same_view(info, tmp / ("other" if scenario == "data" and rank == 1 else "shared"))
            messages.append("ok")
        except ThesisError as err:
            messages.append(f"{type(err).__name__}: {err}")
    (tmp / f"rank{rank}.json").write_text(json.dumps(messages))


def test_every_process_must_run_the_same_code_on_the_same_data_from_the_start(tmp_path):
    """Every rank stops before training, with the same error naming rank 1, its host and what differs, where rank 1
    runs an edited thesis_lib file, sees another data folder, or would generate the world in a THESIS_DATA of its own
    (before: it trained on, and the processes differed or waited for each other). Alike, nothing is raised."""
    for name, size in (("shared", 3), ("other", 4)):
        (tmp_path / name / "coco").mkdir(parents=True)
        (tmp_path / name / "coco" / "dataset_coco.json").write_text("x" * size)
    spawn_two(_view_worker, (free_port(), tmp_path))
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(2)]
    host = socket.gethostname()
    for rank, (alike, code, data, run) in enumerate(ranks):
        assert alike == "ok"
        assert code.startswith(f"SharedFolderError: rank 1 (on {host}) runs other code than rank 0 (on {host}): "
                               "thesis_lib at ") and " in training/run.py. A run of several processes needs one " \
                                                    "clone of the repository" in code, code
        assert data.startswith(f"SharedFolderError: the data folder is not the same for every process: rank 1 (on "
                               f"{host}) sees 2 entries two levels down (digest ") and f"at {tmp_path / 'other'}, " \
                                                                                   f"rank 0" in data, data
        assert run.startswith(f"SharedFolderError: the data folder {tmp_path / f'data{rank}'} is not shared by all "
                              f"processes: rank 1 (on {host}) does not see the file rank 0"), run
        assert "THESIS_DATA (or data.root) on a file system every node mounts" in run
    assert not any((tmp_path / "data0").glob("world-*"))              # stopped before generating or training
    assert not (tmp_path / "out" / "results" / "smoke" / "baseline" / "seed0" / "checkpoint.pt").exists()


def test_what_each_process_sees_is_compared_with_rank_0s_by_kind(tmp_path):
    """view_difference on the views of 3 processes: the first kind of difference, the rank and host, both paths."""
    from thesis_lib.errors import SharedFolderError
    from thesis_lib.training.same_view import folder_listing, process_view, view_difference
    (tmp_path / "data" / "coco" / "images" / "deep").mkdir(parents=True)
    (tmp_path / "data" / "coco" / "dataset_coco.json").write_text("{}")
    main = {**process_view(tmp_path / "data"), "host": "n1"}
    every = [main, {**main, "host": "n2"}, {**main, "host": "n3"}]
    assert view_difference(every) is None
    listing = folder_listing(tmp_path / "data")
    assert listing[1] == 3                                          # coco/, coco/dataset_coco.json, coco/images/
    (tmp_path / "data" / "coco" / "images" / "deep" / "a.jpg").write_text("x")
    assert folder_listing(tmp_path / "data") == listing             # three levels down: not read
    (tmp_path / "data" / "coco" / "dataset_coco.json").write_text("{ }")
    assert folder_listing(tmp_path / "data") != listing and folder_listing(tmp_path / "nothing") is None

    every[2] = {**every[2], "data": None, "data_path": "/local/data"}
    err = view_difference(every, generated=False)
    assert isinstance(err, SharedFolderError) and str(err).startswith(
        "the data folder is not the same for every process: rank 2 (on n3) sees no folder at /local/data, rank 0 "
        "(on n1) 3 entries two levels down")
    assert "needs --data-root (data.root) on a file system every node mounts" in str(err)
    every[1] = {**every[1], "env": "Python 3.12.1, torch 2.9.0, thesis_lib 0.1.0", "prefix": "/opt/conda"}
    err = view_difference(every)
    assert type(err) is DistributedError and str(err).startswith(
        f"rank 1 (on n2) runs Python 3.12.1, torch 2.9.0, thesis_lib 0.1.0 (interpreter at /opt/conda), rank 0 (on "
        f"n1) {main['env']} (at {sys.prefix})") and "the clone's .venv (make setup)" in str(err)
    code = dict(main["code"])
    del code["training/same_view.py"]
    every[2] = {**every[2], "code": code, "package": "/scratch/copy/thesis_lib"}
    err = view_difference(every)
    assert isinstance(err, SharedFolderError) and str(err).startswith(
        f"rank 2 (on n3) runs other code than rank 0 (on n1): thesis_lib at /scratch/copy/thesis_lib differs from "
        f"rank 0's at {main['package']} in training/same_view.py. A run")
