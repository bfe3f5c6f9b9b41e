"""Our objective, metrics and tokenizer against the field's own libraries on the same inputs.

* ITC loss: open_clip's ``ClipLoss`` (mlfoundations/open_clip, ``open_clip/loss.py``), loss and gradients.
* Retrieval R@1/5/10: CLIP_benchmark's ``recall_at_k`` + ``batchify``
  (``clip_benchmark/metrics/zeroshot_retrieval.py``), called as its ``evaluate`` calls them: a query scores when its
  recall at k is above 0.
* Zero-shot: CLIP_benchmark's ``zero_shot_classifier`` and ``run_classification``
  (``clip_benchmark/metrics/zeroshot_classification.py``) on stub encoders that return fixed random features, scored
  by scikit-learn's ``top_k_accuracy_score`` (CLIP_benchmark's own ``accuracy`` calls ``float`` on a 1-element array,
  which NumPy 2 refuses).
* GPT-2 BPE + fairseq ``dict.txt``: transformers' ``GPT2Tokenizer`` (GPT-2 ids), ``RobertaTokenizer`` on the
  fairseq-ordered vocabulary (RoBERTa ids, <s> … </s>), and OpenAI's GPT-2 ``encoder.py`` BPE in pure Python as kept in
  transformers' ``ClvpTokenizer`` (its ``pat``, ``byte_encoder``, ``bpe``), an engine other than the Rust one we use.
"""
import json
import random
from types import SimpleNamespace

import pytest
import torch
from checkpoint_fixtures import gpt2_tokenizer_files
from torch.nn import functional as F

from thesis_lib.data.tokenizer import gpt2_fairseq_tokenizer
from thesis_lib.evaluation import retrieval_recalls, zero_shot_accuracy, zero_shot_classifier
from thesis_lib.training.losses import clip_loss

CPU = torch.device("cpu")


# ------------------------------------------------------------------------------------------- ITC loss

@pytest.mark.parametrize("batch,scale", [(1, 1 / 0.07), (7, 100.0), (16, 1.0), (33, 1 / 0.07)])
def test_clip_loss_equals_open_clip(batch, scale):
    from open_clip.loss import ClipLoss
    g = torch.Generator().manual_seed(batch)
    image = F.normalize(torch.randn(batch, 12, generator=g, dtype=torch.float64), dim=-1).requires_grad_()
    text = F.normalize(torch.randn(batch, 12, generator=g, dtype=torch.float64), dim=-1).requires_grad_()
    s = torch.tensor(scale, dtype=torch.float64, requires_grad=True)
    ours, theirs = clip_loss(image, text, s), ClipLoss()(image, text, s)
    assert abs(ours.item() - theirs.item()) < 1e-12
    for a, b in zip(torch.autograd.grad(ours, (image, text, s)), torch.autograd.grad(theirs, (image, text, s))):
        assert torch.allclose(a, b, rtol=0, atol=1e-12)


# ------------------------------------------------------------------------------------------ retrieval

def _retrieval_set(counts, seed, dim=16):
    g = torch.Generator().manual_seed(seed)
    images = F.normalize(torch.randn(len(counts), dim, generator=g, dtype=torch.float64), dim=-1)
    t2i = torch.tensor([i for i, c in enumerate(counts) for _ in range(c)])
    texts = F.normalize(images[t2i] + 1.2 * torch.randn(len(t2i), dim, generator=g, dtype=torch.float64), dim=-1)
    return images, texts, t2i


def _clip_benchmark_recalls(images, texts, t2i, batch_size=8):
    from clip_benchmark.metrics.zeroshot_retrieval import batchify, recall_at_k
    scores = texts @ images.T                                     # (texts, images), as in CLIP_benchmark
    positive = torch.zeros_like(scores, dtype=torch.bool)
    positive[torch.arange(len(scores)), t2i] = True
    out = {}
    for k in (1, 5, 10):                                          # their text retrieval is image -> text, our tr
        out[f"tr@{k}"] = 100 * (batchify(recall_at_k, scores.T, positive.T, batch_size, "cpu",
                                         k=k) > 0).float().mean().item()
        out[f"ir@{k}"] = 100 * (batchify(recall_at_k, scores, positive, batch_size, "cpu",
                                         k=k) > 0).float().mean().item()
    return out


FIVE_AND_ONE_SIX = [5] * 30
FIVE_AND_ONE_SIX[7] = 6                                           # one image with six captions, as in COCO's 25,010


@pytest.mark.parametrize("counts,seed", [(FIVE_AND_ONE_SIX, 0), (FIVE_AND_ONE_SIX, 1),
                                         (random.Random(2).choices(range(1, 7), k=40), 2)])
def test_retrieval_recalls_equal_clip_benchmark(counts, seed):
    images, texts, t2i = _retrieval_set(counts, seed)
    sims = (texts @ images.T).sort(dim=1).values
    assert (sims.diff(dim=1).min() > 1e-9) and (sims.T.sort(dim=1).values.diff(dim=1).min() > 1e-9)  # no ties
    want = _clip_benchmark_recalls(images, texts, t2i)
    assert 0 < want["tr@1"] < want["tr@10"] < 100 and 0 < want["ir@1"] < want["ir@10"] < 100
    for chunk in (7, 1024):
        got = retrieval_recalls(images, texts, t2i, chunk=chunk)
        for key, value in want.items():
            assert abs(got[key] - value) < 1e-4, (key, chunk)


# ------------------------------------------------------------------------------------------ zero-shot

CLASSNAMES = [f"class{c}" for c in range(12)]
TEMPLATES = ["a photo of a {c}.", "a drawing of the {c}.", "{c}", "itap of my {c}."]


class _Encoders:
    """Fixed random features: a prompt id -> one row of ``table``; an image is its own feature vector."""

    def __init__(self, table: torch.Tensor, normalise: bool):
        self.table, self.normalise, self.cfg = table, normalise, SimpleNamespace(dim=table.shape[1])

    def encode_text(self, ids: torch.Tensor):
        if not self.normalise:                                    # CLIP_benchmark normalises itself
            return self.table[ids]
        return SimpleNamespace(x=F.normalize(self.table[ids[:, 0]], dim=-1))   # EMKUM.encode_text(...).x is

    def encode_image(self, images: torch.Tensor):
        return images


def test_zero_shot_equals_clip_benchmark():
    from clip_benchmark.metrics import zeroshot_classification as cb
    from sklearn.metrics import top_k_accuracy_score
    g = torch.Generator().manual_seed(4)
    prompts = [t.format(c=c) for c in CLASSNAMES for t in TEMPLATES]          # class-major, as ZeroShotSet's
    table = torch.randn(len(prompts), 16, generator=g)
    labels = torch.randint(len(CLASSNAMES), (300,), generator=g)
    ours_clf = zero_shot_classifier(
        _Encoders(table, normalise=True),
        SimpleNamespace(classnames=CLASSNAMES, templates=TEMPLATES, prompt_tokens=torch.arange(len(prompts))[:, None]),
        pad_id=-1, device=CPU, batch_size=5)
    their_clf = cb.zero_shot_classifier(_Encoders(table, normalise=False),
                                        lambda texts: torch.tensor([prompts.index(t) for t in texts]),
                                        CLASSNAMES, TEMPLATES, "cpu", amp=False)          # (D, C)
    assert torch.allclose(ours_clf, their_clf.T, rtol=0, atol=1e-6)
    images = F.normalize(ours_clf[labels] + 1.3 * torch.randn(len(labels), 16, generator=g), dim=-1)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(images, labels), batch_size=64)
    logits, target = cb.run_classification(_Encoders(table, normalise=False), their_clf, loader, "cpu", amp=False)
    top1, top5 = (top_k_accuracy_score(target, logits, k=k, labels=range(len(CLASSNAMES))) for k in (1, 5))
    got = zero_shot_accuracy(images, ours_clf, labels)
    assert 0 < top1 < top5 < 1
    assert abs(got["top1"] - 100 * top1) < 1e-4 and abs(got["top5"] - 100 * top5) < 1e-4


# ------------------------------------------------------------------------------------------ tokenizer

STRINGS = ["hello world", "  hello   world  ", "a red ball, left of the blue box.", "don't stop—it's 3.14!",
           "HE'LL he'll they're", "naïve café, Ürün, 東京タワー", "emoji 🙂👍🏽 and 🇩🇪 flags", "tabs\tand\nnew lines",
           "spaces   inside\u00a0and nbsp", "100,000 dollars $5.99", "", "   "]


def _trained_gpt2_files(folder):
    """A byte-level BPE with a few hundred merges (multi-byte characters, words, runs of spaces) trained on
    ``STRINGS``, written as GPT-2's encoder.json + vocab.bpe, with a fairseq dict.txt in a shuffled order."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.train_from_iterator(STRINGS * 3, trainers.BpeTrainer(vocab_size=400, show_progress=False,
                                                             initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    vocab_file, merges_file = tok.model.save(str(folder))
    (folder / "encoder.json").write_text(open(vocab_file).read())
    (folder / "vocab.bpe").write_text(open(merges_file).read())
    order = list(range(tok.get_vocab_size()))
    random.Random(0).shuffle(order)
    (folder / "dict.txt").write_text("".join(f"{g} {1000 - k}\n" for k, g in enumerate(order)) + "madeupword0000 0\n")


@pytest.fixture(params=["fixture", "trained"])
def gpt2_folder(request, tmp_path):
    if request.param == "fixture":
        gpt2_tokenizer_files(tmp_path)                         # the files test_tokenizer uses (4 merges)
    else:
        _trained_gpt2_files(tmp_path)
    return tmp_path


def _roberta_folder(gpt2_folder, out):
    """fairseq's Dictionary order as a RoBERTa vocab.json: <s> <pad> </s> <unk>, the dict.txt lines, <mask>."""
    encoder = json.loads((gpt2_folder / "encoder.json").read_text())
    token_of = {i: t for t, i in encoder.items()}
    lines = [line.split(" ")[0] for line in (gpt2_folder / "dict.txt").read_text().splitlines()]
    vocab = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3}
    vocab.update({token_of.get(int(w), w) if w.isdigit() else w: k + 4 for k, w in enumerate(lines)})
    vocab["<mask>"] = len(vocab)
    out.mkdir()
    (out / "vocab.json").write_text(json.dumps(vocab))
    (out / "merges.txt").write_text((gpt2_folder / "vocab.bpe").read_text())
    return out


def _openai_gpt2_ids(ref, text):
    """GPT-2's encoder.py: regex pre-split, bytes -> printable characters, ranked merges (all pure Python)."""
    words = (ref.bpe("".join(ref.byte_encoder[b] for b in w.encode("utf-8"))) for w in ref.pat.findall(text))
    return [ref.encoder[piece] for w in words for piece in w.split(" ")]


def test_gpt2_fairseq_ids_equal_transformers_and_openai_bpe(gpt2_folder, tmp_path):
    from transformers import ClvpTokenizer, GPT2Tokenizer, RobertaTokenizer
    files = dict(vocab_file=str(gpt2_folder / "encoder.json"), merges_file=str(gpt2_folder / "vocab.bpe"))
    gpt2 = GPT2Tokenizer.from_pretrained(str(gpt2_folder), **files)
    roberta = RobertaTokenizer.from_pretrained(str(_roberta_folder(gpt2_folder, tmp_path / "roberta")))
    openai = ClvpTokenizer(**files)
    ours = gpt2_fairseq_tokenizer(gpt2_folder, max_len=128)
    dict_lines = [line.split(" ")[0] for line in (gpt2_folder / "dict.txt").read_text().splitlines()]
    ids, pad = ours(STRINGS)
    merged = 0
    for text, row, p in zip(STRINGS, ids, pad):
        text = text.strip()                                     # the thesis strips captions before encoding
        gpt2_ids = gpt2(text, add_special_tokens=False)["input_ids"]
        assert gpt2_ids == _openai_gpt2_ids(openai, text), text
        assert row[~p].tolist() == roberta(text)["input_ids"], text
        assert row[~p].tolist() == [0] + [dict_lines.index(str(i)) + 4 for i in gpt2_ids] + [2], text
        merged += len(gpt2_ids) < len(text.encode("utf-8"))
    assert merged >= 2                                           # the merges were used, not only single bytes
