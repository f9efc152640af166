"""Read a results CSV for diagnosis, turning every way it can be unreadable into one clear error.

Missing or misspelt columns are not errors here: they are findings (NO_SCORE_COLUMN,
NO_GENERATION_COLUMN) that the report explains, so ``Loaded`` carries what was found.
"""

from __future__ import annotations

import csv
import difflib
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import CompileIQError
from ..results.csv_io import norm_columns, read_csv, score_columns
from ..utils.validation import metadata_dict

EXPECTED = ("metadata", "generation", "score_1", "params")
INVALID_ABOVE = 1e10  # failed evaluations are often written as a huge penalty instead of "*"


class ResultsFileError(CompileIQError, ValueError):
    """The results CSV cannot be read at all (missing, empty, not a CSV)."""


@dataclass
class Loaded:
    path: Path
    df: pd.DataFrame              # candidate rows only (the baseline row removed)
    columns: list[str]            # the file's columns, as written
    baseline: pd.DataFrame        # the baseline row(s), kept apart so no statistic includes them
    score_cols: list[str]         # score_1..k
    rank_cols: list[str]          # the column ranked per objective: norm_score_i when present, else score_i

    @property
    def n_baseline(self) -> int:
        return len(self.baseline)

    @property
    def has_generation(self) -> bool:
        return "generation" in self.df.columns


def _header(path: Path) -> list[str]:
    with path.open(newline="", errors="replace") as fh:
        return next(csv.reader(fh), [])


def read_results(path: str | os.PathLike) -> Loaded:
    path = Path(path)
    if not path.exists():
        raise ResultsFileError(f"{path}: no such file; give the results CSV a search wrote "
                               "(Search(..., dump_results='results.csv') or SearchResult.save())")
    if path.is_dir():
        raise ResultsFileError(f"{path} is a folder; give the results CSV inside it, e.g. {path / 'results.csv'}")
    if path.stat().st_size == 0:
        raise ResultsFileError(f"{path} is empty (0 bytes): no evaluation was written. If a search is still running "
                               "it writes the file after its first generation; if it crashed, see its log")
    header = _header(path)
    try:
        df = read_csv(path)
    except (ValueError, pd.errors.ParserError, UnicodeDecodeError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ResultsFileError(f"{path} is not a readable results CSV ({first}); expected the columns "
                               f"{', '.join(EXPECTED)}, ... with one evaluation per row") from None
    if len(df) == 0:
        raise ResultsFileError(f"{path} holds a header ({', '.join(header)}) but no rows: no evaluation was "
                               "recorded; rerun the search or wait for its first generation")
    base = np.zeros(len(df), dtype=bool)
    if "metadata" in df.columns:
        base = np.array([bool(metadata_dict(m).get("baseline")) for m in df["metadata"]], dtype=bool)
    baseline, df = df[base].reset_index(drop=True), df[~base].reset_index(drop=True)
    if len(df) == 0:
        raise ResultsFileError(f"{path} holds only the baseline row and no candidate: the search stopped before "
                               "its first generation finished; see its log, or run `compileiq doctor`")
    scores = score_columns(df)
    norms = set(norm_columns(df))
    rank = [f"norm_{c}" if f"norm_{c}" in norms else c for c in scores]
    return Loaded(path, df, header, baseline, scores, rank)


def missing_column_detail(columns: list[str], wanted: str) -> str:
    """What to tell a user whose file lacks ``wanted``: the columns it has, the ones expected, and
    the near-miss that is probably a typo."""
    near = difflib.get_close_matches(wanted, columns, n=1, cutoff=0.6)
    text = (f"no '{wanted}' column; the file has {', '.join(repr(c) for c in columns) or 'no columns'}, "
            f"expected {', '.join(EXPECTED)}{', ...' if wanted.startswith('score') else ''}")
    if wanted.startswith("score"):
        text += " (score is accepted for score_1)"
    if near and near[0] != wanted:
        text += f". '{near[0]}' looks like a misspelling of '{wanted}'"
    return text


def numeric(values, problem_type: str) -> np.ndarray:
    """Scores as floats with every invalid one (INVALID_SCORE '*', NaN, unreadable, a penalty
    beyond 1e10 in the bad direction) as NaN."""
    out = np.full(len(values), np.nan)
    for i, v in enumerate(values):
        try:
            out[i] = float(v)
        except (TypeError, ValueError):
            pass
    bad = ~np.isfinite(out)
    bad |= (out > INVALID_ABOVE) if problem_type == "min" else (out < -INVALID_ABOVE)
    out[bad] = np.nan
    return out


def failure_kinds(loaded: Loaded, invalid: np.ndarray) -> str:
    """"timeout 3, exception 2" from the metadata of the invalid rows, or "" when none is recorded."""
    if "metadata" not in loaded.df.columns:
        return ""
    kinds: dict[str, int] = {}
    for meta, bad in zip(loaded.df["metadata"], invalid):
        if bad:
            kind = metadata_dict(meta).get("failure")
            kind = str(kind) if kind else "not recorded"
            kinds[kind] = kinds.get(kind, 0) + 1
    if set(kinds) <= {"not recorded"}:
        return ""
    return ", ".join(f"{k} {n}" for k, n in sorted(kinds.items(), key=lambda kv: -kv[1]))


def repeated_measurements(loaded: Loaded, column: str, problem_type: str) -> list[tuple[str, np.ndarray]]:
    """(label, valid values) of every configuration measured at least twice: the baseline rows
    (BASELINE_CONFIG, {}), and candidates whose params appear in more than one row (duplicates, or
    an elite measured again). Only these say anything about measurement noise."""
    import json
    groups: dict[str, list] = {}
    labels: dict[str, str] = {}
    for frame, is_base in ((loaded.baseline, True), (loaded.df, False)):
        if column not in frame.columns or "params" not in frame.columns:
            continue
        for p, v in zip(frame["params"], frame[column]):
            key = "baseline" if is_base else json.dumps(p, sort_keys=True, default=str)
            groups.setdefault(key, []).append(v)
            labels.setdefault(key, "the baseline" if is_base else f"params {key[:60]}")
    out = []
    for key, vals in groups.items():
        x = numeric(vals, problem_type)
        x = x[~np.isnan(x)]
        if len(x) >= 2:
            out.append((labels[key], x))
    return out


def compiler_changes(loaded: Loaded) -> list[str]:
    """One sentence per compiler whose recorded binary differs between rows (metadata "compilers")."""
    if "metadata" not in loaded.df.columns:
        return []
    seen: dict[str, dict[str, list[int]]] = {}
    frames = [loaded.baseline, loaded.df]
    row = 0
    for frame in frames:
        for meta in frame.get("metadata", []):
            for name, desc in (metadata_dict(meta).get("compilers") or {}).items():
                seen.setdefault(name, {}).setdefault(str(desc), []).append(row)
            row += 1
    out = []
    for name, descs in seen.items():
        if len(descs) > 1:
            parts = [f"{len(rows)} row(s) with {desc}" for desc, rows in descs.items()]
            out.append(f"{name} changed during the run: " + "; ".join(parts))
    return out
