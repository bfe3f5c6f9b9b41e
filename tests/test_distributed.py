"""thesis_lib.training.distributed under several CPU processes (gloo): ranks stay in sync, the fusion heads included.
(The gathered contrastive loss equals the one-process loss: tests/test_losses.py.)"""
import json
import os
import subprocess
import sys

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from thesis_lib import CheckpointError, ResultConflictError, ThesisError, run_experiment
from thesis_lib.training.distributed import DistInfo, check_in_sync


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
    mp.spawn(_sync_worker, args=(2, str(tmp_path / "init"), tmp_path, diverge), nprocs=2, join=True)
    messages = [(tmp_path / f"rank{r}.txt").read_text() for r in range(2)]
    if not diverge:
        assert messages == ["", ""]
    else:
        for m in messages:                          # every rank raises, so none waits on the others
            assert "1.bias" in m and "weight" not in m and "0." not in m


def test_torchrun_trains_a_fusion_variant_in_sync_and_records_the_processes(tmp_path):
    """Two gloo processes train switch + SIB (the fusion head is called outside the DDP wrapper); the run ends
    only if every parameter is equal on both ranks; the result records 2 processes. A one-process call with the
    same global batch reuses it (notebooks 03/04 after a torchrun training), one with another global batch refuses
    it, and none resumes from its checkpoint (the data order of the remaining steps would differ)."""
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
    with pytest.raises(CheckpointError, match="processes: 2 -> 1"):
        run_experiment("smoke", "switch_sib", 0, out_dir=tmp_path / "one", resume=str(checkpoint))


def test_each_torchrun_process_takes_its_own_gpu_before_the_nccl_group(monkeypatch):
    """Without a GPU: torch.cuda.set_device and the process group are mocked and their call order recorded."""
    from thesis_lib.training import distributed
    calls = []
    monkeypatch.setenv("RANK", "3")
    monkeypatch.setenv("WORLD_SIZE", "4")
    monkeypatch.setenv("LOCAL_RANK", "1")
    monkeypatch.setattr(torch.cuda, "set_device", lambda i: calls.append(("set_device", i)))
    monkeypatch.setattr(dist, "is_initialized", lambda: False)
    monkeypatch.setattr(dist, "init_process_group", lambda backend: calls.append(("init", backend)))
    monkeypatch.setattr(dist, "get_rank", lambda: 3)
    monkeypatch.setattr(dist, "get_world_size", lambda: 4)
    info = distributed.init_distributed(torch.device("cuda"))
    assert calls == [("set_device", 1), ("init", "nccl")]
    assert info == DistInfo(3, 4, 1)
    assert distributed.rank_device(torch.device("cuda"), info) == torch.device("cuda", 1)
    calls.clear()
    assert distributed.init_distributed(torch.device("cpu")) == DistInfo(3, 4, 1) and calls == [("init", "gloo")]
    assert distributed.rank_device(torch.device("cpu"), info) == torch.device("cpu")
