"""How busy the machine was while a validation measured: other processes' CPU share, measured.

Linux counts every CPU's time in /proc/stat (user, system, idle, steal, ...). Over the validation,
the busy time of the whole machine minus the CPU time of this process and the children it waited
for (the benchmark runs) is what everything else used. On a shared 2-CPU machine one busy job is
half of it; that is the first thing to know when a benchmark is noisy. Steal is the time a virtual
machine's CPUs wanted to run and the hypervisor gave to someone else. Elsewhere (no /proc/stat)
nothing is measured and the advice says so.
"""

from __future__ import annotations

import os
import resource
import time
from dataclasses import dataclass
from pathlib import Path

PROC_STAT = Path("/proc/stat")
GOVERNOR = Path("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")


@dataclass(frozen=True)
class MachineLoad:
    """CPU use during one validation. ``others`` and ``own`` are in CPUs (1.0 = one CPU kept busy)."""

    seconds: float
    cpus: int
    others: float
    own: float
    steal: float          # share of all CPU time the hypervisor withheld (0 on bare metal)
    governor: str | None  # cpufreq governor of CPU 0; None when the kernel shows none (VMs, containers)

    @property
    def others_share(self) -> float:
        """Other processes' share of the machine's CPU time, 0..1."""
        return self.others / self.cpus if self.cpus else 0.0

    def sentence(self) -> str:
        return (f"while validating ({self.seconds:.0f} s), other processes kept {self.others:.2f} of this machine's "
                f"{self.cpus} CPUs busy ({self.others_share:.0%} of its CPU time; this validation used "
                f"{self.own:.2f}), measured from /proc/stat")


def _read_stat() -> tuple[int, list[int]] | None:
    try:
        lines = PROC_STAT.read_text().splitlines()
    except OSError:
        return None
    fields = [int(x) for x in lines[0].split()[1:9]] if lines and lines[0].startswith("cpu ") else []
    cpus = sum(1 for ln in lines if ln.startswith("cpu") and ln[3:4].isdigit())
    if len(fields) < 8 or not cpus:
        return None
    return cpus, fields


def _own_seconds() -> float:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def governor() -> str | None:
    try:
        return GOVERNOR.read_text().strip() or None
    except OSError:
        return None


class LoadMeter:
    """``meter = LoadMeter(); ...measure...; load = meter.stop()`` (None where /proc/stat is missing)."""

    def __init__(self):
        self._t0 = time.monotonic()
        self._stat0 = _read_stat()
        self._own0 = _own_seconds()

    def stop(self) -> MachineLoad | None:
        stat1 = _read_stat()
        if self._stat0 is None or stat1 is None:
            return None
        wall = max(time.monotonic() - self._t0, 1e-9)
        tick = float(os.sysconf("SC_CLK_TCK")) if hasattr(os, "sysconf") else 100.0
        d = [(b - a) / tick for a, b in zip(self._stat0[1], stat1[1])]
        user, nice, system, idle, iowait, irq, softirq, steal = d
        total = sum(d)
        busy = user + nice + system + irq + softirq
        own = _own_seconds() - self._own0
        cpus = stat1[0]
        others = min(float(cpus), max(0.0, busy - own) / wall)
        return MachineLoad(wall, cpus, others, own / wall, steal / total if total > 0 else 0.0, governor())
