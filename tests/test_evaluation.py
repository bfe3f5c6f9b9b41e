import torch
from torch.nn import functional as F

from thesis_lib import retrieval_recalls, zero_shot_accuracy


def _embeddings(seed=0, n_img=30, dim=16):
    g = torch.Generator().manual_seed(seed)
    images = F.normalize(torch.randn(n_img, dim, generator=g), dim=-1)
    counts = [5] * n_img
    counts[7] = 6                                          # one image with six captions, as in COCO's 25,010
    t2i = torch.tensor([i for i, c in enumerate(counts) for _ in range(c)])
    texts = F.normalize(images[t2i] + 1.2 * torch.randn(len(t2i), dim, generator=g), dim=-1)
    return images, texts, t2i


def _brute_force(images, texts, t2i):
    sims = images @ texts.T
    out = {}
    for k in (1, 5, 10):
        hits = 0
        for i in range(len(images)):                       # image -> text: any own caption in the top k
            ranked = sorted(range(len(texts)), key=lambda j: -sims[i, j].item())[:k]
            hits += any(t2i[j] == i for j in ranked)
        out[f"tr@{k}"] = 100 * hits / len(images)
        hits = 0
        for j in range(len(texts)):                        # text -> image: the own image in the top k
            ranked = sorted(range(len(images)), key=lambda i: -sims[i, j].item())[:k]
            hits += int(t2i[j]) in ranked
        out[f"ir@{k}"] = 100 * hits / len(texts)
    out["mean"] = sum(out.values()) / 6
    return out


def test_retrieval_recalls_agree_with_a_brute_force_loop():
    images, texts, t2i = _embeddings()
    want = _brute_force(images, texts, t2i)
    for chunk in (1024, 7):                                # chunking changes nothing
        got = retrieval_recalls(images, texts, t2i, chunk=chunk)
        assert set(got) == {"tr@1", "tr@5", "tr@10", "ir@1", "ir@5", "ir@10", "mean"}
        for k, v in want.items():
            assert abs(got[k] - v) < 1e-4, k
    assert 0 < want["tr@1"] < want["tr@10"] < 100


def test_perfect_embeddings_score_100():
    images, _, t2i = _embeddings()
    assert retrieval_recalls(images, images[t2i], t2i)["mean"] == 100


def test_zero_shot_accuracy_agrees_with_a_loop():
    g = torch.Generator().manual_seed(3)
    classes = F.normalize(torch.randn(12, 8, generator=g), dim=-1)
    labels = torch.randint(12, (50,), generator=g)
    images = F.normalize(classes[labels] + 0.9 * torch.randn(50, 8, generator=g), dim=-1)
    got = zero_shot_accuracy(images, classes, labels)
    scores = images @ classes.T
    top1 = sum(int(scores[i].argmax() == labels[i]) for i in range(50)) / 50 * 100
    top5 = sum(int(labels[i] in scores[i].topk(5).indices) for i in range(50)) / 50 * 100
    assert abs(got["top1"] - top1) < 1e-4 and abs(got["top5"] - top5) < 1e-4 and top1 < top5


def test_itm_negatives_are_true_ones():
    """Image 0's most similar other caption (index 2) fits it too (the world's ground truth): the hard negative is
    the next most similar false one; the fixed negative is the first false caption from half the set away."""
    from thesis_lib.evaluation import itm_pairs
    t2i = torch.tensor([0, 0, 1, 1, 2, 2, 3, 3])
    fits = t2i[None, :] == torch.arange(4)[:, None]
    fits[0, 2] = fits[0, 4] = True
    sims = torch.zeros(4, 8)
    sims[0, 2], sims[0, 6] = 9.0, 5.0
    first, hardest, other = itm_pairs(sims, fits, t2i)
    assert first.tolist() == [0, 2, 4, 6]
    assert hardest[0] == 6 and not fits[torch.arange(4), hardest].any()
    assert other[0] == 5 and other.tolist()[1:] == [6, 0, 2] and not fits[torch.arange(4), other].any()
