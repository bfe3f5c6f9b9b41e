"""Beyond the chapter: a fusion head for image-text matching, with VLMo's joint attention or Switch-BERT's switches.

Switch-BERT (Guo et al., ECCV 2022, arXiv:2306.14182) and VLMo (arXiv:2111.02358); docs/sources.md §8.
The head sees both token sequences of the shared part at once, ``X = [text; image]`` (text first, as VLMo/ViLT):

  joint   every layer is a pre-LN block with joint attention over the whole sequence (VLMo's VL-expert layers)
  switch  every layer's attention is a Switch-Attention Block (SAB): one set of attention weights, four
          interaction modes M_0..M_3 of Switch-BERT Table 1 as attention masks, chosen per sample by a switcher
          (Switch-BERT Eq. 6: π = softmax(MLP(z_i ⊙ z_t)), z = average pooling) through Gumbel-softmax
          (Switch-BERT Eq. 7): soft weighting in training (Switch-BERT Eq. 8, y_soft), hard selection at inference
          (y_hard). X = image, ¬X = text.
  +SIB    the Switch-Input Block: layer l ≥ 2 takes its image part and its text part each from the output of
          layer l-1 or l-2 (four candidates), chosen by a switcher of its own.

The ITM objective samples one hard negative per image and per caption from the softmax of the ITC similarities
(VLMo ``compute_itm_hardneg``; only within the local batch, never a caption of the same image, and on the embedded
world never a caption that fits the picture too: ``thesis_lib.data.world.Descriptions``).
"""
from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from .representations import PreLNBlock


MODES = ("self-self", "self-cross", "cross-self", "joint")     # Switch-BERT Table 1, M_0..M_3 (X = image)
INPUTS = ("(l-1, l-1)", "(l-1, l-2)", "(l-2, l-1)", "(l-2, l-2)")  # SIB candidates: (image from, text from)


def mode_masks(n_text: int, n_image: int, device=None) -> torch.Tensor:
    """(4, T, T) boolean, True = may attend, for the sequence [text; image]; row = query, column = key."""
    T = n_text + n_image
    is_img = torch.arange(T, device=device) >= n_text
    q, k = is_img[:, None], is_img[None, :].expand(T, T)
    return torch.stack([
        q == k,                                  # M_0: image self-attention, text self-attention
        k,                                       # M_1: image self (image keys), text cross (image keys)
        ~k,                                      # M_2: image cross (text keys), text self (text keys)
        torch.ones_like(k),                      # M_3: joint attention, both
    ])


def gumbel_weights(logits: torch.Tensor, tau: float, noise: torch.Tensor | None = None) -> torch.Tensor:
    """Switch-BERT Eq. 7: softmax((log π + g) / τ) with Gumbel noise g = -log(-log u); ``logits`` are log π."""
    if noise is None:
        u = torch.rand_like(logits).clamp_(1e-9, 1 - 1e-9)
        noise = -torch.log(-torch.log(u))
    return F.softmax((logits + noise) / tau, dim=-1)


class Switcher(nn.Module):
    """Switch-BERT Eq. 6: log π from the alignment degree d = AvgPool(X_i) ⊙ AvgPool(X_t);
    soft (training) or hard (eval)."""

    def __init__(self, dim: int, n_choices: int = 4):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(dim, dim), nn.GELU(), nn.Linear(dim, n_choices))
        self.tau = 1.0

    def forward(self, text, image, text_pad) -> torch.Tensor:
        keep = (~text_pad).unsqueeze(-1).to(text.dtype)
        z_t = (text * keep).sum(1) / keep.sum(1).clamp(min=1)
        log_pi = F.log_softmax(self.mlp(image.mean(1) * z_t).float(), dim=-1)
        if self.training:
            return gumbel_weights(log_pi, self.tau)                      # y_soft weights
        return F.one_hot(log_pi.argmax(-1), log_pi.shape[-1]).float()     # y_hard: n* = argmax p(M_n)


class FusionLayer(PreLNBlock):
    """A pre-LN block over [text; image]; ``switch=True`` makes its attention a Switch-Attention Block."""

    def __init__(self, dim: int, num_heads: int, mlp_ratio: float, switch: bool):
        super().__init__(dim, num_heads, mlp_ratio)
        self.switcher = Switcher(dim) if switch else None
        self.last_choice = None                                          # (B, 4) weights of the last call

    def forward(self, x: torch.Tensor, n_text: int, text_pad: torch.Tensor) -> torch.Tensor:
        B, T, _ = x.shape
        keys = torch.cat([~text_pad, text_pad.new_ones(B, T - n_text)], 1)[:, None, None, :]   # (B, 1, 1, T)
        h = self.norm1(x)
        if self.switcher is None:
            x = x + self.attn(h, attn_mask=keys)                       # joint attention
        else:
            w = self.switcher(x[:, :n_text], x[:, n_text:], text_pad)  # (B, 4)
            self.last_choice = w.detach()
            masks = keys.unsqueeze(0) & mode_masks(n_text, T - n_text, x.device)[:, None, None]   # (4, B, 1, T, T)
            x = x + switch_attention(self.attn, h, masks, w, hard=not self.training)
        return x + self.mlp(self.norm2(x))


def switch_attention(attn, x: torch.Tensor, masks: torch.Tensor, w: torch.Tensor, hard: bool) -> torch.Tensor:
    """Switch-BERT Eq. 8 with one set of attention weights (timm ``Attention``): q, k, v are computed once and the modes
    differ only in their masks; Σ_n p(M_n) proj(o_n) = proj(Σ_n p(M_n) o_n) because the weights sum to 1. ``hard``
    (one-hot ``w``, inference): each sample's selected mask only."""
    B, T, _ = x.shape
    q, k, v = attn.qkv(x).reshape(B, T, 3, attn.num_heads, attn.head_dim).permute(2, 0, 3, 1, 4).unbind(0)
    q, k = attn.q_norm(q), attn.k_norm(k)
    if hard:
        o = F.scaled_dot_product_attention(q, k, v, attn_mask=masks[w.argmax(-1), torch.arange(B, device=x.device)])
    else:
        M = masks.shape[0]

        def rep(t):
            return t.unsqueeze(0).expand(M, *t.shape).flatten(0, 1)

        o = F.scaled_dot_product_attention(rep(q), rep(k), rep(v), attn_mask=masks.flatten(0, 1))
        weights = w.T.to(o.dtype)[:, :, None, None, None]                   # (M, B, 1, 1, 1)
        o = (weights * o.view(M, B, *o.shape[1:])).sum(0)
    return attn.proj(attn.norm(o.transpose(1, 2).reshape(B, T, -1)))


class FusionHead(nn.Module):
    """Image-text matching on top of the shared part: fusion layers, VLMo's pooler (dense + tanh on the first
    token, T_CLS) and a 2-way ITM classifier."""

    def __init__(self, dim: int, num_heads: int, mlp_ratio: float, depth: int, kind: str, switch_input: bool):
        super().__init__()
        if switch_input and depth < 2:
            raise ValueError("the Switch-Input Block needs at least 2 fusion layers")
        self.layers = nn.ModuleList(FusionLayer(dim, num_heads, mlp_ratio, kind == "switch") for _ in range(depth))
        self.input_switchers = nn.ModuleList(Switcher(dim) for _ in range(depth - 1)) if switch_input else None
        self.last_inputs: list[torch.Tensor] = []
        self.pooler = nn.Sequential(nn.Linear(dim, dim), nn.Tanh())
        self.itm = nn.Linear(dim, 2)

    def set_tau(self, tau: float) -> None:
        for m in self.modules():
            if isinstance(m, Switcher):
                m.tau = tau

    def _switch_input(self, k: int, prev: torch.Tensor, prev2: torch.Tensor, n_text: int, text_pad) -> torch.Tensor:
        w = self.input_switchers[k](prev[:, :n_text], prev[:, n_text:], text_pad).to(prev.dtype)   # (B, 4)
        self.last_inputs.append(w.detach())
        w_img, w_txt = (w[:, 0] + w[:, 1], w[:, 0] + w[:, 2])       # image from l-1 in candidates 0, 1; text in 0, 2
        img = w_img[:, None, None] * prev[:, n_text:] + (1 - w_img)[:, None, None] * prev2[:, n_text:]
        txt = w_txt[:, None, None] * prev[:, :n_text] + (1 - w_txt)[:, None, None] * prev2[:, :n_text]
        return torch.cat([txt, img], 1)

    def forward(self, image_tokens, text_tokens, text_pad) -> torch.Tensor:
        """(B, 2) ITM logits (index 1 = match) for B image-caption pairs given as token sequences."""
        n_text = text_tokens.shape[1]
        x = torch.cat([text_tokens, image_tokens], 1)
        outputs = [x]
        self.last_inputs = []
        for k, layer in enumerate(self.layers):
            if self.input_switchers is not None and k > 0:
                x = self._switch_input(k - 1, outputs[-1], outputs[-2], n_text, text_pad)
            x = layer(x, n_text, text_pad)
            outputs.append(x)
        return self.itm(self.pooler(x[:, 0]))

    def choices(self) -> dict:
        """The last call's switch weights: {"modes": [(B, 4) per layer], "inputs": [(B, 4) per layer ≥ 2]}."""
        return {"modes": [m.last_choice for m in self.layers if m.last_choice is not None],
                "inputs": list(self.last_inputs)}


def anneal(taus: tuple, progress: float) -> float:
    """Exponential annealing of the Gumbel temperature from taus[0] (progress 0) to taus[1] (progress 1)."""
    start, end = taus
    return start * math.exp(math.log(end / start) * min(max(progress, 0.0), 1.0))


def hard_negatives(sim: torch.Tensor, fits: torch.Tensor, generator=None, n: int | None = None):
    """One negative caption per image and one negative image per caption, drawn ∝ softmax(similarity) among the
    pairs that do not fit (VLMo's ITM hard negatives). ``sim`` (B, B) image × caption logits; ``fits`` (B, B) True
    where caption j may describe the image of pair i: its own image's captions (the diagonal included), and, where
    the data says what captions name (``thesis_lib.data.world.Descriptions``), any caption naming nothing the
    picture lacks, so that a negative is a true one. Only the first ``n`` pairs get negatives (drawn from the whole
    batch). Returns (caption index per image, image index per caption)."""
    sim = sim.float().masked_fill(fits, float("-inf"))
    if torch.isinf(sim).all(1).any() or torch.isinf(sim).all(0).any():
        raise ValueError("a batch in which some caption fits every image (or some image every caption) has no "
                         "negative to draw")
    p_i2t, p_t2i = F.softmax(sim[:n], 1), F.softmax(sim.t()[:n], 1)
    return (torch.multinomial(p_i2t, 1, generator=generator).squeeze(1),
            torch.multinomial(p_t2i, 1, generator=generator).squeeze(1))


def itm_loss(head: FusionHead, image, text, scale: torch.Tensor, fits: torch.Tensor, n: int = 0,
             negatives: str = "hard") -> torch.Tensor:
    """Cross-entropy of the ITM head on B positives, B (image, negative caption) and B (negative image, caption)
    pairs, B = the first ``n`` pairs of the batch (0: all, as VLMo); ``image`` and ``text`` are the shared part's
    Features (tokens + padding mask), ``fits`` as in ``hard_negatives``; ``negatives`` "hard" (VLMo) or "random"
    (uniform among the true negatives: the same draw with equal similarities)."""
    B = n or image.x.shape[0]
    with torch.no_grad():
        sim = scale * image.x @ text.x.t() if negatives == "hard" else torch.zeros_like(fits, dtype=torch.float)
        neg_txt, neg_img = hard_negatives(sim, fits, n=B)
    img_tok, txt_tok, pad = image.tokens[:B], text.tokens[:B], text.padding_mask[:B]
    img = torch.cat([img_tok, img_tok, image.tokens[neg_img]])
    txt = torch.cat([txt_tok, text.tokens[neg_txt], txt_tok])
    pad = torch.cat([pad, text.padding_mask[neg_txt], pad])
    labels = torch.cat([torch.ones(B), torch.zeros(2 * B)]).long().to(img.device)
    return F.cross_entropy(head(img, txt, pad).float(), labels)
