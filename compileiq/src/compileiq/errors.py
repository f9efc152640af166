"""Exceptions and warnings raised by CompileIQ. Every message says what happened, where, and the fix."""


class CompileIQError(Exception):
    """Base class of every error CompileIQ raises on purpose."""


class SearchSpaceError(CompileIQError, ValueError):
    """A search space that cannot be searched (bad domain, bad key, unsupported object)."""


class ConfigurationError(CompileIQError, ValueError):
    """A SearchConfiguration field (or a Search argument) violates its constraint."""


class ObjectiveNotPicklableError(CompileIQError, TypeError):
    """The objective cannot be sent to worker processes."""


class WorkerStartError(CompileIQError, RuntimeError):
    """A worker process did not connect (or stopped answering heartbeats) within CIQ_SOCKET_TIMEOUT."""


class SearchFailedError(CompileIQError, RuntimeError):
    """Every candidate of the first generation failed, or the normalisation baseline failed."""


class BaselineMissingError(CompileIQError, RuntimeError):
    """Scores were normalised before a baseline score existed (RuntimeError, as NVIDIA's worker raises)."""


class SearchSpaceExhaustedWarning(UserWarning):
    """The space holds fewer distinct candidates than the search asked for; the run ended early."""


class DuplicateChoiceWarning(UserWarning):
    """A choice() lists one value twice (True and 1 are the same value); it is searched once."""


class WorkerCapabilityWarning(UserWarning):
    """An option given to start() is ignored by the chosen worker."""


class SearchSpaceExhaustedError(CompileIQError, RuntimeError):
    """ask() found no candidate that was not handed out before (NVIDIA 1.1's name; start() warns instead)."""


class CheckpointCompatibilityWarning(UserWarning):
    """A checkpoint restored into a search whose configuration differs (allow_unsafe_provenance_mismatch)."""


class CheckpointError(CompileIQError, ValueError):
    """A checkpoint that cannot be written or restored (wrong file, other search, unsupported engine)."""


class CompilerChangedError(CompileIQError, RuntimeError):
    """The compiler binary changed during a search, so later scores are not comparable with earlier ones."""


class CompilerChangedWarning(UserWarning):
    """The compiler binary changed during a search (on_compiler_change="warn")."""


class IdenticalScoresWarning(UserWarning):
    """Every valid candidate of the first generation scored the same: the candidates probably never reach the build."""
