"""Captions to token ids: [T_CLS] w_1 .. w_M [T_SEP] [pad] ..., fixed length, with a padding mask.

Convention (the thesis's ``pad_text_sequence``): truncate to ``max_len - 2`` sub-words, wrap in T_CLS/T_SEP, pad;
``padding_mask`` is True at pads. Three sources, one interface:

* ``gpt2_fairseq_tokenizer(folder)``: Data2Vec2 text's pipeline from ``encoder.json`` + ``vocab.bpe`` (GPT-2 byte-level
  BPE) and fairseq's ``dict.txt`` (GPT-2 id -> line number + 4; <s>0 <pad>1 </s>2 <unk>3, <mask> last: 50,265 ids).
* ``hf_tokenizer(name_or_dir)``: any transformers tokenizer (``bert-base-uncased``, ``facebook/data2vec-text-base``).
* ``demo_tokenizer(world_root, cfg)``: a byte-level BPE trained on the embedded world's text corpus, cached.
"""
from __future__ import annotations

import itertools
import json
import os
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from ..cache import build_once, write_atomic
from ..config import ExperimentConfig, TextConfig
from ..errors import TokenizerError

DEMO_SPECIALS = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]  # ids 0..4, fairseq's order for the first four


class CaptionTokenizer:
    def __init__(self, encode: Callable[[list[str]], list[list[int]]], vocab_size: int, bos_id: int, eos_id: int,
                 pad_id: int, mask_id: int, max_len: int, name: str, id_to_token: Callable[[int], str] | None = None):
        self.encode, self.vocab_size, self.name, self.id_to_token = encode, vocab_size, name, id_to_token
        self.bos_id, self.eos_id, self.pad_id, self.mask_id, self.max_len = bos_id, eos_id, pad_id, mask_id, max_len

    def __call__(self, captions: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
        """(ids, padding_mask), both (B, max_len); padding_mask is True at pads."""
        pieces = self.encode(list(captions))
        keep = self.max_len - 2
        lengths = np.fromiter((min(len(p), keep) for p in pieces), dtype=np.int64, count=len(pieces))
        flat = np.fromiter(itertools.chain.from_iterable(p[:keep] for p in pieces), dtype=np.int64,
                           count=int(lengths.sum()))
        ids = np.full((len(pieces), self.max_len), self.pad_id, dtype=np.int64)
        ids[:, 0] = self.bos_id
        cols = np.arange(self.max_len)
        ids[(cols >= 1) & (cols <= lengths[:, None])] = flat        # row-major, the order of ``flat``
        ids[np.arange(len(pieces)), lengths + 1] = self.eos_id
        ids = torch.from_numpy(ids)
        return ids, ids.eq(self.pad_id)


def check_tokenizer(tok: CaptionTokenizer, cfg: TextConfig) -> None:
    """Fail early when a tokenizer does not belong to the text encoder (ids beyond its embedding, other pad id)."""
    if tok.vocab_size > cfg.vocab_size:
        raise TokenizerError(f"tokenizer {tok.name} has {tok.vocab_size} ids but the text encoder embeds only "
                             f"{cfg.vocab_size}; use the tokenizer that belongs to the text encoder")
    if (tok.pad_id, tok.bos_id, tok.eos_id) != (cfg.pad_id, cfg.bos_id, cfg.eos_id):
        raise TokenizerError(f"tokenizer {tok.name} uses pad/bos/eos ids {(tok.pad_id, tok.bos_id, tok.eos_id)} but "
                             f"the text encoder expects {(cfg.pad_id, cfg.bos_id, cfg.eos_id)}")


def _byte_level_bpe(vocab: dict | str, merges: list | str):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    bpe = models.BPE.from_file(vocab, merges) if isinstance(vocab, str) else models.BPE(vocab, merges)
    tok = Tokenizer(bpe)
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    return tok


def gpt2_fairseq_tokenizer(folder: str | os.PathLike, max_len: int = 64) -> CaptionTokenizer:
    """Data2Vec2 text's tokenizer from its three files (docs/sources.md §7.3)."""
    folder = Path(folder)
    for name in ("encoder.json", "vocab.bpe", "dict.txt"):
        if not (folder / name).is_file():
            raise TokenizerError(f"{folder / name} not found; the Data2Vec2 text tokenizer needs encoder.json, "
                                 "vocab.bpe and dict.txt (fairseq data2vec2 downloads)")
    bpe = _byte_level_bpe(str(folder / "encoder.json"), str(folder / "vocab.bpe"))
    n_gpt2 = len(json.loads((folder / "encoder.json").read_text()))
    lines = (folder / "dict.txt").read_text().splitlines()
    lookup = np.full(n_gpt2, 3, dtype=np.int64)                  # GPT-2 ids missing from dict.txt -> <unk>
    for line_no, line in enumerate(lines):
        token = line.split(" ")[0]
        if token.isdigit() and int(token) < n_gpt2:
            lookup[int(token)] = line_no + 4
    vocab_size = 4 + len(lines) + 1                              # + <mask> appended last

    def encode(captions):
        return [lookup[e.ids].tolist() for e in bpe.encode_batch([c.strip() for c in captions])]
    return CaptionTokenizer(encode, vocab_size, 0, 2, 1, vocab_size - 1, max_len, f"gpt2-fairseq:{folder}")


def hf_tokenizer(name_or_dir: str, max_len: int = 64) -> CaptionTokenizer:
    """A transformers tokenizer by hub name or local folder; special ids are read from it."""
    from transformers import AutoTokenizer
    try:
        tok = AutoTokenizer.from_pretrained(name_or_dir)
    except OSError as err:
        raise TokenizerError(f"cannot load tokenizer {name_or_dir!r}: {err}") from None
    bos = tok.cls_token_id if tok.cls_token_id is not None else tok.bos_token_id
    eos = tok.sep_token_id if tok.sep_token_id is not None else tok.eos_token_id

    def encode(captions):
        return tok(list(captions), add_special_tokens=False)["input_ids"]
    return CaptionTokenizer(encode, len(tok), bos, eos, tok.pad_token_id, tok.mask_token_id, max_len,
                            f"hf:{name_or_dir}")


def train_bpe(lines: list[str], vocab_size: int, path: str | os.PathLike) -> None:
    """Train a byte-level BPE (GPT-2's algorithm) on ``lines`` and save it as a tokenizers JSON file."""
    from tokenizers import pre_tokenizers, trainers
    tok = _byte_level_bpe({}, [])
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=DEMO_SPECIALS, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(lines, trainer)
    write_atomic(path, lambda tmp: tok.save(str(tmp)))


def _demo_bpe_file(world_root: str | os.PathLike, cfg: TextConfig) -> Path:
    return Path(world_root) / f"tokenizer-bpe{cfg.vocab_size}.json"


def prepare_demo_tokenizer(world_root: str | os.PathLike, cfg: TextConfig) -> Path:
    """Train the demo's BPE on the world's text-only corpus (``corpus/captions.txt``) unless it is cached."""
    path = _demo_bpe_file(world_root, cfg)
    lines = lambda: (Path(world_root) / "corpus" / "captions.txt").read_text().splitlines()  # noqa: E731
    return build_once(path, lambda: train_bpe(lines(), cfg.vocab_size, path))


def demo_tokenizer(world_root: str | os.PathLike, cfg: TextConfig) -> CaptionTokenizer:
    """The demo's BPE from its file (``prepare_demo_tokenizer`` writes it; loading never trains)."""
    from tokenizers import Tokenizer
    path = _demo_bpe_file(world_root, cfg)
    if not path.exists():
        raise TokenizerError(f"the demo tokenizer is not prepared ({path} is missing); prepare it first: python -m "
                             "thesis_lib.training.prepare --preset <preset>; run_experiment does this itself")
    bpe = Tokenizer.from_file(str(path))

    def encode(captions):
        return [e.ids for e in bpe.encode_batch(list(captions))]
    tok = CaptionTokenizer(encode, bpe.get_vocab_size(), 0, 2, 1, DEMO_SPECIALS.index("<mask>"), cfg.max_len,
                           f"demo-bpe:{path.name}", bpe.id_to_token)
    check_tokenizer(tok, cfg)
    return tok


def tokenize(tokenizer: CaptionTokenizer, captions: list[str], chunk: int = 65536) -> torch.Tensor:
    """All captions at once -> (n, max_len) int32 (padding = tokenizer.pad_id)."""
    parts = [tokenizer(captions[i:i + chunk])[0].to(torch.int32) for i in range(0, len(captions), chunk)]
    return torch.cat(parts) if parts else torch.empty(0, tokenizer.max_len, dtype=torch.int32)


def trim(tokens: torch.Tensor, pad_id: int) -> torch.Tensor:
    """Drop the columns that are padding in every row (exact: pads are masked in attention)."""
    longest = int(tokens.ne(pad_id).sum(1).max()) if len(tokens) else 1
    return tokens[:, :longest].long()


def uses_demo_tokenizer(cfg: ExperimentConfig) -> bool:
    return not cfg.weights.tokenizer and cfg.weights.source in ("demo", "random") and cfg.data.source == "world"


def load_tokenizer(cfg: ExperimentConfig, root: Path) -> CaptionTokenizer:
    """The run's tokenizer: the demo BPE, a Hugging Face one (``hf:<name>``, or BERT's for the BERT text encoder),
    or the thesis's GPT-2 BPE in fairseq's dictionary from the checkpoint folder."""
    src, text = cfg.weights.tokenizer, cfg.model.text
    if uses_demo_tokenizer(cfg):
        tok = demo_tokenizer(root, text)
    elif src.startswith("hf:") or (not src and cfg.model.text_encoder == "bert"):
        tok = hf_tokenizer(src[3:] if src else "bert-base-uncased", text.max_len)
    else:
        tok = gpt2_fairseq_tokenizer(src or cfg.weights.checkpoint_dir, text.max_len)
    check_tokenizer(tok, text)
    return tok
