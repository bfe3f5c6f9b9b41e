"""thesis_lib: the executable reproduction of the thesis chapter on token-type embeddings (EMKUM)."""
from .config import PRESETS, VARIANTS, ExperimentConfig, get_config
from .errors import (CheckpointError, ConfigError, DataError, DeviceError, NonFiniteLossError, OutputDirError,
                     ResultConflictError, ThesisError, TokenizerError)

__all__ = [
    "PRESETS", "VARIANTS", "ExperimentConfig", "get_config",
    "ThesisError", "ConfigError", "DataError", "CheckpointError", "TokenizerError", "ResultConflictError",
    "NonFiniteLossError", "DeviceError", "OutputDirError",
]
