"""The decision log: one CSV row per candidate decision, with the provenance needed to trust it later.

Rows are appended, so a log can collect the decisions of many runs; a file whose header differs
is never appended to, because mixing layouts would silently misalign columns. The one exception is
a log written by an older version, whose header is the start of today's: new rows go in with its
columns (the newer columns left out), so upgrading never orphans a log.
"""

from __future__ import annotations

import csv
import math
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable

from . import provenance

COLUMNS = (
    "timestamp", "candidate", "decision", "reasons", "config_hash", "controls", "command", "baseline_command",
    "input_shape", "framework", "compilers", "gpu", "driver", "cpu", "problem_type", "trials", "warmup",
    "baseline_n", "baseline_mean", "baseline_sd", "baseline_p5", "baseline_p95", "baseline_cv",
    "candidate_n", "candidate_mean", "candidate_sd", "candidate_p5", "candidate_p95", "candidate_cv",
    "speedup", "p_value", "cohens_d", "t", "df", "spread_rule",
    "noise_rule", "min_speedup", "max_trials", "speedup_median", "speedup_low", "speedup_high", "interval_confidence",
    "device", "others_cpu", "others_cpu_share",
)


def _num(x: float) -> str:
    if isinstance(x, float) and not math.isfinite(x):
        return str(x)
    return f"{x:.6g}" if isinstance(x, float) else str(x)


def context(*, baseline_command: str = "", input_shape: str = "", framework: str = "", problem_type: str = "min",
            trials: int = 0, warmup: int = 0, max_trials: int = 0) -> dict:
    """The part of a row shared by every decision of one validation."""
    return {"timestamp": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "baseline_command": baseline_command, "input_shape": input_shape or "", "framework": framework or "",
            "compilers": provenance.compilers_text(), **provenance.machine(), "problem_type": problem_type,
            "trials": trials, "warmup": warmup, "max_trials": max_trials}


def row(decision, ctx: dict) -> dict:
    v = decision.verdict
    out = dict(ctx)
    out.update(candidate=decision.name, decision=v.decision, reasons=" ".join(v.reasons),
               config_hash=decision.config_hash, controls=decision.controls or "", command=decision.command or "",
               speedup=_num(v.speedup), p_value=_num(v.p_value), cohens_d=_num(v.cohens_d), t=_num(v.t),
               df=_num(v.df), spread_rule=v.spread_rule, noise_rule=v.noise_rule, min_speedup=_num(float(v.min_speedup)),
               device=v.device or "")
    ri = v.ratio
    if ri is not None:
        out.update(speedup_median=_num(ri.median), speedup_low=_num(ri.low), speedup_high=_num(ri.high),
                   interval_confidence=_num(ri.confidence))
    if v.load is not None:
        out.update(others_cpu=_num(v.load.others), others_cpu_share=_num(v.load.others_share))
    for side, s in (("baseline", v.baseline), ("candidate", v.candidate)):
        for k, val in s.as_dict().items():
            out[f"{side}_{k}"] = _num(val)
    return {c: out.get(c, "") for c in COLUMNS}


def _header(path: Path) -> list[str]:
    with path.open(newline="", errors="replace") as fh:
        return next(csv.reader(fh), [])


def check(path: str | os.PathLike) -> bool:
    """Raise if the log cannot take our rows; True when it is new. Called before measuring, so a
    bad --output is reported before minutes of trials, not after."""
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(f"decision log {path} is a folder; give a file name such as {path / 'validation.csv'}")
    if not path.parent.is_dir():
        raise FileNotFoundError(f"cannot write the decision log {path}: the folder {path.parent} does not exist; "
                                "create it or choose another --output")
    if not path.exists() or path.stat().st_size == 0:
        return True
    header = _header(path)
    if tuple(header) != COLUMNS[:len(header)] or len(header) < COLUMNS.index("spread_rule"):
        raise ValueError(f"{path} already exists with different columns ({', '.join(header[:6])}, ...); "
                         "give --output a new file name so decisions of different layouts are not mixed")
    return False


def append(path: str | os.PathLike, decisions: Iterable, ctx: dict) -> Path:
    path = Path(path)
    fresh = check(path)
    columns = COLUMNS if fresh else tuple(_header(path))
    with path.open("a", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=columns, extrasaction="ignore")
        if fresh:
            w.writeheader()
        for d in decisions:
            w.writerow(row(d, ctx))
    return path
