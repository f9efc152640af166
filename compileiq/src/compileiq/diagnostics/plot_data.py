"""The numbers behind the plots, kept apart from the drawing so they can be tested without matplotlib."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..results.search_result import calculate_pareto_front
from .load import Loaded, numeric
from .table import generation_table


def generation_series(loaded: Loaded, objective: int = 0, problem_type: str = "min") -> pd.DataFrame:
    """Per generation: best, best so far, median and invalid rate (%) of one objective."""
    if not loaded.has_generation:
        raise ValueError(f"{loaded.path}: no generation column, so there is no per-generation series to plot")
    if objective >= len(loaded.rank_cols):
        raise ValueError(f"{loaded.path}: objective {objective + 1} does not exist; the file has "
                         f"{len(loaded.rank_cols)} score column(s)")
    t = generation_table(loaded, loaded.rank_cols[objective], problem_type)
    return t[["generation", "best", "best_so_far", "median", "invalid_pct"]].reset_index(drop=True)


@dataclass
class FrontPoints:
    """Valid candidate points (in the file's units) and which of them form the Pareto front."""

    x_label: str
    y_label: str
    points: np.ndarray        # shape (n, 2)
    on_front: np.ndarray      # bool, shape (n,)
    baseline: tuple[float, float] | None

    @property
    def front(self) -> np.ndarray:
        """Front points sorted by x, ready to draw as a line."""
        f = self.points[self.on_front]
        return f[np.argsort(f[:, 0], kind="stable")]


def front_points(loaded: Loaded, problem_type: str = "min", objectives: tuple[int, int] = (0, 1)) -> FrontPoints:
    """Two objectives' valid points and their non-dominated subset (in the problem's direction)."""
    cols = loaded.rank_cols
    if len(cols) < 2:
        raise ValueError(f"{loaded.path}: a Pareto front needs at least two score columns, the file has {len(cols)}")
    cx, cy = (cols[i] for i in objectives)
    pts = np.column_stack([numeric(list(loaded.df[cx]), problem_type), numeric(list(loaded.df[cy]), problem_type)])
    pts = pts[~np.isnan(pts).any(axis=1)]
    mask = calculate_pareto_front(-pts if problem_type == "max" else pts)
    return FrontPoints(cx, cy, pts, mask, _baseline_point(loaded, cx, cy, problem_type))


def _baseline_point(loaded: Loaded, cx: str, cy: str, problem_type: str) -> tuple[float, float] | None:
    b = loaded.baseline
    if not len(b) or cx not in b.columns or cy not in b.columns:
        return None
    x, y = numeric([b[cx].iloc[0], b[cy].iloc[0]], problem_type)
    return None if np.isnan(x) or np.isnan(y) else (float(x), float(y))
