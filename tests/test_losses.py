import math

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn import functional as F

from thesis_lib.training.distributed import DistInfo
from thesis_lib.training.losses import clip_loss, kd_contrastive, kd_mse


def test_clip_loss_equals_its_formula():
    g = torch.Generator().manual_seed(0)
    v = F.normalize(torch.randn(5, 8, generator=g), dim=-1)
    w = F.normalize(torch.randn(5, 8, generator=g), dim=-1)
    s = torch.tensor(1 / 0.07)
    by_hand = 0.0
    for i in range(5):   # -log softmax of the matching pair, image->text and text->image
        by_hand -= math.log(math.exp(s * v[i] @ w[i]) / sum(math.exp(s * v[i] @ w[j]) for j in range(5))) / 10
        by_hand -= math.log(math.exp(s * w[i] @ v[i]) / sum(math.exp(s * w[i] @ v[j]) for j in range(5))) / 10
    assert abs(clip_loss(v, w, s).item() - by_hand) < 1e-4


def test_kd_losses():
    g = torch.Generator().manual_seed(1)
    a, b, t = (torch.randn(4, 6, generator=g) for _ in range(3))
    total, ki, kt = kd_mse(a, b, t)
    assert torch.isclose(ki, ((a - t) ** 2).mean()) and torch.isclose(total, (ki + kt) / 2)
    total, ci, ct = kd_contrastive(t, t, t)          # a student equal to the teacher picks its own image
    assert ci < 0.1 and torch.isclose(total, (ci + ct) / 2)


def _features(model, x):
    return F.normalize(model(x[0]), dim=-1), F.normalize(model(x[1]), dim=-1)


def _worker(rank, world, init_file, out_file):
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    torch.manual_seed(0)
    model = torch.nn.Linear(6, 4)
    g = torch.Generator().manual_seed(1)
    images, texts = torch.randn(8, 6, generator=g), torch.randn(8, 6, generator=g)
    part = slice(rank * 4, rank * 4 + 4)
    v, w = _features(model, (images[part], texts[part]))
    loss = clip_loss(v, w, torch.tensor(10.0), DistInfo(rank, world))
    loss.backward()
    for p in model.parameters():                     # what DDP does: average the gradients
        dist.all_reduce(p.grad)
        p.grad /= world
    losses = [torch.zeros(()) for _ in range(world)]
    dist.all_gather(losses, loss.detach())
    if rank == 0:
        torch.save({"loss": torch.stack(losses).mean(), "grads": [p.grad for p in model.parameters()]}, out_file)
    dist.destroy_process_group()


def test_two_gloo_processes_equal_one_process_on_the_whole_batch(tmp_path):
    mp.spawn(_worker, args=(2, str(tmp_path / "init"), str(tmp_path / "out.pt")), nprocs=2, join=True)
    two = torch.load(tmp_path / "out.pt")
    torch.manual_seed(0)
    model = torch.nn.Linear(6, 4)
    g = torch.Generator().manual_seed(1)
    images, texts = torch.randn(8, 6, generator=g), torch.randn(8, 6, generator=g)
    v, w = _features(model, (images, texts))
    loss = clip_loss(v, w, torch.tensor(10.0))
    loss.backward()
    assert torch.allclose(two["loss"], loss, atol=1e-6)
    for got, want in zip(two["grads"], (p.grad for p in model.parameters())):
        assert torch.allclose(got, want, atol=1e-6)
