"""Every CIQ_* environment variable CompileIQ reads, parsed in one place with exact messages."""

from __future__ import annotations

import os
from pathlib import Path

from .errors import ConfigurationError

PROCESS_MODES = ("forkserver", "spawn", "fork")


def env_float(name: str, default: float, minimum: float, example: str = "120") -> float:
    """A finite number >= minimum from the environment (unset or empty: the default)."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        val = float(raw)
    except ValueError:
        val = float("nan")
    if not val >= minimum or val == float("inf"):
        raise ConfigurationError(f"{name}={raw!r} is not a finite number >= {minimum:g}; unset it or set e.g. {name}={example}")
    return val


def socket_timeout() -> float:
    """Seconds a worker has to connect back and to answer each heartbeat (never bounds an evaluation)."""
    return env_float("CIQ_SOCKET_TIMEOUT", 20.0, 0.1)


def process_mode(default: str = "forkserver") -> str:
    raw = os.environ.get("CIQ_PROCESS_MODE", "").strip()
    if not raw:
        return default
    if raw not in PROCESS_MODES:
        raise ConfigurationError(
            f"CIQ_PROCESS_MODE={raw!r} is not a start method; use one of {', '.join(PROCESS_MODES)} (default forkserver)"
        )
    return raw


def keep_cache() -> bool:
    return os.environ.get("CIQ_KEEP_CACHE", "").strip().lower() in ("1", "yes", "true", "on")


def cache_root(cache_folder: str | os.PathLike | None = None) -> Path:
    if cache_folder is not None:
        return Path(cache_folder).expanduser()
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "compileiq"
