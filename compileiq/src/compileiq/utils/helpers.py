"""Controls-file helpers with NVIDIA's names: the candidate arrives as a hex string of file bytes."""

from __future__ import annotations

import os
from pathlib import Path

from .fs import atomic_write


def save_compiler_config(path: str | os.PathLike, config: str | bytes) -> Path:
    """Write a candidate's compiler configuration (a hex string, as the objective receives it) to ``path``.

    The file is written to a temporary name and renamed, so a reader never sees half a file."""
    if isinstance(config, dict):
        raise TypeError(
            "save_compiler_config got a dict: this candidate comes from a dict search space, which "
            "holds no compiler configuration. Use the dict's values directly, or search over a "
            "compiler space (compileiq.search_spaces.compilers)"
        )
    if isinstance(config, str):
        try:
            data = bytes.fromhex(config)
        except ValueError as exc:
            raise ValueError(f"save_compiler_config: config is not a hex string ({exc}); pass the value "
                             "the objective received unchanged") from None
    elif isinstance(config, (bytes, bytearray)):
        data = bytes(config)
    else:
        raise TypeError(f"save_compiler_config: config must be the hex string the objective received, not {type(config).__name__}")
    return atomic_write(path, data)


def load_compiler_config(path: str | os.PathLike) -> str:
    """The hex string of a controls file (the inverse of save_compiler_config)."""
    return Path(path).read_bytes().hex()


__all__ = ["save_compiler_config", "load_compiler_config"]
