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
HIGH_CV_PCT = 15.0           # median CV of the configurations measured more than once
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


def high_variance(repeats: list[tuple[str, np.ndarray]], name: str) -> str | None:
    """Measurement noise, judged only on configurations measured more than once.

    The per-generation CV in the table spans *different* candidates: it measures how diverse a
    generation is, and a deterministic objective (spill bytes, a synthetic function) shows a high
    one with no noise at all. Noise is what one configuration does when it is measured again."""
    cvs = []
    for _, x in repeats:
        m = float(np.mean(x))
        cvs.append(100.0 * float(np.std(x, ddof=1)) / abs(m) if m != 0 else (0.0 if np.all(x == x[0]) else np.inf))
    if cvs and float(np.median(cvs)) > HIGH_CV_PCT:
        worst = max(range(len(cvs)), key=lambda i: cvs[i])
        return (f"{name}: {len(cvs)} configuration(s) measured more than once, median CV {np.median(cvs):.1f}% "
                f"(above {HIGH_CV_PCT:g}%); the worst is {repeats[worst][0]} at {cvs[worst]:.1f}% over "
                f"{len(repeats[worst][1])} measurements")
    return None
