"""``diagnose(csv_path) -> Report``: the per-generation tables and the pathologies found, with advice."""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from . import rules
from .advice import ADVICE
from .load import (Loaded, compiler_changes, failure_kinds, missing_column_detail, numeric, read_results,
                   repeated_measurements)
from .table import generation_table

# Report order: what makes the others meaningless comes first.
CODES = ("NO_SCORE_COLUMN", "NO_GENERATION_COLUMN", "COMPILER_CHANGED", "ALL_INVALID", "IDENTICAL_SCORES",
         "INCREASING_INVALID_RATE", "STALLED_CONVERGENCE", "HIGH_VARIANCE")
NO_REPEATS_NOTE = ("no configuration was measured more than once (no repeated baseline, duplicate or re-measured "
                   "candidate), so measurement noise cannot be told apart from the diversity between candidates; "
                   "the CV% column spans different candidates. To measure noise, re-measure the winner against "
                   "the baseline: compileiq validate")
HEALTHY = "HEALTHY"


@dataclass
class Flag:
    code: str
    details: list[str] = field(default_factory=list)
    objectives: list[str] = field(default_factory=list)

    @property
    def advice(self) -> tuple[str, ...]:
        return ADVICE[self.code]

    def as_dict(self) -> dict:
        return {"code": self.code, "objectives": self.objectives, "details": self.details, "advice": list(self.advice)}


@dataclass
class ObjectiveTable:
    name: str      # score_i
    column: str    # the column the stats come from (norm_score_i when the run was normalised)
    table: pd.DataFrame


@dataclass
class Report:
    path: Path
    problem_type: str
    n_rows: int
    n_baseline: int
    columns: list[str]
    objectives: list[ObjectiveTable]
    flags: list[Flag]
    notes: list[str] = field(default_factory=list)

    @property
    def codes(self) -> list[str]:
        return [f.code for f in self.flags] or [HEALTHY]

    @property
    def pathologies(self) -> int:
        return len(self.flags)

    @property
    def healthy(self) -> bool:
        return not self.flags

    def as_dict(self) -> dict:
        def clean(v):
            return None if isinstance(v, float) and not math.isfinite(v) else v

        objs = [{"objective": o.name, "column": o.column,
                 "generations": [{k: clean(v) for k, v in r.items()} for r in o.table.to_dict("records")]}
                for o in self.objectives]
        flags = [f.as_dict() for f in self.flags] or [{"code": HEALTHY, "objectives": [], "details": [],
                                                       "advice": list(ADVICE[HEALTHY])}]
        return {"file": str(self.path), "problem_type": self.problem_type, "rows": self.n_rows,
                "baseline_rows_excluded": self.n_baseline, "columns": self.columns, "objectives": objs,
                "flags": flags, "codes": self.codes, "pathologies": self.pathologies, "notes": self.notes}

    def to_json(self) -> str:
        return json.dumps(self.as_dict(), indent=2, default=str)

    def render(self) -> str:
        return render(self)


def _fmt(v, digits: int = 6) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return f"{v:.{digits}g}"


def _render_table(t: pd.DataFrame) -> list[str]:
    head = f"{'gen':>5} {'count':>6} {'invalid':>7} {'best':>12} {'mean':>12} {'std':>10} {'invalid%':>8} {'CV%':>6}"
    lines = [head]
    for r in t.itertuples(index=False):
        gen = "all" if isinstance(r.generation, float) and math.isnan(r.generation) else str(int(r.generation))
        pct = "-" if math.isnan(r.invalid_pct) else f"{r.invalid_pct:.1f}"
        cv = "-" if math.isnan(r.cv_pct) else f"{r.cv_pct:.1f}"
        lines.append(f"{gen:>5} {r.count:>6} {r.invalid:>7} {_fmt(r.best):>12} {_fmt(r.mean):>12} "
                     f"{_fmt(r.std, 4):>10} {pct:>8} {cv:>6}")
    return lines


def render(rep: Report) -> str:
    n_gen = len(rep.objectives[0].table) if rep.objectives and "generation" in rep.columns else None
    out = [f"{rep.path}: {rep.n_rows} candidate row(s)"
           + (f", {rep.n_baseline} baseline row(s) excluded" if rep.n_baseline else "")
           + (f", {n_gen} generation(s)" if n_gen is not None else "") + f"; problem type {rep.problem_type}"]
    for o in rep.objectives:
        out.append("")
        out.append(f"objective {o.name}" + (f" (statistics of {o.column})" if o.column != o.name else ""))
        out.extend(_render_table(o.table))
    out.append("")
    for note in rep.notes:
        out.append(f"note: {note}")
        out.append("")
    if rep.healthy:
        out.append(HEALTHY)
        out.extend(f"  - {a}" for a in ADVICE[HEALTHY])
        return "\n".join(out)
    for f in rep.flags:
        out.append(f.code + (f" [{', '.join(f.objectives)}]" if f.objectives else ""))
        out.extend(f"  {d}" for d in f.details)
        out.append("  what to do:")
        out.extend(f"  - {a}" for a in f.advice)
    out.append("")
    out.append(f"{rep.pathologies} pathology(ies) found: {', '.join(rep.codes)} (exit status {rep.pathologies})")
    return "\n".join(out)


def _flag(found: dict[str, Flag], code: str, detail: str, objective: str | None = None) -> None:
    f = found.setdefault(code, Flag(code))
    if detail not in f.details:
        f.details.append(detail)
    if objective and objective not in f.objectives:
        f.objectives.append(objective)


def _check_objective(loaded: Loaded, o: ObjectiveTable, problem_type: str, found: dict[str, Flag],
                     notes: list[str]) -> None:
    t, name = o.table, o.name
    values = numeric(list(loaded.df[o.column]), problem_type)
    kinds = failure_kinds(loaded, np.isnan(values))
    why = f"; failures by kind (from metadata): {kinds}" if kinds else ""
    detail = rules.all_invalid(t, name, problem_type)
    if detail:
        _flag(found, "ALL_INVALID", detail + why, name)
        return  # nothing else can be measured on no valid score
    detail = rules.identical_scores(t, name, problem_type, values)
    if detail:
        # a stall or a zero CV would only restate this; the cache is the cause to fix first
        _flag(found, "IDENTICAL_SCORES", detail, name)
        return
    # raw scores, not normalised ones: a normalised baseline is 1.0 by construction, however noisy it was
    repeats = repeated_measurements(loaded, name, problem_type)
    detail = rules.high_variance(repeats, name)
    if detail:
        _flag(found, "HIGH_VARIANCE", detail, name)
    elif not repeats and NO_REPEATS_NOTE not in notes:
        notes.append(NO_REPEATS_NOTE)
    if not loaded.has_generation:
        return  # the per-generation rules need generations
    for code, rule in (("INCREASING_INVALID_RATE", rules.increasing_invalid_rate),
                       ("STALLED_CONVERGENCE", rules.stalled_convergence)):
        detail = rule(t, name, problem_type)
        if detail:
            _flag(found, code, detail + (why if code == "INCREASING_INVALID_RATE" else ""), name)


def diagnose(csv_path: str | os.PathLike, problem_type: str = "min") -> Report:
    """Read a results CSV and classify the run. Raises ResultsFileError when the file is missing,
    empty or not a CSV; missing columns are reported as flags, not raised."""
    if problem_type not in ("min", "max"):
        raise ValueError(f"problem_type={problem_type!r} must be 'min' (lower is better) or 'max' (higher is better)")
    loaded = read_results(csv_path)
    found: dict[str, Flag] = {}
    if not loaded.score_cols:
        _flag(found, "NO_SCORE_COLUMN", missing_column_detail(loaded.columns, "score_1"))
    if not loaded.has_generation:
        _flag(found, "NO_GENERATION_COLUMN", missing_column_detail(loaded.columns, "generation")
              + "; the table below treats every row as one group")
    objectives = [ObjectiveTable(s, c, generation_table(loaded, c, problem_type))
                  for s, c in zip(loaded.score_cols, loaded.rank_cols)]
    for change in compiler_changes(loaded):
        _flag(found, "COMPILER_CHANGED", change)
    notes: list[str] = []
    for o in objectives:
        _check_objective(loaded, o, problem_type, found, notes)
    flags = [found[c] for c in CODES if c in found]
    return Report(loaded.path, problem_type, len(loaded.df), loaded.n_baseline, loaded.columns, objectives, flags, notes)
