"""Timing CPU candidates (gcc/clang builds): warm-up, repeats, one pinned core, median and spread.

Pinning keeps a measurement on one core's caches and frequency; without it the scheduler may
move the process mid-run, which shows up as outliers. The process is pinned to the core it is
already running on, so parallel workers that the scheduler has spread out stay spread out.
"""

from __future__ import annotations

import math
import os
import statistics
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence
from ..utils.proc import run as run_tree


@dataclass(frozen=True)
class TimingResult:
    """Seconds per run: ``median``, ``p5``/``p95``, ``mean``, ``stdev``, ``cv`` (stdev / mean) and ``samples``."""

    samples: tuple[float, ...]
    warmup: int
    cpu: int | None = None  # the core the runs were pinned to; None when pinning was not possible
    outputs: tuple = field(default=(), repr=False)

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def mean(self) -> float:
        return statistics.fmean(self.samples)

    @property
    def stdev(self) -> float:
        return statistics.stdev(self.samples) if len(self.samples) > 1 else 0.0

    @property
    def cv(self) -> float:
        m = self.mean
        return self.stdev / m if m else math.inf

    @property
    def p5(self) -> float:
        return percentile(self.samples, 5)

    @property
    def p95(self) -> float:
        return percentile(self.samples, 95)

    @property
    def min(self) -> float:
        return min(self.samples)

    def summary(self) -> str:
        return (f"median {self.median * 1e3:.3f} ms (p5 {self.p5 * 1e3:.3f}, p95 {self.p95 * 1e3:.3f}), "
                f"CV {self.cv * 100:.1f}% over {len(self.samples)} runs")


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolation percentile (numpy's default), without needing numpy."""
    xs = sorted(values)
    if not xs:
        raise ValueError("percentile of no samples")
    pos = (len(xs) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def _current_cpu() -> int | None:
    try:
        fields = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
        return int(fields[36])  # field 39 "processor", counted after the ")" that ends field 2
    except (OSError, IndexError, ValueError):
        return None


class _Pinned:
    """Pins this process (and children it starts) to one allowed core; restores the old mask on exit."""

    def __init__(self, cpu: int | None, enabled: bool):
        self.cpu = None
        self._old = None
        self._want = cpu
        self._enabled = enabled and hasattr(os, "sched_setaffinity")

    def __enter__(self) -> "_Pinned":
        if not self._enabled:
            return self
        try:
            self._old = os.sched_getaffinity(0)
            cpu = self._want if self._want is not None else _current_cpu()
            if cpu not in self._old:
                cpu = min(self._old)
            os.sched_setaffinity(0, {cpu})
            self.cpu = cpu
        except OSError:  # e.g. a container forbidding it: measure unpinned rather than fail
            self._old = None
        return self

    def __exit__(self, *exc) -> None:
        if self._old is not None:
            os.sched_setaffinity(0, self._old)


def cpu_time(target: Callable | str | os.PathLike | Sequence[str], *, args: Sequence = (), warmup: int = 3,
             repeats: int = 15, pin: bool = True, cpu: int | None = None, timeout: float | None = None,
             parse: Callable[[str], float] | None = None, check: bool = True) -> TimingResult:
    """Time ``target`` ``repeats`` times after ``warmup`` untimed runs, pinned to one core.

    ``target`` is a callable (called with ``*args``), or a program: a path or an argument list
    (``args`` appended). A program's sample is its wall time, unless ``parse`` turns its stdout
    into seconds (e.g. the time the program measured itself, free of process start-up). A program
    exiting non-zero raises CalledProcessError when ``check`` (a broken candidate must not score).
    """
    if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 0:
        raise ValueError(f"cpu_time(warmup={warmup!r}) must be an int >= 0")
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"cpu_time(repeats={repeats!r}) must be an int >= 1")
    if callable(target):
        def once():
            t0 = time.perf_counter()
            value = target(*args)
            return time.perf_counter() - t0, value
    else:
        cmd = [str(target)] if isinstance(target, (str, os.PathLike)) else [str(c) for c in target]
        cmd += [str(a) for a in args]

        def once():
            t0 = time.perf_counter()
            proc = run_tree(cmd, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
            wall = time.perf_counter() - t0
            if check and proc.returncode != 0:
                raise subprocess.CalledProcessError(proc.returncode, cmd, proc.stdout, proc.stderr)
            return (parse(proc.stdout) if parse else wall), proc.stdout

    samples, outputs = [], []
    with _Pinned(cpu, pin) as pinned:
        for _ in range(warmup):
            once()
        for _ in range(repeats):
            t, out = once()
            samples.append(float(t))
            outputs.append(out)
    return TimingResult(samples=tuple(samples), warmup=warmup, cpu=pinned.cpu, outputs=tuple(outputs))


__all__ = ["cpu_time", "TimingResult", "percentile"]
