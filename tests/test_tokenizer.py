
import pytest
import torch
from checkpoint_fixtures import gpt2_tokenizer_files

from thesis_lib import TokenizerError, get_config
from thesis_lib.config import TextConfig
from thesis_lib.data.tokenizer import (
    check_tokenizer,
    demo_tokenizer,
    gpt2_fairseq_tokenizer,
    hf_tokenizer,
    prepare_demo_tokenizer,
)


@pytest.fixture
def gpt2_files(tmp_path):
    return tmp_path, gpt2_tokenizer_files(tmp_path)


def test_gpt2_ids_go_through_dict_txt(gpt2_files):
    folder, order = gpt2_files
    tok = gpt2_fairseq_tokenizer(folder, max_len=8)
    assert tok.vocab_size == 4 + len(order) + 1 + 1            # specials, dict lines (+ madeupword), <mask>
    ids, pad = tok(["  hello world "])                          # stripped first, as the thesis does
    hell, o, w_, r = 258, ord("o"), 259, ord("r")               # 'hell' 'o' 'Ġw' 'o' 'r' 'l' 'd'
    gpt2 = [hell, o, w_, o, r, ord("l"), ord("d")]
    fairseq = [order.index(g) + 4 for g in gpt2]
    assert ids[0].tolist() == [0] + fairseq[:6] + [2]           # truncated to max_len - 2, then <s> .. </s>
    assert not pad.any()
    ids, pad = tok(["he"])
    assert ids[0].tolist() == [0, order.index(256) + 4, 2, 1, 1, 1, 1, 1]
    assert pad[0].tolist() == [False] * 3 + [True] * 5


def test_missing_tokenizer_file(tmp_path):
    with pytest.raises(TokenizerError, match="encoder.json not found"):
        gpt2_fairseq_tokenizer(tmp_path)


def test_hf_tokenizer_and_vocabulary_mismatch(tmp_path):
    from transformers import BertTokenizer
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "red", "ball"]
    (tmp_path / "vocab.txt").write_text("\n".join(words) + "\n")
    BertTokenizer(vocab=str(tmp_path / "vocab.txt")).save_pretrained(tmp_path / "bert")
    tok = hf_tokenizer(str(tmp_path / "bert"), max_len=6)
    ids, pad = tok(["A red ball"])
    assert ids[0].tolist() == [2, 5, 6, 7, 3, 0] and pad[0].tolist() == [False] * 5 + [True]
    check_tokenizer(tok, TextConfig(vocab_size=8, pad_id=0, bos_id=2, eos_id=3))
    with pytest.raises(TokenizerError, match="uses pad/bos/eos ids"):
        check_tokenizer(tok, TextConfig(vocab_size=8))
    with pytest.raises(TokenizerError, match="has 8 ids but the text encoder embeds only 5"):
        check_tokenizer(tok, TextConfig(vocab_size=5, pad_id=0, bos_id=2, eos_id=3))


def test_demo_tokenizer_is_trained_once_and_fits_the_encoder(smoke_world):
    cfg = get_config("smoke").model.text
    prepare_demo_tokenizer(smoke_world, cfg)
    tok = demo_tokenizer(smoke_world, cfg)
    assert tok.vocab_size <= cfg.vocab_size and (tok.bos_id, tok.pad_id, tok.eos_id, tok.mask_id) == (0, 1, 2, 4)
    ids, pad = tok(["a small red ball to the left of a blue box"])
    assert ids[0, 0] == 0 and ids[0][~pad[0]][-1] == 2
    again = demo_tokenizer(smoke_world, cfg)                  # cached file, same ids
    assert torch.equal(again(["a red star"])[0], tok(["a red star"])[0])
