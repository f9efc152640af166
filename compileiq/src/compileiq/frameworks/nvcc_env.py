"""A clean build folder per candidate for raw nvcc builds (make, CMake, setup.py, a script).

Incremental build tools compare timestamps, not flags: an object file left from the previous
candidate looks up to date and is linked again, so the new flags never reach the compiler.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Iterator

from ._env import fresh_dir


@contextlib.contextmanager
def nvcc_build_dir(root: str | os.PathLike | None = None, keep: bool = False, prefix: str = "ciq-build-") -> Iterator[Path]:
    """A new, empty folder to build one candidate in; removed on exit unless ``keep``."""
    with fresh_dir(prefix, root, keep) as d:
        yield d


__all__ = ["nvcc_build_dir"]
