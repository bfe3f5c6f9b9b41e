"""The modality-specific encoders of EMKUM: Data2Vec2 image and text models, and transformers alternatives.

Every encoder has two halves that EMKUM calls in turn (``models/emkum.py``, where the TTE is added between or after
them): ``embed_inputs(inputs) -> (H_0, padding_mask)``, the block input after the embedding LayerNorm (where VLMo
adds its TTE), and ``blocks(H_0, padding_mask) -> H_L``; calling the encoder runs both. Parameter names follow the
original checkpoints (docs/sources.md §7) so that ``thesis_lib.models.checkpoints`` maps keys one-to-one.
"""
from __future__ import annotations

import torch
from torch import nn

from ..config import ImageConfig, TextConfig
from .representations import ImageEmbedding, PostLNBlock, TextEmbedding, TransformerStack


class Data2Vec2ImageEncoder(nn.Module):
    """Data2Vec2 ViT-B/16 (fairseq ``Data2VecMultiModel``, image, ``extract_features``): patch embedding + fixed
    2-D sin-cos positions (I_CLS gets none) -> LayerNorm -> post-LN blocks, no final norm. Output (B, N+1, D)."""

    def __init__(self, cfg: ImageConfig, dim: int, depth: int, num_heads: int, mlp_ratio: float = 4.0,
                 eps: float = 1e-6):
        super().__init__()
        self.embed = ImageEmbedding(cfg, dim)                  # local_encoder + extra_tokens + positions
        self.norm = nn.LayerNorm(dim, eps=eps)                 # context_encoder.norm
        self.blocks = TransformerStack([PostLNBlock(dim, num_heads, mlp_ratio, eps) for _ in range(depth)])

    def embed_inputs(self, images: torch.Tensor):
        return self.norm(self.embed(images)), None             # H_{v,0}: (B, N+1, D); no padding

    def forward(self, images: torch.Tensor):
        return self.blocks(*self.embed_inputs(images)), None


class Data2Vec2TextEncoder(nn.Module):
    """Data2Vec2 text (RoBERTa-like, GPT-2 BPE): token + learned positions -> LayerNorm -> dropout -> post-LN blocks.

    ``dropout`` is the training dropout of the thesis code's text path (``ModelConfig.text_dropout``; 0.1 there,
    docs/sources.md §9): on the embedding output (fairseq ``TextLocalEncoder.dropout_module``) and in every block
    (``PostLNBlock``). It acts in train mode only; at 0 (the default) the encoder computes exactly what it computes
    without it."""

    def __init__(self, cfg: TextConfig, dim: int, depth: int, num_heads: int, mlp_ratio: float = 4.0,
                 eps: float = 1e-5, dropout: float = 0.0):
        super().__init__()
        self.pad_id = cfg.pad_id
        self.embed = TextEmbedding(cfg, dim)                   # local_encoder.embed_tokens / embed_positions
        self.norm = nn.LayerNorm(dim, eps=eps)                 # local_encoder.layernorm_embedding
        self.dropout = nn.Dropout(dropout)                     # local_encoder.dropout_module
        self.blocks = TransformerStack([PostLNBlock(dim, num_heads, mlp_ratio, eps, dropout) for _ in range(depth)])

    def set_dropout(self, p: float) -> None:
        """The training dropout rate of the embeddings and of every block (an encoder loaded from a checkpoint is
        built without; ``EMKUM`` sets ``ModelConfig.text_dropout`` here). No parameter changes."""
        self.dropout.p = float(p)
        for block in self.blocks.blocks:
            block.set_dropout(p)

    def embed_inputs(self, tokens: torch.Tensor):
        padding_mask = tokens.eq(self.pad_id)                  # True = pad
        return self.dropout(self.norm(self.embed(tokens))), padding_mask    # H_{w,0}: (B, M+2, D)

    def forward(self, tokens: torch.Tensor):
        h, padding_mask = self.embed_inputs(tokens)
        return self.blocks(h, padding_mask), padding_mask


class HFEncoder(nn.Module):
    """A transformers model (``BertModel``, ``Data2VecTextModel``, ``Data2VecVisionModel``) used as an encoder.
    ``embed_inputs`` runs the model's embedding module; ``blocks`` runs the model on the same inputs with that
    module's output replaced by the H_0 it is given (a forward hook), so that what EMKUM adds in between (the TTE
    before the encoders) enters the layers as it would in the model."""

    def __init__(self, model: nn.Module, modality: str, pad_id: int | None = None):
        super().__init__()
        self.model, self.modality, self.pad_id = model, modality, pad_id
        self._inputs = self._h0 = None
        model.embeddings.register_forward_hook(self._use_h0)

    def _use_h0(self, module, args, output):
        if self._h0 is None:
            return output
        return (self._h0,) + tuple(output[1:]) if isinstance(output, tuple) else self._h0  # vision: + patch grid

    def embed_inputs(self, inputs: torch.Tensor):
        self._inputs = inputs                                  # what ``blocks`` runs the model on
        if self.modality == "text":
            return self.model.embeddings(input_ids=inputs), inputs.eq(self.pad_id)
        out = self.model.embeddings(inputs)
        return (out[0] if isinstance(out, tuple) else out), None

    def blocks(self, h0: torch.Tensor, padding_mask: torch.Tensor | None = None) -> torch.Tensor:
        self._h0 = h0
        try:
            if self.modality == "text":
                return self.model(input_ids=self._inputs, attention_mask=(~padding_mask).long()).last_hidden_state
            return self.model(pixel_values=self._inputs).last_hidden_state
        finally:
            self._h0 = None

    def forward(self, inputs: torch.Tensor):
        h0, padding_mask = self.embed_inputs(inputs)
        return self.blocks(h0, padding_mask), padding_mask


def hf_encoder(name_or_dir: str, modality: str, keep: int, pad_id: int | None = None,
               pretrained: bool = True) -> HFEncoder:
    """The first ``keep`` layers of a transformers model by hub name or local folder (``from_pretrained``);
    the pooler is dropped. ``pretrained=False`` builds the same architecture with random weights."""
    from transformers import AutoConfig, AutoModel
    kwargs = {"num_hidden_layers": keep, "add_pooling_layer": False}
    if pretrained:
        model = AutoModel.from_pretrained(name_or_dir, **kwargs)
    else:
        model = AutoModel.from_config(AutoConfig.from_pretrained(name_or_dir, num_hidden_layers=keep),
                                      add_pooling_layer=False)
    return HFEncoder(model, modality, pad_id)


def bert_encoder(text: TextConfig, keep: int = 6) -> HFEncoder:
    """``bert-base-uncased``'s architecture with random weights (the final thesis text encoder, 66.4 M at 6 layers);
    load the real weights with ``hf_encoder("bert-base-uncased", "text", 6)``."""
    from transformers import BertConfig, BertModel
    cfg = BertConfig(vocab_size=text.vocab_size, num_hidden_layers=keep, max_position_embeddings=512,
                     pad_token_id=text.pad_id)
    return HFEncoder(BertModel(cfg, add_pooling_layer=False), "text", text.pad_id)
