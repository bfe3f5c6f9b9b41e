"""thesis_lib: the executable reproduction of the thesis chapter on token-type embeddings (EMKUM).

Package-level entry points: ``get_config``, ``build_model``, ``load_karpathy_split``, ``retrieval_recalls``,
``zero_shot_accuracy``, ``run_experiment``; a trained model in hand (``thesis_lib.api``): ``load``, ``Loaded``,
``rank``, ``list_models`` (the shipped models ``load`` takes by name), ``examples`` (pictures to try them on).
"""
from .version import __version__  # noqa: F401
from .config import PRESETS, ExperimentConfig, get_config  # noqa: E402
from .data.datasets import load_karpathy_split  # noqa: E402
from .errors import (CheckpointError, ConfigError, DataError, DeviceError, MissingResultsError,  # noqa: E402
                     NonFiniteLossError, OutputDirError, ResultConflictError, ThesisError, TokenizerError)
from .models.emkum import build_model  # noqa: E402
from .variants import VARIANTS  # noqa: E402


def __getattr__(name):  # lazily, so `python -m thesis_lib.training.run` or `.evaluate` does not import it twice
    if name == "run_experiment":
        from .training.run import run_experiment
        return run_experiment
    if name in ("retrieval_recalls", "zero_shot_accuracy"):
        from . import evaluation
        return getattr(evaluation, name)
    if name in ("load", "Loaded", "rank", "list_models", "examples"):
        from . import api
        return getattr(api, name)
    raise AttributeError(f"module 'thesis_lib' has no attribute {name!r}")

__all__ = [
    "PRESETS", "VARIANTS", "ExperimentConfig", "get_config", "build_model", "load_karpathy_split",
    "retrieval_recalls", "zero_shot_accuracy", "run_experiment", "load", "Loaded", "rank",
    "list_models", "examples",
    "ThesisError", "ConfigError", "DataError", "CheckpointError", "TokenizerError", "ResultConflictError",
    "NonFiniteLossError", "DeviceError", "OutputDirError", "MissingResultsError",
]
