"""The environment variables of search-space resolution and compiler discovery, parsed with exact messages.

| variable | default | meaning |
|---|---|---|
| CIQ_SEARCH_SPACES_DIR | unset | offline mirror: a folder with manifest.json and the space files |
| CIQ_SEARCH_SPACES_URL | unset | release location (http/https): <URL>/latest.json, <URL>/<tag>/manifest.json, <URL>/<tag>/<file> |
| CIQ_SS_LATEST_TTL_DAYS | 7 | days a resolved "latest" tag is reused without asking the server (0: ask every time) |
| CIQ_DOWNLOAD_TIMEOUT | 60 | seconds to connect, and to wait for each read, when downloading spaces |
| CIQ_PTXAS, CIQ_NVCC, CIQ_GCC, CIQ_CLANG | unset | the compiler binary to use (a path, or a name looked up on PATH) |
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlparse

from .._env import env_float
from ..errors import ConfigurationError


def search_spaces_dir() -> Path | None:
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


def compiler_variable(name: str) -> str:
    return f"CIQ_{name.upper()}"


def compiler_override(name: str) -> str | None:
    raw = os.environ.get(compiler_variable(name), "").strip()
    return raw or None


__all__ = ["search_spaces_dir", "search_spaces_url", "latest_ttl_days", "download_timeout",
           "compiler_variable", "compiler_override"]
