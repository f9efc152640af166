"""One atomic file write for the whole package: a reader, a parallel worker or a killed run never
sees half a file, and a failed write leaves nothing behind.

The temporary file comes from mkstemp in the destination folder (unique per call, so two threads
or processes writing the same path never share it) and gets the mode a plain open() would give.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def atomic_write(path: str | os.PathLike, data: bytes | str, *, encoding: str = "utf-8", fsync: bool = False,
                 mode: int | None = None) -> Path:
    """Write ``data`` to ``path`` atomically; ``mode`` (e.g. 0o600) instead of what open() would give."""
    path = Path(path)
    payload = data.encode(encoding) if isinstance(data, str) else bytes(data)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent)
    try:
        if mode is None:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask  # mkstemp makes 0600
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
            if fsync:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return path


__all__ = ["atomic_write"]
