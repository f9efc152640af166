"""Exceptions of search-space files and their resolution; every message names what, where and the fix."""

from __future__ import annotations

from ..errors import CompileIQError, SearchSpaceError


class SpaceFileError(SearchSpaceError):
    """A search-space file that is damaged or breaks the format (``path`` and JSON ``pointer`` say where)."""

    def __init__(self, message: str, path=None, pointer: str | None = None):
        super().__init__(message)
        self.path = path
        self.pointer = pointer


class EncryptedSearchSpaceError(SpaceFileError):
    """An NVIDIA encrypted search space (.bin): CompileIQ cannot and will not read it."""


class SpaceNotFoundError(SearchSpaceError):
    """No space for the requested compiler, version or variant; ``available`` lists what exists."""

    def __init__(self, message: str, available: list | None = None):
        super().__init__(message)
        self.available = list(available or [])


class CompilerTooOldError(SearchSpaceError):
    """The compiler is older than every space there is, or than the space that was asked for."""


class SpaceDownloadError(CompileIQError, RuntimeError):
    """A release download failed (server unreachable, timeout, HTTP error)."""


class SpaceIntegrityError(SpaceDownloadError):
    """A downloaded or mirrored file does not match the manifest's size or sha256."""


class SearchSpaceWarning(UserWarning):
    """A space was resolved in a fallback way: an older version than the compiler, or a stale "latest" tag."""


__all__ = ["SearchSpaceWarning", "SpaceFileError", "EncryptedSearchSpaceError", "SpaceNotFoundError", "CompilerTooOldError",
           "SpaceDownloadError", "SpaceIntegrityError"]
