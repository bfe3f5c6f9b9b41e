"""Reference forward passes written directly from the raw tensors of the tiny checkpoints
(thesis_lib.full_scale.fixtures writes them in the original files' key layouts, docs/sources.md §7.5),
independent of thesis_lib's modules."""
import math

import torch
from torch.nn import functional as F

from thesis_lib.full_scale.fixtures import (  # noqa: F401  (the writers live in the package: make rehearsal uses them)
    IMG,
    TXT,
    beit_relative_index,
    beitv2_file,
    d2v_image_file,
    d2v_text_file,
    gpt2_tokenizer_files,
    sincos,
)


def _attention(x, sd, p, H, key_pad=None, bias=None, qkv_bias=None):
    B, T, D = x.shape
    b = sd[p + "attn.qkv.bias"] if qkv_bias is None else qkv_bias
    q, k, v = F.linear(x, sd[p + "attn.qkv.weight"], b).reshape(B, T, 3, H, D // H).permute(2, 0, 3, 1, 4)
    logits = q @ k.transpose(-1, -2) / math.sqrt(D // H)
    if bias is not None:
        logits = logits + bias
    if key_pad is not None:
        logits = logits.masked_fill(key_pad[:, None, None, :], float("-inf"))
    out = (logits.softmax(-1) @ v).transpose(1, 2).reshape(B, T, D)
    return F.linear(out, sd[p + "attn.proj.weight"], sd[p + "attn.proj.bias"])


def _post_ln_block(x, sd, p, H, eps, key_pad=None):
    D = x.shape[-1]
    x = F.layer_norm(x + _attention(x, sd, p, H, key_pad), (D,), sd[p + "norm1.weight"], sd[p + "norm1.bias"], eps)
    f = F.linear(F.gelu(F.linear(x, sd[p + "mlp.fc1.weight"], sd[p + "mlp.fc1.bias"])), sd[p + "mlp.fc2.weight"],
                 sd[p + "mlp.fc2.bias"])
    return F.layer_norm(x + f, (D,), sd[p + "norm2.weight"], sd[p + "norm2.bias"], eps)


def d2v_image_reference(sd, images, H, P, keep, patch):
    D = sd[IMG + "extra_tokens"].shape[-1]
    x = F.conv2d(images, sd[IMG + "local_encoder.proj.weight"], sd[IMG + "local_encoder.proj.bias"], stride=patch)
    x = x.flatten(2).transpose(1, 2) + sd[IMG + "fixed_positional_encoder.positions"]
    x = torch.cat([sd[IMG + "extra_tokens"].expand(len(x), -1, -1), x], 1)
    x = F.layer_norm(x, (D,), sd[IMG + "context_encoder.norm.weight"], sd[IMG + "context_encoder.norm.bias"], 1e-6)
    for i in range(P):
        x = _post_ln_block(x, sd, IMG + f"context_encoder.blocks.{i}.", H, 1e-6)
    for n in range(keep):
        x = _post_ln_block(x, sd, f"blocks.{n}.", H, 1e-6)
    return x


def d2v_text_reference(sd, tokens, H, keep):
    D = sd[TXT + "local_encoder.embed_tokens.weight"].shape[1]
    pad = tokens.eq(1)
    positions = torch.cumsum(~pad, 1) * (~pad) + 1                   # fairseq make_positions
    x = (sd[TXT + "local_encoder.embed_tokens.weight"][tokens]
         + sd[TXT + "local_encoder.embed_positions.weight"][positions])
    x = F.layer_norm(x, (D,), sd[TXT + "local_encoder.layernorm_embedding.weight"],
                     sd[TXT + "local_encoder.layernorm_embedding.bias"], 1e-5)
    for n in range(keep):
        x = _post_ln_block(x, sd, f"blocks.{n}.", H, 1e-5, key_pad=pad)
    return x


def beitv2_reference(sd, images, H, L, patch, final_norm=True):
    D = sd["cls_token"].shape[-1]
    x = F.conv2d(images, sd["patch_embed.proj.weight"], sd["patch_embed.proj.bias"],
                 stride=patch).flatten(2).transpose(1, 2)
    x = torch.cat([sd["cls_token"].expand(len(x), -1, -1), x], 1)
    idx = sd["rel_pos_bias.relative_position_index"]
    bias = sd["rel_pos_bias.relative_position_bias_table"][idx.view(-1)].view(*idx.shape, H).permute(2, 0, 1)[None]
    for n in range(L):
        p = f"blocks.{n}."
        qkv_bias = torch.cat([sd[p + "attn.q_bias"], torch.zeros(D), sd[p + "attn.v_bias"]])
        h = F.layer_norm(x, (D,), sd[p + "norm1.weight"], sd[p + "norm1.bias"], 1e-6)
        x = x + sd[p + "gamma_1"] * _attention(h, sd, p, H, bias=bias, qkv_bias=qkv_bias)
        h = F.layer_norm(x, (D,), sd[p + "norm2.weight"], sd[p + "norm2.bias"], 1e-6)
        f = F.linear(F.gelu(F.linear(h, sd[p + "mlp.fc1.weight"], sd[p + "mlp.fc1.bias"])), sd[p + "mlp.fc2.weight"],
                     sd[p + "mlp.fc2.bias"])
        x = x + sd[p + "gamma_2"] * f
    if final_norm:
        x = F.layer_norm(x, (D,), sd["norm.weight"], sd["norm.bias"], 1e-6)
    return x[:, 0]


