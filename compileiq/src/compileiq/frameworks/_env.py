"""Setting environment variables for one candidate and putting every one back afterwards."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Mapping


class FrameworkCacheWarning(UserWarning):
    """Something outside CompileIQ may serve a stale binary, so a candidate might never reach the compiler."""


@contextlib.contextmanager
def patched_environ(changes: Mapping[str, str | None]) -> Iterator[dict[str, str | None]]:
    """Set (value) or remove (None) variables; on exit restore each to what it was, including absent."""
    saved = {k: os.environ.get(k) for k in changes}
    try:
        for k, v in changes.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = str(v)
        yield dict(changes)
    finally:
        for k, old in saved.items():
            if old is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = old


@contextlib.contextmanager
def fresh_dir(prefix: str, root: str | os.PathLike | None = None, keep: bool = False) -> Iterator[Path]:
    """A new empty folder (under ``root`` or the temp folder), removed on exit unless ``keep``."""
    if root is not None:
        Path(root).mkdir(parents=True, exist_ok=True)
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=root))
    try:
        yield path
    finally:
        if not keep:
            shutil.rmtree(path, ignore_errors=True)


@dataclass
class FrameworkCandidate:
    """What a framework helper set up for one evaluation.

    ``env``: the variables it set (None = removed) for the length of the ``with`` block;
    ``cache_dir``: the fresh cache or build folder; ``ptxas_args``: the candidate's ptxas options;
    ``ptx_options``: the same as the one string Triton's ``ptx_options=`` takes; ``config``: extra
    ``helion.Config`` fields; ``cuda_flags``: extra nvcc flags (FlashInfer).
    """

    framework: str
    env: dict[str, str | None] = field(default_factory=dict)
    cache_dir: Path | None = None
    ptxas_args: list[str] = field(default_factory=list)
    ptx_options: str | None = None
    config: dict = field(default_factory=dict)
    cuda_flags: list[str] = field(default_factory=list)


def join_options(args: list[str], who: str) -> str | None:
    """Join options into the one space-separated string frameworks take (they split it on spaces)."""
    for a in args:
        if any(ch.isspace() for ch in a):
            raise ValueError(f"{who}: option {a!r} contains whitespace, but the framework splits its options "
                             "string on spaces; move the controls file to a path without spaces (e.g. under "
                             "tempfile.gettempdir())")
    return " ".join(args) if args else None


__all__ = ["FrameworkCacheWarning", "FrameworkCandidate", "patched_environ", "fresh_dir", "join_options"]
