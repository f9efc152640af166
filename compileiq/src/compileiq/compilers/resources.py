"""Resource usage from ``ptxas -v`` (or ``nvcc -Xptxas -v``): registers, spills, stack, shared memory.

ptxas writes its report to stderr, per function, in this shape (CUDA 12 and 13)::

    ptxas info    : Compiling entry function 'k' for 'sm_90'
    ptxas info    : Function properties for k
        32 bytes stack frame, 60 bytes spill stores, 52 bytes spill loads
    ptxas info    : Used 80 registers, used 0 barriers, 32 bytes cumulative stack size, 4096 bytes smem
    ptxas info    : Compile time = 14.075 ms

Non-inlined device functions get a "Function properties" block of their own; their spills count
towards the totals because the kernel that calls them pays for them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_ENTRY = re.compile(r"Compiling entry function '([^']+)' for '([^']+)'")
_PROPS = re.compile(r"Function properties for (\S+)")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers")
_BARRIERS = re.compile(r"used (\d+) barriers")
_CUM_STACK = re.compile(r"(\d+) bytes cumulative stack size")
_SMEM = re.compile(r"(\d+) bytes smem")
_CMEM = re.compile(r"(\d+) bytes cmem\[(\d+)\]")
_TIME = re.compile(r"Compile time = ([0-9.]+) ms")
_GMEM = re.compile(r"(\d+) bytes gmem")


@dataclass
class FunctionResources:
    """What ptxas reported for one function (``entry`` True for a kernel) on one architecture."""

    name: str
    arch: str | None = None
    entry: bool = False
    registers: int | None = None
    barriers: int | None = None
    stack: int = 0  # bytes of stack frame
    cumulative_stack: int | None = None
    spill_stores: int = 0
    spill_loads: int = 0
    smem: int = 0
    cmem: dict[int, int] = field(default_factory=dict)
    compile_ms: float | None = None

    @property
    def spill_bytes(self) -> int:
        return self.spill_stores + self.spill_loads


@dataclass
class ResourceUsage:
    """Every function of one compile, with the totals an objective usually wants."""

    functions: list[FunctionResources] = field(default_factory=list)
    gmem: int = 0

    @property
    def kernels(self) -> list[FunctionResources]:
        return [f for f in self.functions if f.entry]

    def kernel(self, name: str, arch: str | None = None) -> FunctionResources:
        for f in self.functions:
            if f.name == name and (arch is None or f.arch == arch):
                return f
        have = ", ".join(sorted({f.name for f in self.functions})) or "none"
        raise KeyError(f"no function {name!r} in the ptxas report (functions: {have})")

    # Totals: the worst kernel for per-thread limits, the sum for traffic and time.
    @property
    def registers(self) -> int | None:
        regs = [k.registers for k in self.kernels if k.registers is not None]
        return max(regs) if regs else None

    @property
    def spill_stores(self) -> int:
        return sum(f.spill_stores for f in self.functions)

    @property
    def spill_loads(self) -> int:
        return sum(f.spill_loads for f in self.functions)

    @property
    def spill_bytes(self) -> int:
        return self.spill_stores + self.spill_loads

    @property
    def stack(self) -> int:
        return max((f.stack for f in self.functions), default=0)

    @property
    def smem(self) -> int:
        return max((k.smem for k in self.kernels), default=0)

    @property
    def compile_ms(self) -> float | None:
        times = [k.compile_ms for k in self.functions if k.compile_ms is not None]
        return sum(times) if times else None


def parse_ptxas_verbose(text: str) -> ResourceUsage:
    """Parse the ``-v`` report of ptxas (or of nvcc passing ``-Xptxas -v``); unknown lines are skipped."""
    usage = ResourceUsage()
    by_key: dict[tuple[str, str | None], FunctionResources] = {}
    entry: FunctionResources | None = None  # the kernel being compiled: "Used"/"Compile time" lines are its
    props: FunctionResources | None = None  # the function the next stack-frame line belongs to

    def get(name: str, arch: str | None) -> FunctionResources:
        key = (name, arch)
        if key not in by_key:
            by_key[key] = FunctionResources(name=name, arch=arch)
            usage.functions.append(by_key[key])
        return by_key[key]

    for line in text.splitlines():
        if m := _ENTRY.search(line):
            entry = get(m.group(1), m.group(2))
            entry.entry = True
            props = None
        elif m := _PROPS.search(line):
            arch = entry.arch if entry is not None else None
            props = get(m.group(1), arch)
        elif m := _FRAME.search(line):
            if props is not None:
                props.stack, props.spill_stores, props.spill_loads = (int(g) for g in m.groups())
        elif m := _USED.search(line):
            target = entry if entry is not None else props
            if target is None:
                continue
            target.registers = int(m.group(1))
            if b := _BARRIERS.search(line):
                target.barriers = int(b.group(1))
            if c := _CUM_STACK.search(line):
                target.cumulative_stack = int(c.group(1))
            if s := _SMEM.search(line):
                target.smem = int(s.group(1))
            target.cmem = {int(bank): int(n) for n, bank in _CMEM.findall(line)}
        elif m := _TIME.search(line):
            if entry is not None:
                entry.compile_ms = float(m.group(1))
        elif m := _GMEM.search(line):
            usage.gmem += int(m.group(1))
    return usage


__all__ = ["FunctionResources", "ResourceUsage", "parse_ptxas_verbose"]
