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


_TRUE = ("1", "yes", "true", "on")
_FALSE = ("", "0", "no", "false", "off")


def env_bool(name: str) -> bool:
    """An on/off variable: 1/yes/true/on or 0/no/false/off (any case; unset or empty: off)."""
    raw = os.environ.get(name, "").strip()
    if raw.lower() in _TRUE:
        return True
    if raw.lower() in _FALSE:
        return False
    raise ConfigurationError(f"{name}={raw!r} is not an on/off value; use {name}=1 (or yes/true/on) to turn it on, "
                             f"{name}=0 (or no/false/off, or unset it) to turn it off")


def keep_cache() -> bool:
    """CIQ_KEEP_CACHE: keep the per-run folder (run log, failing candidates) after the run."""
    return env_bool("CIQ_KEEP_CACHE")


def unsafe_checkpoint_mismatch() -> bool:
    """CIQ_UNSAFE_ALLOW_CHECKPOINT_PROVENANCE_MISMATCH: restore a checkpoint into another configuration."""
    return env_bool("CIQ_UNSAFE_ALLOW_CHECKPOINT_PROVENANCE_MISMATCH")


def cache_root(cache_folder: str | os.PathLike | None = None) -> Path:
    if cache_folder is not None:
        return Path(cache_folder).expanduser()
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "compileiq"
