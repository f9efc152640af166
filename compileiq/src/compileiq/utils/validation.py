"""Scores: the objective's return value checked against the contract, plus where it came from.

Rules (the same as NVIDIA's so that objectives port unchanged):
  * num_objectives == 1: one int or float (not a bool, not a 1-tuple, not a list);
  * num_objectives == k > 1: a tuple or list of exactly k numbers;
  * INVALID_SCORE ("*") marks a failed candidate; a lone "*" with k > 1 counts for all k;
  * NaN and +-inf become INVALID_SCORE.
A value breaking the rules scores INVALID_SCORE and logs the "not in expected format" message.
"""

from __future__ import annotations

import logging
import math
import numbers
from typing import Any

INVALID_SCORE = "*"
BASELINE_CONFIG: dict = {}
BASELINE_DNA = BASELINE_CONFIG  # the older name, still used by NVIDIA's documentation

log = logging.getLogger("compileiq")

# failure kinds a Score can carry (Search's first-generation diagnosis groups by them)
FAILURES = ("format", "invalid", "nonfinite", "exception", "timeout", "crash", "heartbeat", "baseline")


def format_rule(k: int) -> str:
    if k == 1:
        return "with num_objectives=1 the objective must return one int or float (not a bool, a 1-tuple or a list)"
    return f"with num_objectives={k} the objective must return a tuple or list of exactly {k} numbers"


def _scalar(v) -> tuple[Any, str | None]:
    if isinstance(v, str) and v == INVALID_SCORE:
        return INVALID_SCORE, "invalid"
    if hasattr(v, "item") and getattr(v, "shape", None) == ():
        v = v.item()  # numpy / torch 0-d values
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        return INVALID_SCORE, "format"
    v = float(v) if not isinstance(v, int) else v
    if isinstance(v, float) and not math.isfinite(v):
        return INVALID_SCORE, "nonfinite"
    return v, None


def validate_scores(value: Any, num_objectives: int) -> tuple[Any, str | None]:
    """(score, failure): score is a number (k=1) or a tuple of k entries, each a number or "*"."""
    k = num_objectives
    if isinstance(value, str) and value == INVALID_SCORE:
        return (INVALID_SCORE if k == 1 else (INVALID_SCORE,) * k), "invalid"
    if k == 1:
        if isinstance(value, (tuple, list)):
            return INVALID_SCORE, "format"
        return _scalar(value)
    if not isinstance(value, (tuple, list)) or len(value) != k:
        return (INVALID_SCORE,) * k, "format"
    out, failure = [], None
    for v in value:
        s, f = _scalar(v)
        if f == "format":
            return (INVALID_SCORE,) * k, "format"
        failure = failure or f
        out.append(s)
    return tuple(out), failure


def is_invalid(score: Any) -> bool:
    if isinstance(score, tuple):
        return any(s == INVALID_SCORE for s in score)
    return isinstance(score, str) and score == INVALID_SCORE


class Score:
    """One evaluation: the validated score, its normalised value, the candidate and provenance.

    Built by workers (including custom ones) from the objective's raw return value."""

    def __init__(self, score: Any, param_id: Any, params: Any, num_objectives: int = 1,
                 norm_score: Any = None, is_baseline: bool = False, metadata: dict | None = None,
                 error: str | None = None, failure: str | None = None, elapsed: float | None = None):
        self.raw = score
        self.num_objectives = num_objectives
        checked, fmt_failure = validate_scores(score, num_objectives)
        self.score = checked
        self.param_id = param_id
        self.params = params
        self.norm_score = norm_score
        self.is_baseline = is_baseline
        self.metadata = dict(metadata or {})
        self.error = error
        self.failure = failure or fmt_failure
        self.elapsed = elapsed
        if fmt_failure == "format" and failure is None:
            self.error = (f"objective return value not in expected format: {score!r} "
                          f"({type(score).__name__}); {format_rule(num_objectives)}")
            log.warning("candidate %s: %s", param_id, self.error)

    @property
    def invalid(self) -> bool:
        return is_invalid(self.score)

    def values(self) -> tuple:
        """The score as a k-tuple (entries may be INVALID_SCORE)."""
        return self.score if isinstance(self.score, tuple) else (self.score,)

    def norm_values(self) -> tuple | None:
        if self.norm_score is None:
            return None
        return self.norm_score if isinstance(self.norm_score, tuple) else (self.norm_score,)

    def __repr__(self):
        extra = f", norm_score={self.norm_score!r}" if self.norm_score is not None else ""
        return f"Score(param_id={self.param_id!r}, score={self.score!r}{extra}, failure={self.failure!r})"


SingleScore = float | int | str
MultiScore = tuple

__all__ = ["Score", "INVALID_SCORE", "BASELINE_CONFIG", "BASELINE_DNA", "validate_scores", "is_invalid",
           "SingleScore", "MultiScore"]
