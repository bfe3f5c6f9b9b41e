"""Tiny random checkpoints with the original files' exact key layouts (docs/sources.md §7.5), and reference
forward passes written directly from those raw tensors, independent of thesis_lib's modules."""
import json
import math

import torch
from torch.nn import functional as F

IMG = "modality_encoders.IMAGE."
TXT = "modality_encoders.TEXT."


def _block_keys(prefix, D, g):
    t = {}
    for norm in ("norm1", "norm2"):
        t[prefix + f"{norm}.weight"] = 1 + 0.1 * torch.randn(D, generator=g)
        t[prefix + f"{norm}.bias"] = 0.1 * torch.randn(D, generator=g)
    shapes = {"attn.qkv.weight": (3 * D, D), "attn.qkv.bias": (3 * D,), "attn.proj.weight": (D, D),
              "attn.proj.bias": (D,), "mlp.fc1.weight": (4 * D, D), "mlp.fc1.bias": (4 * D,),
              "mlp.fc2.weight": (D, 4 * D), "mlp.fc2.bias": (D,)}
    for k, s in shapes.items():
        t[prefix + k] = 0.2 * torch.randn(*s, generator=g) / math.sqrt(s[-1])
    return t


def sincos(D, grid):
    omega = 1 / 10000 ** (torch.arange(D // 4, dtype=torch.float64) / (D / 4))
    out = []
    for r in range(grid):
        for c in range(grid):
            out.append(torch.cat([torch.sin(c * omega), torch.cos(c * omega), torch.sin(r * omega), torch.cos(r * omega)]))
    return torch.stack(out).float()


def d2v_image_file(path, D=32, H=2, P=0, L=4, img=32, patch=8, fp16=True, seed=0):
    g = torch.Generator().manual_seed(seed)
    sd = {IMG + "extra_tokens": 0.1 * torch.randn(1, 1, D, generator=g),
          IMG + "local_encoder.proj.weight": 0.05 * torch.randn(D, 3, patch, patch, generator=g),
          IMG + "local_encoder.proj.bias": 0.1 * torch.randn(D, generator=g),
          IMG + "fixed_positional_encoder.positions": sincos(D, img // patch)[None],
          IMG + "context_encoder.norm.weight": 1 + 0.1 * torch.randn(D, generator=g),
          IMG + "context_encoder.norm.bias": 0.1 * torch.randn(D, generator=g)}
    for i in range(P):
        sd.update(_block_keys(IMG + f"context_encoder.blocks.{i}.", D, g))
    for j in range(3):
        sd[IMG + f"decoder.blocks.{j}.0.weight"] = torch.randn(D, D // 4, 3, 3, generator=g)
        sd[IMG + f"decoder.blocks.{j}.0.bias"] = torch.randn(D, generator=g)
    sd[IMG + "decoder.proj.weight"] = torch.randn(D, D, generator=g)
    sd[IMG + "decoder.proj.bias"] = torch.randn(D, generator=g)
    for n in range(L):
        sd.update(_block_keys(f"blocks.{n}.", D, g))
    ema = {k: v.float() + 0.01 for k, v in sd.items() if "decoder" not in k}
    if fp16:
        sd = {k: v.half() for k, v in sd.items()}
    sd["_ema"] = ema
    cfg = {"model": {"depth": L, "embed_dim": D, "num_heads": H, "norm_eps": 1e-6, "layer_norm_first": False,
                     "supported_modality": "IMAGE", "modalities": {"image": {
                         "prenet_depth": P, "num_extra_tokens": 1, "patch_size": patch, "input_size": img,
                         "embed_dim": D}}}}
    torch.save({"model": sd, "args": None, "cfg": cfg, "optimizer_history": []}, path)
    return {k: (v.float() if torch.is_tensor(v) else v) for k, v in sd.items()}


def d2v_text_file(path, D=32, H=2, V=60, M=20, L=3, seed=1):
    g = torch.Generator().manual_seed(seed)
    tok = 0.1 * torch.randn(V, D, generator=g)
    tok[1] = 0
    pos = 0.1 * torch.randn(M + 2, D, generator=g)
    pos[1] = 0
    sd = {TXT + "local_encoder.embed_tokens.weight": tok, TXT + "local_encoder.embed_positions.weight": pos,
          TXT + "local_encoder.layernorm_embedding.weight": 1 + 0.1 * torch.randn(D, generator=g),
          TXT + "local_encoder.layernorm_embedding.bias": 0.1 * torch.randn(D, generator=g),
          TXT + "decoder.blocks.0.0.weight": torch.randn(D, D, 9, generator=g),
          TXT + "decoder.blocks.0.0.bias": torch.randn(D, generator=g),
          TXT + "decoder.proj.0.weight": torch.randn(2 * D, D, generator=g)}
    for n in range(L):
        sd.update(_block_keys(f"blocks.{n}.", D, g))
    sd["_ema"] = {k[len("blocks."):]: v for k, v in sd.items() if k.startswith("blocks.")}
    cfg = {"model": {"depth": L, "embed_dim": D, "num_heads": H, "norm_eps": 1e-5,
                     "modalities": {"text": {"prenet_depth": 0, "max_source_positions": M}}}}
    torch.save({"model": sd, "args": None, "cfg": cfg}, path)
    return sd


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
    x = sd[TXT + "local_encoder.embed_tokens.weight"][tokens] + sd[TXT + "local_encoder.embed_positions.weight"][positions]
    x = F.layer_norm(x, (D,), sd[TXT + "local_encoder.layernorm_embedding.weight"],
                     sd[TXT + "local_encoder.layernorm_embedding.bias"], 1e-5)
    for n in range(keep):
        x = _post_ln_block(x, sd, f"blocks.{n}.", H, 1e-5, key_pad=pad)
    return x


def beit_relative_index(w):
    """unilm BEiT's relative_position_index for a w × w grid plus the CLS token."""
    coords = torch.stack(torch.meshgrid(torch.arange(w), torch.arange(w), indexing="ij")).flatten(1)
    rel = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0) + (w - 1)
    n_dist = (2 * w - 1) ** 2 + 3
    idx = torch.zeros(w * w + 1, w * w + 1, dtype=torch.long)
    idx[1:, 1:] = rel[..., 0] * (2 * w - 1) + rel[..., 1]
    idx[0, :], idx[:, 0], idx[0, 0] = n_dist - 3, n_dist - 2, n_dist - 1
    return idx


def beitv2_file(path, D=32, H=2, L=2, img=32, patch=8, vocab=16, seed=2):
    g = torch.Generator().manual_seed(seed)
    w = img // patch
    sd = {"cls_token": 0.1 * torch.randn(1, 1, D, generator=g), "mask_token": torch.randn(1, 1, D, generator=g),
          "patch_embed.proj.weight": 0.05 * torch.randn(D, 3, patch, patch, generator=g),
          "patch_embed.proj.bias": 0.1 * torch.randn(D, generator=g),
          "rel_pos_bias.relative_position_bias_table": 0.5 * torch.randn((2 * w - 1) ** 2 + 3, H, generator=g),
          "rel_pos_bias.relative_position_index": beit_relative_index(w),
          "norm.weight": 1 + 0.1 * torch.randn(D, generator=g), "norm.bias": 0.1 * torch.randn(D, generator=g),
          "lm_head.weight": torch.randn(vocab, D, generator=g), "lm_head.bias": torch.randn(vocab, generator=g)}

    def block(prefix):
        b = {k: v for k, v in _block_keys(prefix, D, g).items() if not k.endswith("attn.qkv.bias")}
        b[prefix + "attn.q_bias"] = 0.1 * torch.randn(D, generator=g)
        b[prefix + "attn.v_bias"] = 0.1 * torch.randn(D, generator=g)
        b[prefix + "gamma_1"] = 0.1 + 0.05 * torch.randn(D, generator=g)
        b[prefix + "gamma_2"] = 0.1 + 0.05 * torch.randn(D, generator=g)
        return b
    for n in range(L):
        sd.update(block(f"blocks.{n}."))
    for n in range(2):
        sd.update(block(f"cls_pt_layers.{n}."))
    torch.save({"model": sd, "optimizer": None, "epoch": 1599, "args": None}, path)
    return sd


def beitv2_reference(sd, images, H, L, patch, final_norm=True):
    D = sd["cls_token"].shape[-1]
    x = F.conv2d(images, sd["patch_embed.proj.weight"], sd["patch_embed.proj.bias"], stride=patch).flatten(2).transpose(1, 2)
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


def _bytes_to_unicode():  # GPT-2's reversible byte -> printable character map
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


def gpt2_tokenizer_files(folder):
    """A tiny GPT-2 BPE (256 byte symbols + 4 merges) and a fairseq dict.txt in frequency (not id) order (plus one
    madeupword line, as the real file has). Returns the GPT-2 id of each dict line."""
    alphabet = _bytes_to_unicode()
    vocab = {alphabet[b]: b for b in range(256)}
    merges = ["h e", "l l", "he ll", "Ġ w"]
    for m in merges:
        vocab[m.replace(" ", "")] = len(vocab)
    (folder / "encoder.json").write_text(json.dumps(vocab))
    (folder / "vocab.bpe").write_text("#version: 0.2\n" + "\n".join(merges) + "\n")
    order = list(range(len(vocab)))[::-1]                     # line k holds GPT-2 id order[k]
    (folder / "dict.txt").write_text("".join(f"{g} {1000 - k}\n" for k, g in enumerate(order)) + "madeupword0000 0\n")
    return order
