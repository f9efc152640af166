"""The results CSV: columns ``metadata, generation, score_1..score_k, params[, norm_score_1..k]``.

metadata and params are JSON text (metadata stays text in memory too; params are parsed); a failed score is INVALID_SCORE ("*"). Files are written to a
temporary name in the same folder and renamed, so a reader (or a killed run) never sees half a file.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pandas as pd

from ..utils.fs import atomic_write

SCORE_RE = re.compile(r"^score_(\d+)$")
NORM_RE = re.compile(r"^norm_score_(\d+)$")


def score_columns(df: pd.DataFrame) -> list[str]:
    cols = [c for c in df.columns if SCORE_RE.match(str(c))]
    return sorted(cols, key=lambda c: int(SCORE_RE.match(c).group(1)))


def norm_columns(df: pd.DataFrame) -> list[str]:
    cols = [c for c in df.columns if NORM_RE.match(str(c))]
    return sorted(cols, key=lambda c: int(NORM_RE.match(c).group(1)))


def column_order(k: int, normalized: bool) -> list[str]:
    cols = ["metadata", "generation"] + [f"score_{i + 1}" for i in range(k)] + ["params"]
    if normalized:
        cols += [f"norm_score_{i + 1}" for i in range(k)]
    return cols


def parse_params(text: Any) -> Any:
    """A params cell: JSON text back to what the objective received; other text stays text (NVIDIA's rule)."""
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text


def _score_cell(v: Any) -> Any:
    if isinstance(v, str):
        if v.strip() == "*":
            return "*"
        try:
            f = float(v)
        except ValueError:
            return "*"
        if f != f or f in (float("inf"), float("-inf")):
            return "*"  # NaN and +-inf are invalid scores, as in the objective contract
        return int(f) if f.is_integer() and "." not in v and "e" not in v.lower() else f
    if v is None or (isinstance(v, float) and v != v):
        return "*"
    return v


def _generation(v: Any, path) -> int:
    text = str(v).strip()
    if text in ("", "*"):
        return -1
    try:
        return int(float(text))
    except (ValueError, OverflowError):
        raise ValueError(f"{path}: generation {text!r} is not a whole number") from None


def write_csv(df: pd.DataFrame, path: str | os.PathLike) -> Path:
    """Write atomically: temporary file in the same folder, fsync, rename."""
    path = Path(path)
    if path.exists() and path.is_dir():
        raise IsADirectoryError(f"results path {path} is a folder; give a file name such as {path / 'results.csv'}")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise FileNotFoundError(f"cannot write results to {path}: the folder {parent} does not exist; create it first")
    out = df.copy()
    if "metadata" in out.columns:
        out["metadata"] = [v if isinstance(v, str) else json.dumps(v, default=str) for v in out["metadata"]]
    if "params" in out.columns:
        out["params"] = [_params_cell(v) for v in out["params"]]
    return atomic_write(path, out.to_csv(index=False), fsync=True)


def _params_cell(v: Any) -> str:
    """A params value as CSV text that parse_params reads back as the same value. A string is written
    as it is (a hex candidate stays readable) unless it reads as JSON: "1234" or "true" would come
    back as a number or a bool, so those are written as JSON strings."""
    if isinstance(v, str):
        try:
            json.loads(v)
        except ValueError:
            return v
    return json.dumps(v, default=str)


def read_csv(path: str | os.PathLike) -> pd.DataFrame:
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"results file {path} does not exist")
    df = pd.read_csv(path, dtype=str, keep_default_na=False)
    if "score" in df.columns and "score_1" not in df.columns:
        df = df.rename(columns={"score": "score_1"})  # older single-objective files
    for c in score_columns(df) + norm_columns(df):
        df[c] = [_score_cell(v) for v in df[c]]
    if "generation" in df.columns:
        df["generation"] = [_generation(v, path) for v in df["generation"]]
    if "params" in df.columns:
        df["params"] = [parse_params(v) for v in df["params"]]
    return df  # metadata stays JSON text, as NVIDIA keeps it (utils.validation.metadata_dict reads it)
