"""SearchResult: the table of every evaluation of a run, with best-row and Pareto-front queries."""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np
import pandas as pd

from ..utils.validation import metadata_dict
from .csv_io import column_order, norm_columns, parse_params, read_csv, score_columns, write_csv


def _numeric(col: pd.Series) -> np.ndarray:
    return pd.to_numeric(col.replace("*", np.nan), errors="coerce").to_numpy(dtype=float)


def _is_baseline(meta: Any) -> bool:
    return bool(metadata_dict(meta).get("baseline"))


def _scope(multiscore_scope) -> str:
    from ..types import MultiScoreComparison
    try:
        return MultiScoreComparison(getattr(multiscore_scope, "value", multiscore_scope)).value
    except ValueError:
        raise ValueError(f"multiscore_scope={multiscore_scope!r} must be 'pareto_front', 'avg' or 'stddev' "
                         "(compileiq.types.MultiScoreComparison)") from None


def _problem_type(problem_type: Any) -> str:
    pt = getattr(problem_type, "value", problem_type)
    if pt not in ("min", "max"):
        raise ValueError(f"problem_type={pt!r} must be 'min' or 'max' (compileiq.types.ProblemType)")
    return pt


def calculate_pareto_front(points: np.ndarray, problem_type: Any = "min") -> np.ndarray:
    """Boolean mask of the non-dominated rows of ``points`` (NaN rows never on it).

    A row is dominated when another is no worse in every objective and better in at least one;
    lower is better unless ``problem_type`` is "max" (a ``ProblemType`` works too). Rows equal in
    every objective both stay. Called on a SearchResult, as NVIDIA's method is, ``problem_type``
    defaults to that result's."""
    pts = np.asarray(points, dtype=float)
    if _problem_type(problem_type) == "max":
        pts = -pts
    n = len(pts)
    ok = ~np.isnan(pts).any(axis=1) if n else np.zeros(0, bool)
    mask = ok.copy()
    for i in np.flatnonzero(ok):
        others = pts[ok]
        dominated = np.all(others <= pts[i], axis=1) & np.any(others < pts[i], axis=1)
        if dominated.any():
            mask[i] = False
    return mask


class _ParetoOfResult:
    """``SearchResult.calculate_pareto_front``: the plain function on the class (minimisation unless
    told), and on a result NVIDIA's method, whose problem type is that result's."""

    def __get__(self, result, owner=None):
        if result is None:
            return calculate_pareto_front

        def bound(points, problem_type=None):
            return calculate_pareto_front(points, result.problem_type if problem_type is None else problem_type)
        bound.__doc__ = calculate_pareto_front.__doc__
        return bound


class SearchResult:
    """Every evaluated candidate: ``metadata, generation, score_1..k, params[, norm_score_1..k]``.

    ``metadata`` is a JSON object string per row (NVIDIA's column), holding our provenance too
    (param_id, seed, failure kind, elapsed_s, compilers, ...); ``utils.validation.metadata_dict``
    reads it. ``params`` are the candidates as the objective received them."""

    def __init__(self, df: pd.DataFrame, problem_type: Any = "min", num_scores: int | None = None):
        problem_type = _problem_type(problem_type)
        if not isinstance(df, pd.DataFrame):
            raise TypeError(f"SearchResult(df=...) takes a pandas DataFrame, not {type(df).__name__}")
        self.problem_type = problem_type
        self._df = df.reset_index(drop=True)
        found = len(score_columns(self._df))
        if num_scores is not None and found and num_scores != found:
            raise ValueError(f"SearchResult(num_scores={num_scores}) but the frame has {found} score_<i> column(s)")
        self._num_scores = num_scores if num_scores is not None else found

    # -- construction -----------------------------------------------------------------------------
    @classmethod
    def from_dataframe(cls, df: pd.DataFrame, problem_type: Any = "min", clear_duplicates: bool = True) -> "SearchResult":
        """A SearchResult from a frame (e.g. ``pd.read_csv`` of a results CSV): the JSON ``params`` become
        dicts / lists again (text that is not JSON stays text), as NVIDIA's does."""
        df = df.copy()
        if "params" in df.columns:
            df["params"] = [parse_params(p) for p in df["params"]]
        return cls._checked(df, problem_type, clear_duplicates)

    @classmethod
    def _checked(cls, df: pd.DataFrame, problem_type: Any, clear_duplicates: bool) -> "SearchResult":
        if not score_columns(df):
            raise ValueError("the frame has no score column: score columns are named score_1, score_2, ... "
                             f"(columns: {', '.join(map(str, df.columns))})")
        if "params" not in df.columns:
            raise ValueError(f"the frame has no 'params' column (columns: {', '.join(map(str, df.columns))})")
        r = cls(df, problem_type)
        return r.clear_duplicates() if clear_duplicates else r

    @classmethod
    def from_csv(cls, csv_path: str | os.PathLike, problem_type: Any = "min", clear_duplicates: bool = True) -> "SearchResult":
        df = read_csv(csv_path)
        if not score_columns(df):
            raise ValueError(f"{csv_path}: no score_1 column; is this a CompileIQ results CSV (columns metadata, "
                             "generation, score_1.., params)?")
        return cls._checked(df, problem_type, clear_duplicates)  # read_csv has parsed params once already

    @classmethod
    def empty(cls, num_scores: int, problem_type: Any = "min", normalized: bool = False) -> "SearchResult":
        return cls(pd.DataFrame(columns=column_order(num_scores, normalized)), problem_type, num_scores)

    # -- access -----------------------------------------------------------------------------------
    @property
    def df_results(self) -> pd.DataFrame:
        """The results frame itself (NVIDIA's attribute); ``get_results()`` returns a copy."""
        return self._df

    @property
    def num_scores(self) -> int:
        return self._num_scores

    num_objectives = num_scores

    @property
    def score_columns(self) -> list[str]:
        return score_columns(self._df)

    @property
    def norm_score_columns(self) -> list[str]:
        return norm_columns(self._df)

    @property
    def is_normalized(self) -> bool:
        return bool(self.norm_score_columns)

    def get_results(self) -> pd.DataFrame:
        return self._df.copy()

    def __len__(self) -> int:
        return len(self._df)

    def __getitem__(self, i: int) -> dict:
        return self._df.iloc[i].to_dict()

    def __repr__(self) -> str:
        return f"SearchResult({len(self._df)} rows, {self.num_scores} objective(s), problem_type={self.problem_type!r})"

    def save(self, filepath: str | os.PathLike = "./search_results.csv") -> str:
        return str(write_csv(self._df, filepath))

    def add_result(self, score, generation_num: int, normalize: bool = False) -> None:
        """Append one Score as a row (NVIDIA's method): metadata as JSON, its scores, its params.

        A row that does not fit raises before anything is added: not a Score, another number of
        objectives, a generation that is not an int, or ``normalize`` disagreeing with whether these
        results hold norm_score columns."""
        from ..utils.validation import Score
        if not isinstance(score, Score):
            raise TypeError(f"add_result takes a compileiq.utils.validation.Score, not {type(score).__name__} "
                            "(build one: Score(score=..., param_id=..., params=..., num_objectives=...))")
        if isinstance(generation_num, bool) or not isinstance(generation_num, (int, np.integer)):
            raise TypeError(f"add_result: generation_num={generation_num!r} must be an int (the generation the "
                            "score belongs to)")
        k = self.num_scores or score.num_objectives
        if score.num_objectives != k:
            raise ValueError(f"add_result: the Score has num_objectives={score.num_objectives}, the results {k}")
        nv = score.norm_values()
        if normalize and nv is None:
            raise ValueError("add_result(normalize=True): the Score has no norm_score")
        if len(self._df.columns) and normalize and not self.is_normalized:
            raise ValueError("add_result(score, generation_num, normalize=True), but these results have no "
                             "norm_score columns; create them with SearchResult.empty(k, problem_type, normalized=True)")
        if self.is_normalized and not normalize:
            raise ValueError(f"these results hold norm_score columns: {', '.join(self.norm_score_columns)}; "
                             "add_result(score, generation_num, normalize=True) with a Score that has norm_score")
        if not len(self._df.columns):
            self._df = pd.DataFrame(columns=column_order(k, normalize))
            self._num_scores = k
        meta = score.metadata if isinstance(score.metadata, str) else json.dumps(score.metadata, default=str)
        row = {"metadata": meta, "generation": int(generation_num), "params": score.params}
        for i, v in enumerate(score.values()):
            row[f"score_{i + 1}"] = v
        if normalize:
            for i, v in enumerate(nv):
                row[f"norm_score_{i + 1}"] = v
        new = pd.DataFrame([row], columns=self._df.columns if len(self._df.columns) else None)
        self._df = new if self._df.empty else pd.concat([self._df, new], ignore_index=True)

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

    def get_best_result(self, multiscore_scope: Any = "pareto_front") -> dict | list[dict]:
        """Single objective: the best row as a dict (``score_1``, ..., ``params``).

        Several objectives, by ``multiscore_scope`` (a ``MultiScoreComparison`` or its value):
        "pareto_front" (default) the non-dominated rows; "avg" the row with the best mean score;
        "stddev" NVIDIA's rule, the row whose scores have the smallest standard deviation among
        themselves (the largest for problem_type="max"). Normalised scores rank when present; the
        baseline row never wins."""
        scope = _scope(multiscore_scope)
        m, df = self._ranking_matrix()
        valid = ~np.isnan(m).any(axis=1)
        if not valid.any():
            raise ValueError(
                f"no valid score among {len(df)} candidate row(s): every evaluation returned INVALID_SCORE. "
                "Run `python -m compileiq diagnose <results.csv>` or see the compileiq-debug skill")
        if m.shape[1] == 1 or scope == "avg":
            agg = m.mean(axis=1)
        elif scope == "stddev":
            agg = np.std(m, axis=1, ddof=1)  # of the oriented values: the same spread as the raw ones
            agg = -agg if self.problem_type == "max" else agg
        else:
            return self.pareto_front()
        agg[~valid] = np.inf
        return df.iloc[int(np.argmin(agg))].to_dict()

    def pareto_front(self) -> list[dict]:
        """The non-dominated rows (several objectives only), best first by mean score."""
        m, df = self._ranking_matrix()
        if m.shape[1] < 2:
            raise ValueError("pareto_front() needs a search with num_objectives >= 2; use get_best_result()")
        mask = calculate_pareto_front(m)
        idx = np.flatnonzero(mask)
        idx = idx[np.argsort(m[idx].mean(axis=1), kind="stable")]
        return [df.iloc[int(i)].to_dict() for i in idx]

    calculate_pareto_front = _ParetoOfResult()


__all__ = ["SearchResult", "calculate_pareto_front"]
