"""What a decision row records about where it was measured: config hash, compilers, GPU or CPU.

Every probe is best effort and bounded by a short timeout: provenance must never be the reason a
validation fails, so a missing or broken tool is recorded as absent rather than raised.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

COMPILERS = ("ptxas", "nvcc", "gcc", "clang")
PROBE_TIMEOUT = 10.0
_VERSION_PATTERNS = (
    re.compile(r"\bV(\d+(?:\.\d+)+)"),                 # nvcc/ptxas: "release 13.0, V13.0.88"
    re.compile(r"version\s+(\d+(?:\.\d+)+)", re.I),    # clang: "clang version 14.0.6"
    re.compile(r"(\d+\.\d+(?:\.\d+)?)"),               # gcc: "gcc (Debian 12.2.0-14) 12.2.0"
)


def config_hash(params: Any = None, controls: str | os.PathLike | None = None, command: str | None = None) -> str:
    """sha256 of the controls file when there is one, else of the canonical JSON of the params,
    else of the command text: the same configuration always gets the same hash."""
    if controls is not None:
        return hashlib.sha256(Path(controls).read_bytes()).hexdigest()
    if params is not None:
        text = json.dumps(params, sort_keys=True, separators=(",", ":"), default=str)
        return hashlib.sha256(text.encode()).hexdigest()
    return hashlib.sha256((command or "").encode()).hexdigest()


def _run(argv: list[str]) -> str | None:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, errors="replace", timeout=PROBE_TIMEOUT)
    except (OSError, subprocess.SubprocessError):
        return None
    return (proc.stdout or "") + (proc.stderr or "") if proc.returncode == 0 else None


def parse_version(text: str) -> str | None:
    for rx in _VERSION_PATTERNS:
        m = rx.search(text)
        if m:
            return m.group(1)
    return None


def compilers() -> dict[str, dict[str, str | None]]:
    """{name: {"version", "path"}} for every compiler found, by the same rules the search uses
    (compileiq.compilers.discovery: CIQ_PTXAS / CIQ_NVCC / CIQ_GCC / CIQ_CLANG, PATH, the CUDA wheel)."""
    from ..compilers.discovery import CompilerNotFoundError, find_compiler
    out = {}
    for name in COMPILERS:
        try:
            tc = find_compiler(name)
        except CompilerNotFoundError:
            continue
        parsed = isinstance(tc.version, tuple)  # an unreadable banner is recorded as unknown (None)
        out[name] = {"version": (tc.release or tc.version_str) if parsed else None, "path": str(tc.path)}
    return out


def compilers_text() -> str:
    """One cell: "ptxas 13.0.88 (/usr/local/cuda/bin/ptxas); gcc 12.2.0 (/usr/bin/gcc)"."""
    return "; ".join(f"{n} {c['version'] or '?'} ({c['path']})" for n, c in compilers().items())


@functools.lru_cache(maxsize=1)
def gpus() -> tuple[str, str]:
    """(GPU names, driver version) from nvidia-smi, or ("", "") without one."""
    smi = shutil.which("nvidia-smi")
    text = _run([smi, "--query-gpu=name,driver_version", "--format=csv,noheader"]) if smi else None
    if not text:
        return "", ""
    rows = [[c.strip() for c in ln.split(",")] for ln in text.strip().splitlines() if "," in ln]
    names = "; ".join(dict.fromkeys(r[0] for r in rows))
    drivers = "; ".join(dict.fromkeys(r[1] for r in rows if len(r) > 1))
    return names, drivers


@functools.lru_cache(maxsize=1)
def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(errors="replace").splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine() -> dict[str, str]:
    gpu, driver = gpus()
    return {"gpu": gpu, "driver": driver, "cpu": cpu_model()}
