"""The SASS instruction mix: an opcode histogram per build, and the opcodes whose counts moved most.

An instruction line of ``cuobjdump -sass`` reads ``/*0040*/  @!P0 IADD3.X R1, R1, -0x20, RZ ;``.
The opcode is the first word after the optional predicate; by default its modifiers are dropped
(``LDG.E.128`` counts as ``LDG``) so that a change of width or cache hint does not hide a change in
how many loads there are. Local-memory loads and stores (LDL, STL) are what register spills become.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

_INSTR = re.compile(r"^\s*/\*[0-9a-fA-F]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)")
_FUNC = re.compile(r"^\s*Function\s*:\s*(\S+)")
LOCAL_MEMORY = ("LDL", "STL")


def opcode_histogram(sass: str, kernel: str | None = None, full: bool = False) -> Counter:
    """Opcode -> count over every function of ``sass`` (or only ``kernel``)."""
    counts: Counter = Counter()
    current = None
    for line in sass.splitlines():
        if m := _FUNC.match(line):
            current = m.group(1)
            continue
        if kernel is not None and current != kernel:
            continue
        if m := _INSTR.match(line):
            op = m.group(1)
            counts[op if full else op.split(".", 1)[0]] += 1
    return counts


def functions(sass: str) -> list[str]:
    return [m.group(1) for line in sass.splitlines() if (m := _FUNC.match(line))]


@dataclass(frozen=True)
class OpcodeDelta:
    opcode: str
    baseline: int
    candidate: int

    @property
    def change(self) -> int:
        return self.candidate - self.baseline


def mix_diff(base: Counter, cand: Counter, top: int = 12) -> list[OpcodeDelta]:
    """The ``top`` opcodes whose counts differ most (largest absolute change first; ties by name)."""
    rows = [OpcodeDelta(op, base.get(op, 0), cand.get(op, 0)) for op in set(base) | set(cand)]
    rows = [r for r in rows if r.change != 0]
    rows.sort(key=lambda r: (-abs(r.change), r.opcode))
    return rows[:top] if top and top > 0 else rows


def local_memory_ops(counts: Counter) -> int:
    return sum(counts.get(op, 0) for op in LOCAL_MEMORY)


__all__ = ["opcode_histogram", "mix_diff", "OpcodeDelta", "functions", "local_memory_ops", "LOCAL_MEMORY"]
