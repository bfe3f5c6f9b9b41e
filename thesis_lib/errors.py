"""Exception types: every user-facing failure raises one of these with a message that says what to fix.

The CLI (``python -m thesis_lib.training.run``) prints such an error as one line and exits with code 2; any other
exception is a bug and keeps its traceback (``CliErrors``). The catalogue of bad inputs and their messages is in the
README.
"""
import sys


class ThesisError(Exception):
    """Base class: a problem with the user's input or environment, not a bug."""


class ConfigError(ThesisError, ValueError):
    """Unknown preset/variant/field, or a value of the wrong type."""


class DataError(ThesisError):
    """A missing path, malformed annotation file, unreadable image or empty split."""


class DataWarning(UserWarning):
    """Data left out and counted, not a stop: a training image that did not decode (its pair replaced), a webdataset
    shard that is missing (skipped, while few are)."""


class DownloadError(DataError):
    """A download that failed: an HTTP error (its status), an unreachable host, a transfer cut short, a file that is
    not in the mirror (``THESIS_MIRROR``)."""


class CheckpointError(ThesisError):
    """A checkpoint file with missing/unexpected keys, wrong shapes, or from another run."""


class TokenizerError(ThesisError):
    """A tokenizer that does not fit the text encoder (vocabulary size, special tokens)."""


class ResultConflictError(ThesisError):
    """A result or run directory that belongs to another config, or is locked by another process."""


class MissingRunsError(ThesisError):
    """Runs a notebook reads with train=False (collect only) that have no result; ``jobs``: their ``run_experiment``
    arguments."""

    def __init__(self, message: str, jobs: list[dict] = ()):
        super().__init__(message)
        self.jobs = list(jobs)


class NonFiniteLossError(ThesisError):
    """Training produced a NaN/Inf loss; the last good checkpoint is kept."""


class DeviceError(ThesisError):
    """A device that this machine does not have (e.g. ``cuda`` without a GPU)."""


class OutputDirError(ThesisError):
    """An output directory that cannot be created or written."""


class DistributedError(ThesisError):
    """A run of several processes that cannot start or went out of step: launch variables missing or unreadable
    (torchrun's or srun's), a process that left while the others waited for it."""


class SharedFolderError(DistributedError, OutputDirError):
    """A folder that a run of several processes needs every process to see (the output folder, the teacher-target
    cache) which some process does not see as rank 0 does."""


class DistributedTimeoutError(DistributedError):
    """A process waited for another longer than the process-group timeout (--dist-timeout, THESIS_DIST_TIMEOUT)."""


class MissingResultsError(ThesisError):
    """A figure whose runs have no stored results (of the selected seeds) yet; names the runs it needs and which are
    missing, and nothing is drawn."""


class CliErrors:
    """``with CliErrors(debug, interrupted) as cli:`` around a command line's work (in the caller's own frame): a
    ``ThesisError`` becomes one line on stderr and ``cli.code`` 2, Ctrl-C prints ``interrupted`` and 130; with
    ``debug`` both propagate (the full traceback)."""

    def __init__(self, debug: bool, interrupted: str):
        self.debug, self.interrupted, self.code = debug, interrupted, 0

    def __enter__(self):
        return self

    def __exit__(self, kind, err, traceback) -> bool:
        if kind is None or self.debug or not issubclass(kind, (ThesisError, KeyboardInterrupt)):
            return False
        user_error = issubclass(kind, ThesisError)
        print(f"error: {err}" if user_error else self.interrupted, file=sys.stderr)
        self.code = 2 if user_error else 130
        return True
