"""Models: the input representations, the encoders, the teacher, EMKUM and its fusion heads, and reading or
writing checkpoint files. Building a model is file I/O only; nothing here generates data or trains."""
