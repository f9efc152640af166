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


class SearchSpaceExhaustedWarning(UserWarning):
    """The space holds fewer distinct candidates than the search asked for; the run ended early."""


class WorkerCapabilityWarning(UserWarning):
    """An option given to start() is ignored by the chosen worker."""
