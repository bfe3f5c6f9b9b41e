import math

import pytest
import torch
from torch.nn import functional as F

from thesis_lib import get_config
from thesis_lib.config import ImageConfig, TextConfig
from thesis_lib.models.representations import (
    ImageEmbedding,
    PostLNBlock,
    TextEmbedding,
    TransformerStack,
    patchify,
    PreLNBlock,
    sincos_2d,
)

VIT_B_BLOCK = 7_087_872  # 12·768² + 13·768 (qkv, proj, fc1, fc2 with biases; two LayerNorms)


def n_params(module):
    return sum(p.numel() for p in module.parameters())


def test_thesis_patch_arithmetic():
    img = get_config("thesis").model.image
    assert (img.img_size, img.patch_size, img.grid) == (224, 16, 14)
    assert img.num_patches == 196            # N = 224·224 / 16²
    assert img.patch_dim == 768              # 3·16·16, not 256 (errata 3)
    x = torch.randn(2, 3, 224, 224)
    assert patchify(x, 16).shape == (2, 196, 768)


def test_patchify_is_row_major_and_matches_the_conv_embedding():
    cfg = ImageConfig(img_size=32, patch_size=8)
    emb = ImageEmbedding(cfg, dim=16)
    x = torch.randn(3, 3, 32, 32)
    # the Conv2d patch embedding is a linear map of the flattened patch (C, P, P order)
    w = emb.patch_embed.proj.weight.reshape(16, -1)
    by_hand = patchify(x, 8) @ w.T + emb.patch_embed.proj.bias
    assert torch.allclose(emb.patch_embed(x), by_hand, atol=1e-5)
    # patch 1 is the second patch of the first row
    assert torch.equal(patchify(x, 8)[:, 1], x[:, :, :8, 8:16].reshape(3, -1))


def test_image_cls_gets_zero_positional_encoding():
    cfg = ImageConfig(img_size=32, patch_size=8)
    emb = ImageEmbedding(cfg, dim=16)
    pe = emb.positional_encoding()
    assert pe.shape == (cfg.num_patches + 1, 16)
    assert torch.count_nonzero(pe[0]) == 0                   # Eq. 2: T_pos = [0, t_1, ..., t_N]
    assert torch.all(pe[1:].abs().sum(-1) > 0)
    x = torch.randn(2, 3, 32, 32)
    h0 = emb(x)
    assert h0.shape == (2, cfg.num_patches + 1, 16)
    assert torch.allclose(h0[:, 0], emb.cls_token[0].expand(2, -1))   # nothing added to I_CLS
    assert torch.allclose(h0[:, 1:], emb.patch_embed(x) + pe[1:])     # Eq. 4


def test_sincos_table_matches_the_mae_layout():
    pe = sincos_2d(8, 3)
    assert pe.shape == (9, 8)
    omega = 1 / 10000 ** (torch.arange(2) / 2)
    row, col = 1, 2                                          # token 5
    want = torch.cat([torch.sin(col * omega), torch.cos(col * omega), torch.sin(row * omega), torch.cos(row * omega)])
    assert torch.allclose(pe[row * 3 + col], want.float(), atol=1e-6)
    # 2-D structure: the nearer two positions are on the grid, the more similar their encodings
    big = sincos_2d(768, 14)
    sim = F.normalize(big, dim=-1) @ F.normalize(big, dim=-1).T
    assert sim[0, 1] > sim[0, 2] > sim[0, 13] and sim[0, 14] > sim[0, 28]


@pytest.mark.parametrize("rule", ["zero", "learned"])
def test_text_positions_follow_eq7(rule):
    cfg = TextConfig(vocab_size=50, max_len=8, max_positions=16, cls_position=rule, mask_id=49)
    emb = TextEmbedding(cfg, dim=12)
    tokens = torch.tensor([[0, 7, 8, 9, 2, 1, 1], [0, 5, 2, 1, 1, 1, 1]])    # T_CLS w.. T_SEP pad..
    pos = emb.positions(tokens)
    if rule == "zero":   # T_CLS -> zero row, w_1 -> first position, T_SEP has a position
        assert pos.tolist() == [[1, 2, 3, 4, 5, 1, 1], [1, 2, 3, 1, 1, 1, 1]]
    else:                # fairseq: every real token counts from pad + 1
        assert pos.tolist() == [[2, 3, 4, 5, 6, 1, 1], [2, 3, 4, 1, 1, 1, 1]]
    out = emb(tokens)
    assert out.shape == (2, 7, 12)                           # E_w + T^pos_w: (M+2) × D per caption
    pe = emb.embed_positions(pos)
    assert torch.count_nonzero(pe[:, 5:]) == 0               # pads get the zero row
    if rule == "zero":
        assert torch.count_nonzero(pe[:, 0]) == 0            # Eq. 7: T_CLS gets 0
        assert torch.count_nonzero(pe[0, 4]) > 0             # ... T_SEP does not


def test_PreLNBlock_is_exactly_eqs_9_and_10():
    torch.manual_seed(0)
    D, H = 16, 4
    block = PreLNBlock(D, H).eval()
    x = torch.randn(2, 5, D)

    def mha(h):  # multi-head attention written out from the block's own weights
        qkv = F.linear(h, block.attn.qkv.weight, block.attn.qkv.bias).reshape(2, 5, 3, H, D // H)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)
        a = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(D // H), dim=-1)
        o = (a @ v).transpose(1, 2).reshape(2, 5, D)
        return F.linear(o, block.attn.proj.weight, block.attn.proj.bias)

    def ffn(h):
        return block.mlp.fc2(F.gelu(block.mlp.fc1(h)))

    h_mid = mha(F.layer_norm(x, (D,), block.norm1.weight, block.norm1.bias, 1e-6)) + x          # Eq. 9
    h_out = ffn(F.layer_norm(h_mid, (D,), block.norm2.weight, block.norm2.bias, 1e-6)) + h_mid  # Eq. 10
    assert torch.allclose(block(x), h_out, atol=1e-5)


def test_post_ln_block_is_the_data2vec2_altblock():
    torch.manual_seed(0)
    block = PostLNBlock(16, 4).eval()
    x = torch.randn(2, 5, 16)
    mid = block.norm1(x + block.attn(x))
    assert torch.allclose(block(x), block.norm2(mid + block.mlp(mid)), atol=1e-6)


def test_padding_mask_keeps_real_tokens_independent_of_padding():
    torch.manual_seed(0)
    stack = TransformerStack([PreLNBlock(16, 4) for _ in range(2)]).eval()
    x = torch.randn(1, 4, 16)
    padded = torch.cat([x, torch.randn(1, 3, 16)], dim=1)
    mask = torch.tensor([[False] * 4 + [True] * 3])
    assert torch.allclose(stack(padded, mask)[:, :4], stack(x), atol=1e-5)


def test_vit_b_parameter_counts():
    assert n_params(PreLNBlock(768, 12)) == VIT_B_BLOCK
    assert n_params(PostLNBlock(768, 12)) == VIT_B_BLOCK
    emb = ImageEmbedding(get_config("thesis").model.image, 768)
    assert n_params(emb) == 590_592 + 768                   # patch projection + I_CLS (sin-cos table is fixed)
    stack = 590_592 + 768 + 1_536 + 6 * VIT_B_BLOCK         # + input LayerNorm + first 6 blocks
    assert stack == 43_120_128                              # the thesis's 43.1 M image encoder
