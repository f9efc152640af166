"""SearchResult: the table of every evaluation of a run, with best-row and Pareto-front queries."""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np
import pandas as pd

from .csv_io import norm_columns, read_csv, score_columns, write_csv


def _numeric(col: pd.Series) -> np.ndarray:
    return pd.to_numeric(col.replace("*", np.nan), errors="coerce").to_numpy(dtype=float)


def _is_baseline(meta: Any) -> bool:
    return isinstance(meta, dict) and bool(meta.get("baseline"))


def calculate_pareto_front(points: np.ndarray) -> np.ndarray:
    """Boolean mask of the non-dominated rows of ``points`` (minimisation; NaN rows never on it)."""
    pts = np.asarray(points, dtype=float)
    n = len(pts)
    ok = ~np.isnan(pts).any(axis=1) if n else np.zeros(0, bool)
    mask = ok.copy()
    for i in np.flatnonzero(ok):
        others = pts[ok]
        dominated = np.all(others <= pts[i], axis=1) & np.any(others < pts[i], axis=1)
        if dominated.any():
            mask[i] = False
    return mask


class SearchResult:
    """Every evaluated candidate: ``metadata, generation, score_1..k, params[, norm_score_1..k]``."""

    def __init__(self, results: pd.DataFrame, problem_type: str = "min"):
        if problem_type not in ("min", "max"):
            raise ValueError(f"problem_type={problem_type!r} must be 'min' or 'max'")
        self.problem_type = problem_type
        self._df = results.reset_index(drop=True)

    # -- construction -----------------------------------------------------------------------------
    @classmethod
    def from_dataframe(cls, df: pd.DataFrame, problem_type: str = "min", clear_duplicates: bool = False) -> "SearchResult":
        r = cls(df.copy(), problem_type)
        return r.clear_duplicates() if clear_duplicates else r

    @classmethod
    def from_csv(cls, path: str | os.PathLike, problem_type: str = "min", clear_duplicates: bool = True) -> "SearchResult":
        df = read_csv(path)
        if not score_columns(df):
            raise ValueError(f"{path}: no score_1 column; is this a CompileIQ results CSV (columns metadata, generation, score_1.., params)?")
        return cls.from_dataframe(df, problem_type, clear_duplicates)

    # -- access -----------------------------------------------------------------------------------
    @property
    def num_objectives(self) -> int:
        return len(score_columns(self._df))

    def get_results(self) -> pd.DataFrame:
        return self._df.copy()

    def __len__(self) -> int:
        return len(self._df)

    def __getitem__(self, i: int) -> dict:
        return self._df.iloc[i].to_dict()

    def __repr__(self) -> str:
        return f"SearchResult({len(self._df)} rows, {self.num_objectives} objective(s), problem_type={self.problem_type!r})"

    def save(self, path: str | os.PathLike = "./search_results.csv") -> str:
        return str(write_csv(self._df, path))

    def clear_duplicates(self) -> "SearchResult":
        """Drop rows whose params and scores are both identical to an earlier row (in place)."""
        cols = score_columns(self._df) + norm_columns(self._df)
        key = [json.dumps(p, sort_keys=True, default=str) + "|" + "|".join(str(r[c]) for c in cols)
               for p, (_, r) in zip(self._df["params"], self._df.iterrows())]
        self._df = self._df[~pd.Series(key).duplicated().to_numpy()].reset_index(drop=True)
        return self

    # -- queries ----------------------------------------------------------------------------------
    def _ranking_matrix(self) -> tuple[np.ndarray, pd.DataFrame]:
        """Candidate rows (baseline excluded) and their scores oriented for minimisation."""
        df = self._df
        if "metadata" in df.columns:
            df = df[[not _is_baseline(m) for m in df["metadata"]]]
        cols = norm_columns(df) or score_columns(df)
        if not cols:
            raise ValueError("the results hold no score_1 column")
        m = np.column_stack([_numeric(df[c]) for c in cols]) if len(df) else np.zeros((0, len(cols)))
        return (-m if self.problem_type == "max" else m), df

    def get_best_result(self, multiscore_scope: str = "pareto_front") -> dict | list[dict]:
        """Single objective: the best row as a dict (``score_1``, ..., ``params``).

        Several objectives: the Pareto front (a list of rows) for "pareto_front", or the row with the
        best mean score for "avg". Normalised scores rank when present; the baseline row never wins."""
        m, df = self._ranking_matrix()
        valid = ~np.isnan(m).any(axis=1)
        if not valid.any():
            raise ValueError(
                f"no valid score among {len(df)} candidate row(s): every evaluation returned INVALID_SCORE. "
                "Run `python -m compileiq diagnose <results.csv>` or see the compileiq-debug skill")
        if m.shape[1] == 1 or multiscore_scope == "avg":
            agg = m.mean(axis=1)
            agg[~valid] = np.inf
            return df.iloc[int(np.argmin(agg))].to_dict()
        if multiscore_scope == "pareto_front":
            return self.pareto_front()
        raise ValueError(f"multiscore_scope={multiscore_scope!r} must be 'pareto_front' or 'avg'")

    def pareto_front(self) -> list[dict]:
        """The non-dominated rows (several objectives only), best first by mean score."""
        m, df = self._ranking_matrix()
        if m.shape[1] < 2:
            raise ValueError("pareto_front() needs a search with num_objectives >= 2; use get_best_result()")
        mask = calculate_pareto_front(m)
        idx = np.flatnonzero(mask)
        idx = idx[np.argsort(m[idx].mean(axis=1), kind="stable")]
        return [df.iloc[int(i)].to_dict() for i in idx]

    calculate_pareto_front = staticmethod(calculate_pareto_front)


__all__ = ["SearchResult", "calculate_pareto_front"]
