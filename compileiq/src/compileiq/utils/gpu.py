"""GPU housekeeping through nvidia-smi: lock clocks for benchmarking, list GPUs, check the CUDA toolkit.

Timing noise on a GPU comes mostly from boost clocks and power management. ``gpu_benchmark_mode``
locks the graphics (and optionally memory) clocks and the power limit for the duration of a
``with`` block and resets them afterwards, also when the block raises.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import warnings
from dataclasses import dataclass
from typing import Iterator

from ..errors import CompileIQError

MIN_COMPILEIQ_CTK = (13, 3)  # first CUDA release whose ptxas/nvcc read vendor controls files


class GpuUnavailableError(CompileIQError, RuntimeError):
    """No usable GPU: no nvidia-smi, no driver, no cuda-python, or no device. The message says which."""


class GpuBenchmarkModeError(CompileIQError, RuntimeError):
    """nvidia-smi refused to lock or reset clocks (usually missing root rights)."""


class GpuBenchmarkModeWarning(UserWarning):
    """Clocks could not be locked and raise_on_failure=False: timings will be noisier."""


def has_nvidia_smi() -> bool:
    return shutil.which("nvidia-smi") is not None


def _smi() -> str:
    path = shutil.which("nvidia-smi")
    if path is None:
        raise GpuUnavailableError("nvidia-smi is not on PATH: this machine has no NVIDIA driver installed (or PATH "
                                  "misses it); GPU clock control and listing need the driver's nvidia-smi")
    return path


def _ids(gpu_id) -> list[str]:
    if gpu_id is None:
        return []
    if isinstance(gpu_id, (list, tuple, set)):
        return ["-i", ",".join(str(g) for g in gpu_id)]
    return ["-i", str(gpu_id)]


def _pair(value, what: str) -> str:
    if isinstance(value, (tuple, list)):
        if len(value) != 2:
            raise ValueError(f"gpu_benchmark_mode({what}={value!r}): give one MHz value or a (min, max) pair")
        lo, hi = value
    else:
        lo = hi = value
    for v in (lo, hi):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v <= 0:
            raise ValueError(f"gpu_benchmark_mode({what}={value!r}): clock values must be positive MHz numbers")
    return f"{int(lo)},{int(hi)}"


def _prefix(with_sudo: bool) -> list[str]:
    # -n: fail at once instead of waiting for a password prompt nobody sees inside a search
    if with_sudo and hasattr(os, "geteuid") and os.geteuid() != 0 and shutil.which("sudo"):
        return ["sudo", "-n"]
    return []


def _run(cmd: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)


def _query(fields: str, gpu_id=None) -> list[list[str]]:
    proc = _run([_smi(), *_ids(gpu_id), f"--query-gpu={fields}", "--format=csv,noheader,nounits"])
    if proc.returncode != 0:
        msg = " ".join((proc.stderr or proc.stdout).split())[:200]
        raise GpuUnavailableError(f"nvidia-smi --query-gpu failed (exit {proc.returncode}): {msg}")
    return [[c.strip() for c in line.split(",")] for line in proc.stdout.splitlines() if line.strip()]


@contextlib.contextmanager
def gpu_benchmark_mode(clock_mhz=None, mem_clock_mhz=None, power_watts=None, gpu_id=None, with_sudo: bool = True,
                       raise_on_failure: bool = True) -> Iterator[None]:
    """Lock GPU clocks (``nvidia-smi -lgc``), memory clocks (``-lmc``) and the power limit (``-pl``).

    ``clock_mhz``/``mem_clock_mhz``: one value or a (min, max) pair; ``gpu_id``: an index, a list
    of them or None for all GPUs. On exit the clocks are reset (``-rgc``/``-rmc``) and the power
    limit goes back to what it was. Locking needs root: with ``with_sudo`` the commands run through
    ``sudo -n`` when not root. When a step fails: GpuBenchmarkModeError if ``raise_on_failure``,
    else a GpuBenchmarkModeWarning and the block runs with whatever was set.
    """
    gpu_clock = _pair(clock_mhz, "clock_mhz") if clock_mhz is not None else None
    mem_clock = _pair(mem_clock_mhz, "mem_clock_mhz") if mem_clock_mhz is not None else None
    if power_watts is not None and (isinstance(power_watts, bool) or not isinstance(power_watts, (int, float))
                                    or power_watts <= 0):
        raise ValueError(f"gpu_benchmark_mode(power_watts={power_watts!r}) must be a positive number of watts")
    try:
        smi = _smi()
    except GpuUnavailableError:
        if raise_on_failure:
            raise
        warnings.warn("gpu_benchmark_mode: nvidia-smi not found; running without locked clocks",
                      GpuBenchmarkModeWarning, stacklevel=3)
        yield
        return
    base = [*_prefix(with_sudo), smi, *_ids(gpu_id)]
    undo: list[list[str]] = []

    def step(args: list[str], what: str) -> bool:
        proc = _run(base + args)
        if proc.returncode == 0:
            return True
        msg = " ".join((proc.stderr or proc.stdout).split())[:200] or f"exit {proc.returncode}"
        text = (f"gpu_benchmark_mode: could not {what} ({' '.join(base + args)}): {msg}. Locking clocks needs root: "
                "run as root, allow passwordless sudo for nvidia-smi, or pass raise_on_failure=False to run unlocked")
        if raise_on_failure:
            _undo(undo)
            raise GpuBenchmarkModeError(text)
        warnings.warn(text, GpuBenchmarkModeWarning, stacklevel=4)
        return False

    if gpu_clock and step(["-lgc", gpu_clock], f"lock GPU clocks at {gpu_clock} MHz"):
        undo.append(base + ["-rgc"])
    if mem_clock and step(["-lmc", mem_clock], f"lock memory clocks at {mem_clock} MHz"):
        undo.append(base + ["-rmc"])
    if power_watts is not None:
        try:
            old = [row[0] for row in _query("power.limit", gpu_id)]
        except GpuUnavailableError:
            old = []
        if step(["-pl", f"{power_watts:g}"], f"set the power limit to {power_watts:g} W") and old:
            try:
                restore = float(old[0])
            except ValueError:
                restore = None
            if restore is not None:
                undo.append(base + ["-pl", f"{restore:g}"])
    try:
        yield
    finally:
        _undo(undo)


def _undo(undo: list[list[str]]) -> None:
    # reset in reverse order; a failing reset is reported but must not hide the block's own error
    while undo:
        cmd = undo.pop()
        proc = _run(cmd)
        if proc.returncode != 0:
            warnings.warn(f"gpu_benchmark_mode: reset command {' '.join(cmd)} failed: "
                          f"{' '.join((proc.stderr or proc.stdout).split())[:200]}; run it by hand",
                          GpuBenchmarkModeWarning, stacklevel=3)


@dataclass(frozen=True)
class GpuInfo:
    """One GPU as nvidia-smi reports it. ``clocks_locked`` is None when the driver does not say."""

    index: int
    name: str
    driver: str
    sm_clock_mhz: int | None
    mem_clock_mhz: int | None
    max_sm_clock_mhz: int | None
    clocks_locked: bool | None


def _int_or_none(s: str) -> int | None:
    try:
        return int(float(s))
    except ValueError:
        return None


def list_gpus() -> list[GpuInfo]:
    """Every GPU nvidia-smi sees, with its driver, current clocks and whether clocks look locked."""
    base = "index,name,driver_version,clocks.sm,clocks.mem,clocks.max.sm"
    rows = None
    # newer drivers call it clocks_event_reasons, older ones clocks_throttle_reasons
    for reason in ("clocks_event_reasons.applications_clocks_setting",
                   "clocks_throttle_reasons.applications_clocks_setting"):
        try:
            rows = _query(f"{base},{reason}")
            break
        except GpuUnavailableError:
            continue
    if rows is None:
        rows = [r + ["[N/A]"] for r in _query(base)]
    out = []
    for r in rows:
        if len(r) < 7:
            continue
        locked = {"active": True, "not active": False}.get(r[6].lower())
        out.append(GpuInfo(index=int(r[0]), name=r[1], driver=r[2], sm_clock_mhz=_int_or_none(r[3]),
                           mem_clock_mhz=_int_or_none(r[4]), max_sm_clock_mhz=_int_or_none(r[5]),
                           clocks_locked=locked))
    return out


def _version_of(path: str) -> tuple[int, int] | None:
    try:
        text = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r"release (\d+)\.(\d+)", text)
    return (int(m.group(1)), int(m.group(2))) if m else None


def ctk_supports_compileiq(ptxas: str | os.PathLike | None = None) -> bool:
    """True when the ptxas CompileIQ compiles with (or ``ptxas``) is CUDA 13.3 or newer.

    13.3 is the first release that reads vendor controls files (``--apply-controls``); open
    controls files work with any version.
    """
    if ptxas is None:
        try:
            from ..compilers.discovery import CompilerNotFoundError, find_ptxas
        except ImportError:
            path = shutil.which("ptxas")
        else:
            try:
                path = str(find_ptxas().path)
            except CompilerNotFoundError:
                return False
    else:
        path = str(ptxas)
    if not path:
        return False
    ver = _version_of(path)
    return ver is not None and ver >= MIN_COMPILEIQ_CTK


__all__ = ["gpu_benchmark_mode", "has_nvidia_smi", "ctk_supports_compileiq", "list_gpus", "GpuInfo",
           "GpuUnavailableError", "GpuBenchmarkModeError", "GpuBenchmarkModeWarning", "MIN_COMPILEIQ_CTK"]
