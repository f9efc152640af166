"""The per-generation table of one objective: count, invalid count, best, mean, std, invalid %, CV %."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .load import Loaded, numeric

COLUMNS = ["generation", "count", "invalid", "best", "mean", "median", "std", "invalid_pct", "cv_pct",
           "best_so_far"]


def _group_stats(gen, vals: np.ndarray, problem_type: str) -> dict:
    ok = vals[~np.isnan(vals)]
    n, bad = len(vals), int(np.isnan(vals).sum())
    best = (ok.min() if problem_type == "min" else ok.max()) if len(ok) else np.nan
    mean = ok.mean() if len(ok) else np.nan
    std = ok.std(ddof=1) if len(ok) > 1 else np.nan
    cv = 100 * std / abs(mean) if len(ok) > 1 and mean != 0 else np.nan
    return {"generation": gen, "count": n, "invalid": bad, "best": best, "mean": mean,
            "median": np.median(ok) if len(ok) else np.nan, "std": std, "invalid_pct": 100 * bad / n if n else np.nan,
            "cv_pct": cv}


def generation_table(loaded: Loaded, column: str, problem_type: str = "min") -> pd.DataFrame:
    """One row per generation (ascending) for ``column``; without a generation column, the whole
    file is one group with generation NaN."""
    df = loaded.df
    vals = numeric(list(df[column]), problem_type)
    if loaded.has_generation:
        gens = np.asarray(df["generation"])
        rows = [_group_stats(int(g), vals[gens == g], problem_type) for g in sorted(set(gens.tolist()))]
    else:
        rows = [_group_stats(np.nan, vals, problem_type)]
    table = pd.DataFrame(rows, columns=COLUMNS[:-1])
    acc = np.fmin.accumulate if problem_type == "min" else np.fmax.accumulate  # fmin/fmax skip NaN generations
    table["best_so_far"] = acc(table["best"].to_numpy(dtype=float)) if len(table) else []
    return table
