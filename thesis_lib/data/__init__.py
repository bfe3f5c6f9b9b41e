"""Data: the embedded world and its files, the real datasets' readers, the tokenizers, the image views, the
training pairs and the evaluation sets. Nothing here knows about models."""
