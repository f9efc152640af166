"""The comparison itself: resource table, instruction-mix table and (optionally) Nsight Compute metrics."""

from __future__ import annotations

from dataclasses import dataclass, field

from .builds import Build
from .ncu import METRICS, NcuRun
from .sass_mix import OpcodeDelta, local_memory_ops, mix_diff, opcode_histogram

RESOURCE_ROWS = (("registers", "registers"), ("stack", "stack frame (B)"), ("spill_stores", "spill stores (B)"),
                 ("spill_loads", "spill loads (B)"), ("smem", "shared memory (B)"), ("local", "local memory (B)"))


@dataclass
class Comparison:
    baseline: Build
    candidate: Build
    kernel: str | None = None
    resources: list[tuple[str, int | None, int | None]] = field(default_factory=list)
    opcodes: list[OpcodeDelta] = field(default_factory=list)
    sass_totals: tuple[int, int] | None = None
    local_ops: tuple[int, int] | None = None
    ncu: dict[str, NcuRun] = field(default_factory=dict)
    ncu_note: str = ""

    def as_dict(self) -> dict:
        return {
            "baseline": self.baseline.describe(), "candidate": self.candidate.describe(), "kernel": self.kernel,
            "resources": {k: {"baseline": b, "candidate": c} for k, b, c in self.resources},
            "sass_instructions": dict(zip(("baseline", "candidate"), self.sass_totals)) if self.sass_totals else None,
            "local_memory_instructions": dict(zip(("baseline", "candidate"), self.local_ops)) if self.local_ops else None,
            "opcodes": [{"opcode": r.opcode, "baseline": r.baseline, "candidate": r.candidate, "change": r.change}
                        for r in self.opcodes],
            "ncu": {side: {m: v for m, (v, _) in run.metrics.items()} for side, run in self.ncu.items()},
            "ncu_note": self.ncu_note,
            "notes": self.baseline.notes + self.candidate.notes,
        }


def compare(base: Build, cand: Build, *, kernel: str | None = None, top: int = 12, full: bool = False) -> Comparison:
    comp = Comparison(base, cand, kernel)
    for key, _ in RESOURCE_ROWS:
        b, c = base.resources.get(key), cand.resources.get(key)
        if b is not None or c is not None:
            comp.resources.append((key, b, c))
    if base.sass is not None and cand.sass is not None:
        hb, hc = opcode_histogram(base.sass, kernel, full), opcode_histogram(cand.sass, kernel, full)
        comp.opcodes = mix_diff(hb, hc, top)
        comp.sass_totals = (sum(hb.values()), sum(hc.values()))
        plain_b, plain_c = (hb, hc) if not full else (opcode_histogram(base.sass, kernel), opcode_histogram(cand.sass, kernel))
        comp.local_ops = (local_memory_ops(plain_b), local_memory_ops(plain_c))
    return comp


def _cell(v) -> str:
    if v is None:
        return "n/a"
    return f"{v:,.4g}" if isinstance(v, float) and not float(v).is_integer() else f"{int(v):,}"


def _change(b, c) -> str:
    if b is None or c is None:
        return ""
    d = c - b
    if d == 0:
        return "="
    pct = f" ({d / b:+.0%})" if b else ""
    return f"{'+' if d > 0 else ''}{_cell(d)}{pct}"


def _table(title: str, rows: list[tuple[str, object, object]], name_width: int = 30) -> list[str]:
    out = [title, f"  {'':<{name_width}} {'baseline':>12} {'candidate':>12}  change"]
    out += [f"  {name:<{name_width}} {_cell(b):>12} {_cell(c):>12}  {_change(b, c)}" for name, b, c in rows]
    return out


def format_text(comp: Comparison) -> str:
    labels = dict(RESOURCE_ROWS)
    lines = [f"baseline:  {comp.baseline.describe()}", f"candidate: {comp.candidate.describe()}"]
    if comp.kernel:
        lines.append(f"kernel:    {comp.kernel}")
    lines.append("")
    rows = [(labels[k], b, c) for k, b, c in comp.resources]
    if comp.sass_totals:
        rows.append(("SASS instructions", *comp.sass_totals))
        rows.append(("local-memory instrs (LDL+STL)", *comp.local_ops))
    lines += _table("Resource usage", rows)
    if any(b.kind in ("cubin", "fatbin") for b in (comp.baseline, comp.candidate)):
        lines.append("  (spill bytes come from ptxas -v, so only for PTX/.cu inputs; for a cubin, "
                     "the LDL+STL count shows the spills)")
    if comp.sass_totals:
        lines.append("")
        if comp.opcodes:
            lines += _table("SASS instruction mix: the opcodes whose counts differ most",
                            [(r.opcode, r.baseline, r.candidate) for r in comp.opcodes], 14)
        else:
            lines.append("SASS instruction mix: identical opcode counts")
    for note in comp.baseline.notes + comp.candidate.notes:
        lines.append(f"note: {note}")
    lines.append("")
    if comp.ncu:
        rows = []
        for metric, label, _why in METRICS:
            b = comp.ncu["baseline"].metrics.get(metric, (None, ""))
            c = comp.ncu["candidate"].metrics.get(metric, (None, ""))
            unit = (b[1] or c[1]) if metric == "gpu__time_duration.sum" else ""  # the others' units are in the label
            rows.append((f"{label}{f' [{unit}]' if unit else ''}", b[0], c[0]))
        lines += _table("Nsight Compute (mean over the profiled launches)", rows)
        lines.append("  metrics: " + ", ".join(m for m, _, _ in METRICS))
    if comp.ncu_note:
        lines.append(f"Nsight Compute: {comp.ncu_note}")
    return "\n".join(lines).rstrip() + "\n"


__all__ = ["Comparison", "compare", "format_text", "RESOURCE_ROWS"]
