"""Every CIQ_* environment variable CompileIQ reads, parsed in one place with exact messages.

No other module reads a CIQ_* variable (tests/test_env.py checks the source): they call the function
here, so a value is validated the same way wherever it is used and the doctor checks all of them.

| variable | default | meaning |
|---|---|---|
| CIQ_SOCKET_TIMEOUT | 20 | seconds a worker has to connect back and to answer each heartbeat |
| CIQ_PROCESS_MODE | forkserver | how worker processes start: forkserver, spawn or fork |
| CIQ_KEEP_CACHE | off | keep the per-run folder (run log, failing candidates) after the run |
| CIQ_UNSAFE_ALLOW_CHECKPOINT_PROVENANCE_MISMATCH | off | restore a checkpoint into another configuration |
| CIQ_SEARCH_SPACES_DIR | unset | offline mirror: a folder with manifest.json and the space files |
| CIQ_SEARCH_SPACES_URL | unset | release location (http/https): <URL>/latest.json, <URL>/<tag>/manifest.json, <URL>/<tag>/<file> |
| CIQ_SS_LATEST_TTL_DAYS | 7 | days a resolved "latest" tag is reused without asking the server (0: ask every time) |
| CIQ_DOWNLOAD_TIMEOUT | 60 | seconds to connect, and to wait for each read, when downloading spaces |
| CIQ_PTXAS, CIQ_NVCC, CIQ_GCC, CIQ_CLANG | unset | the compiler binary to use (a path, or a name looked up on PATH) |
| CIQ_NCU | unset | the Nsight Compute binary `python -m compileiq profile` runs (a path, or a name on PATH) |

Binaries named by a variable are checked where they are looked up (compilers/discovery.py,
profile/ncu.py), which knows what a usable one is; this module only reads the name.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable
from urllib.parse import urlparse

from .errors import ConfigurationError

PREFIX = "CIQ_"

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


# -- search-space resolution (search_spaces/resolver.py, _download.py) -----------------------------------------
def search_spaces_dir() -> Path | None:
    """CIQ_SEARCH_SPACES_DIR: an offline mirror, checked to be a folder holding manifest.json."""
    raw = os.environ.get("CIQ_SEARCH_SPACES_DIR", "").strip()
    if not raw:
        return None
    path = Path(raw).expanduser()
    if not path.is_dir():
        raise ConfigurationError(
            f"CIQ_SEARCH_SPACES_DIR={raw!r} is not a folder; point it at an offline mirror (a folder holding "
            "manifest.json and the space files it lists) or unset it to use the shipped spaces")
    if not (path / "manifest.json").is_file():
        raise ConfigurationError(
            f"CIQ_SEARCH_SPACES_DIR={raw!r} has no manifest.json; copy the release's manifest.json next to the "
            "space files, or write one with `python -m compileiq.search_spaces.manifest <folder>`")
    return path


def search_spaces_url() -> str | None:
    """CIQ_SEARCH_SPACES_URL: a release location; http(s) only, so downloads never open a local file."""
    raw = os.environ.get("CIQ_SEARCH_SPACES_URL", "").strip()
    if not raw:
        return None
    parsed = urlparse(raw)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise ConfigurationError(
            f"CIQ_SEARCH_SPACES_URL={raw!r} is not an http(s) URL; give the release location, e.g. "
            "https://example.org/compileiq-spaces (for a local folder use CIQ_SEARCH_SPACES_DIR)")
    return raw.rstrip("/")


def latest_ttl_days() -> float:
    return env_float("CIQ_SS_LATEST_TTL_DAYS", 7.0, 0.0, "7")


def download_timeout() -> float:
    return env_float("CIQ_DOWNLOAD_TIMEOUT", 60.0, 0.1, "120")


# -- binaries (compilers/discovery.py, profile/ncu.py) -------------------------------------------------------
def compiler_variable(name: str) -> str:
    """The variable that names the binary for compiler ``name`` (ptxas -> CIQ_PTXAS)."""
    return f"{PREFIX}{name.upper()}"


def compiler_override(name: str) -> str | None:
    """The binary CIQ_<NAME> names for compiler ``name``, or None when unset or empty."""
    return os.environ.get(compiler_variable(name), "").strip() or None


def ncu_override() -> str | None:
    """CIQ_NCU: the Nsight Compute binary, or None when unset or empty."""
    return os.environ.get("CIQ_NCU", "").strip() or None


# -- for the doctor ------------------------------------------------------------------------------------------
# every variable with a value to validate, and its parser (each raises ConfigurationError with its own fix)
CHECKED: dict[str, Callable[[], object]] = {
    "CIQ_SOCKET_TIMEOUT": socket_timeout, "CIQ_PROCESS_MODE": process_mode, "CIQ_KEEP_CACHE": keep_cache,
    "CIQ_UNSAFE_ALLOW_CHECKPOINT_PROVENANCE_MISMATCH": unsafe_checkpoint_mismatch,
    "CIQ_SEARCH_SPACES_DIR": search_spaces_dir, "CIQ_SEARCH_SPACES_URL": search_spaces_url,
    "CIQ_SS_LATEST_TTL_DAYS": latest_ttl_days, "CIQ_DOWNLOAD_TIMEOUT": download_timeout,
}


def ciq_variables() -> dict[str, str]:
    """Every CIQ_* variable set in this process, sorted by name (what the doctor reports)."""
    return {k: v for k, v in sorted(os.environ.items()) if k.startswith(PREFIX)}
