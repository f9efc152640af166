"""Nsight Compute (``ncu``) on both builds: the few metrics that usually explain a win.

``ncu --csv --metrics a,b,...`` prints ``==PROF==`` progress lines and then one CSV row per
(kernel launch, metric) with "Kernel Name", "Metric Name", "Metric Unit" and "Metric Value"
columns. Launches of the same kernel are averaged. A metric the GPU does not have reads "n/a".

The L2 figure is ``lts__throughput`` (the L2 slices' throughput), which is what Nsight Compute's
own Speed Of Light section shows as "L2 Cache Throughput".
"""

from __future__ import annotations

import csv
import glob
import io
import os
import shlex
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from .. import _env
from ..utils.proc import run as run_tree

# (metric, label, why it matters)
METRICS = (
    ("gpu__time_duration.sum", "duration", "kernel time: the win itself"),
    ("sm__throughput.avg.pct_of_peak_sustained_elapsed", "SM throughput %", "compute pipes busy"),
    ("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", "memory throughput %",
     "busiest memory unit"),
    ("sm__warps_active.avg.pct_of_peak_sustained_active", "warps active %", "achieved occupancy"),
    ("launch__registers_per_thread", "registers per thread", "what limits occupancy"),
    ("lts__throughput.avg.pct_of_peak_sustained_elapsed", "L2 throughput %", "L2 traffic (spills land here)"),
)

PERMISSION_FIX = ("profiling counters are restricted to admin users: run as root, or load the driver with "
                  "NVreg_RestrictProfilingToAdminUsers=0 (https://developer.nvidia.com/ERR_NVGPUCTRPERM)")


class NcuError(RuntimeError):
    """ncu ran but gave no metrics (no GPU, no permission, the command failed, no kernel matched)."""


def find_ncu(explicit: str | None = None) -> Path | None:
    """ncu from ``explicit``, CIQ_NCU, PATH, the CUDA toolkit, or /opt/nvidia/nsight-compute."""
    for cand in (explicit, _env.ncu_override()):
        if cand:
            hit = shutil.which(cand) or (cand if Path(cand).is_file() else None)
            return Path(hit) if hit else None
    hit = shutil.which("ncu")
    if hit:
        return Path(hit)
    roots = [os.environ.get(v) for v in ("CUDA_HOME", "CUDA_PATH")] + ["/usr/local/cuda"]
    for root in filter(None, roots):
        cand = Path(root) / "bin" / "ncu"
        if cand.is_file() and os.access(cand, os.X_OK):
            return cand
    for cand in sorted(glob.glob("/opt/nvidia/nsight-compute/*/ncu"), reverse=True):
        if os.access(cand, os.X_OK):
            return Path(cand)
    return None


def _number(text: str) -> float | None:
    t = text.strip().replace(",", "")
    try:
        return float(t)
    except ValueError:
        return None  # "n/a" and friends


def parse_ncu_csv(text: str, kernel: str | None = None) -> dict[str, tuple[float | None, str]]:
    """Metric -> (mean over the matching launches, unit) from ``ncu --csv`` output."""
    lines = [ln for ln in text.splitlines() if ln.startswith('"')]
    if not lines:
        return {}
    values: dict[str, list[float]] = {}
    units: dict[str, str] = {}
    for row in csv.DictReader(io.StringIO("\n".join(lines))):
        name = row.get("Metric Name")
        if not name:
            continue
        if kernel is not None and kernel not in (row.get("Kernel Name") or ""):
            continue
        units[name] = row.get("Metric Unit") or ""
        num = _number(row.get("Metric Value") or "")
        values.setdefault(name, [])
        if num is not None:
            values[name].append(num)
    return {n: ((sum(xs) / len(xs)) if xs else None, units[n]) for n, xs in values.items()}


def expand(template: str, cubin: Path, controls: Path | None) -> list[str]:
    """The run command as arguments, with {cubin} and {controls} filled in (split before filling,
    so paths with spaces stay one argument)."""
    try:
        args = shlex.split(template)
    except ValueError as exc:
        raise ValueError(f"run command {template!r} cannot be split into arguments ({exc}); check its quotes") from None
    if not args:
        raise ValueError("the run command is empty; give the command that launches the kernel, e.g. "
                         "--run 'python bench.py --cubin {cubin}'")
    return [a.replace("{cubin}", str(cubin)).replace("{controls}", str(controls or "")) for a in args]


@dataclass
class NcuRun:
    command: list[str]
    metrics: dict[str, tuple[float | None, str]] = field(default_factory=dict)


def run_ncu(ncu: Path, run_args: list[str], *, kernel: str | None = None, timeout: float | None = 600,
            env: dict | None = None) -> NcuRun:
    cmd = [str(ncu), "--csv", "--target-processes", "all", "--metrics", ",".join(m for m, _, _ in METRICS)]
    if kernel:
        cmd += ["--kernel-name", f"regex:{kernel}"]
    cmd += run_args
    try:
        proc = run_tree(cmd, text=True, errors="replace", timeout=timeout, env={**os.environ, **(env or {})},
                        stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise NcuError(f"ncu did not finish within {timeout} s; profile fewer launches (--kernel) or raise "
                       "--timeout") from None
    except OSError as exc:
        raise NcuError(f"cannot run {cmd[0]}: {exc}") from None
    out = proc.stdout + "\n" + proc.stderr
    metrics = parse_ncu_csv(proc.stdout, kernel)
    if "ERR_NVGPUCTRPERM" in out:
        raise NcuError(PERMISSION_FIX)
    if not metrics:
        tail = " | ".join(ln.strip() for ln in out.strip().splitlines()[-4:])
        why = "no kernel was profiled" if "No kernels were profiled" in out else f"exit {proc.returncode}"
        raise NcuError(f"ncu gave no metrics ({why}) for `{shlex.join(run_args)}`: {tail[:400]}. Fix: run the "
                       "command by hand on this GPU; check --kernel matches the kernel's name")
    return NcuRun(cmd, metrics)


__all__ = ["METRICS", "NcuError", "NcuRun", "find_ncu", "parse_ncu_csv", "run_ncu", "expand", "PERMISSION_FIX"]
