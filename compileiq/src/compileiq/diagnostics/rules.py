"""The pathologies, each a test on one objective's per-generation table.

Thresholds follow NVIDIA's diagnose_csv (see docs/diagnostics.md). Each rule returns a detail
sentence when it fires and None when it does not.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

INVALID_RISE_POINTS = 10.0   # last third's invalid % minus the first third's
MIN_GENS_INVALID = 3
STALL_IMPROVEMENT = 0.01     # best must improve by at least 1% over the stall window
MIN_GENS_STALL = 4
HIGH_CV_PCT = 15.0           # median per-generation CV
MIN_ROWS_IDENTICAL = 5


def all_invalid(t: pd.DataFrame, name: str, problem_type: str) -> str | None:
    n, bad = int(t["count"].sum()), int(t["invalid"].sum())
    if n and bad == n:
        return f"all {n} {name} scores are invalid (INVALID_SCORE '*', NaN or a penalty beyond 1e10)"
    return None


def identical_scores(t: pd.DataFrame, name: str, problem_type: str, values: np.ndarray) -> str | None:
    ok = values[~np.isnan(values)]
    if len(ok) >= MIN_ROWS_IDENTICAL and np.all(ok == ok[0]):
        return f"all {len(ok)} valid {name} scores equal {ok[0]:.6g}: no candidate changed the measurement"
    return None


def increasing_invalid_rate(t: pd.DataFrame, name: str, problem_type: str) -> str | None:
    n = len(t)
    if n < MIN_GENS_INVALID:
        return None
    third = max(1, n // 3)
    first, last = t.iloc[:third], t.iloc[-third:]
    pct_first = 100 * first["invalid"].sum() / first["count"].sum()
    pct_last = 100 * last["invalid"].sum() / last["count"].sum()
    if pct_last - pct_first > INVALID_RISE_POINTS:
        return (f"{name}: invalid rate rose from {pct_first:.1f}% (first {third} generation(s)) to {pct_last:.1f}% "
                f"(last {third}), more than {INVALID_RISE_POINTS:g} points")
    return None


def stalled_convergence(t: pd.DataFrame, name: str, problem_type: str) -> str | None:
    n = len(t)
    if n < MIN_GENS_STALL:
        return None
    window = max(2, n // 4)
    bsf = t["best_so_far"].to_numpy(dtype=float)
    ref, last = bsf[n - 1 - window], bsf[n - 1]
    if np.isnan(ref) or np.isnan(last):
        return None  # no valid score before the window: nothing to compare
    gain = (ref - last) if problem_type == "min" else (last - ref)
    rel = gain / abs(ref) if ref != 0 else (0.0 if gain == 0 else np.inf)
    if rel < STALL_IMPROVEMENT:
        g0, g1 = t["generation"].iloc[n - 1 - window], t["generation"].iloc[n - 1]
        return (f"{name}: best improved {rel:.2%} over the last {window} generations ({ref:.6g} after generation "
                f"{g0}, {last:.6g} after generation {g1}); less than {STALL_IMPROVEMENT:.0%}")
    return None


def high_variance(t: pd.DataFrame, name: str, problem_type: str) -> str | None:
    cvs = t["cv_pct"].dropna()
    if len(cvs) and cvs.median() > HIGH_CV_PCT:
        return (f"{name}: median per-generation CV is {cvs.median():.1f}% (above {HIGH_CV_PCT:g}%) over "
                f"{len(cvs)} generation(s)")
    return None
