"""Scores: the objective's return value checked against the contract, plus where it came from.

Rules (the same as NVIDIA's so that objectives port unchanged):
  * num_objectives == 1: one int or float (not a bool, not a 1-tuple, not a list);
  * num_objectives == k > 1: a tuple or list of exactly k numbers;
  * INVALID_SCORE ("*") marks a failed candidate; a lone "*" with k > 1 counts for all k;
  * NaN and +-inf become INVALID_SCORE.
``validate_scores`` and ``Score(...)`` raise ValueError on a value breaking the rules (NVIDIA's
behaviour); workers build Scores with ``strict=False``, so that such a value scores INVALID_SCORE
and logs the "not in expected format" message instead of stopping the search.
"""

from __future__ import annotations

import json
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


def check_scores(value: Any, num_objectives: int) -> tuple[Any, str | None]:
    """(score, failure), never raising: score is a number (k=1) or a tuple of k entries, each a
    number or "*"; failure names what was wrong ("format", "nonfinite", "invalid") or is None."""
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


def validate_scores(func_return: Any, num_objectives: int) -> Any:
    """NVIDIA's check of an objective's return value: the value with NaN / inf turned into
    INVALID_SCORE (a tuple when num_objectives > 1), or ValueError saying what is wrong."""
    if isinstance(num_objectives, bool) or not isinstance(num_objectives, int) or num_objectives < 1:
        raise ValueError(f"num_objectives={num_objectives!r} must be an int >= 1")
    score, failure = check_scores(func_return, num_objectives)
    if failure == "format":
        raise ValueError(f"objective return value not in expected format: {func_return!r} "
                         f"({type(func_return).__name__}); {format_rule(num_objectives)}, each an int, a float "
                         f"or INVALID_SCORE ('*')")
    return score


def is_invalid(score: Any) -> bool:
    if isinstance(score, tuple):
        return any(s == INVALID_SCORE for s in score)
    return isinstance(score, str) and score == INVALID_SCORE


class Score:
    """One evaluation: the score, its normalised value, the candidate and where it came from.

    NVIDIA's keywords: ``Score(score=..., param_id=..., num_objectives=..., params=..., norm_score=...,
    metadata=..., is_baseline=...)``; ``params`` is optional (Search.tell fills it in from the
    asked candidate). A score that breaks the contract raises ValueError, as NVIDIA's does; workers
    pass ``strict=False`` so that a bad return value scores INVALID_SCORE with the reason instead.
    ``metadata`` is a dict or a JSON object string (NVIDIA's type); the results keep both as JSON."""

    def __init__(self, score: Any = INVALID_SCORE, param_id: Any = None, params: Any = None, num_objectives: int = 1,
                 norm_score: Any = None, is_baseline: bool = False, metadata: dict | str | None = None,
                 error: str | None = None, failure: str | None = None, elapsed: float | None = None,
                 *, strict: bool = True):
        if isinstance(num_objectives, bool) or not isinstance(num_objectives, int) or num_objectives < 1:
            raise ValueError(f"Score(num_objectives={num_objectives!r}): must be an int >= 1")
        self.raw = score
        self.num_objectives = num_objectives
        checked, fmt_failure = check_scores(score, num_objectives)
        if fmt_failure == "format" and strict and failure is None:
            validate_scores(score, num_objectives)  # raises the ValueError that says what is wrong
        self.score = checked
        self.param_id = param_id
        self.params = params
        self.norm_score = norm_score
        self.is_baseline = is_baseline
        self.metadata = metadata if isinstance(metadata, str) else dict(metadata or {})
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

    @property
    def failed(self) -> bool:
        """True when the score (or, when normalising, the normalised score) holds INVALID_SCORE."""
        return self.invalid or (self.norm_score is not None and is_invalid(self.norm_score))

    def values(self) -> tuple:
        """The score as a k-tuple (entries may be INVALID_SCORE)."""
        return self.score if isinstance(self.score, tuple) else (self.score,)

    def norm_values(self) -> tuple | None:
        if self.norm_score is None:
            return None
        return tuple(self.norm_score) if isinstance(self.norm_score, (tuple, list)) else (self.norm_score,)

    def metadata_dict(self) -> dict:
        return metadata_dict(self.metadata)

    def model_dump(self) -> dict:
        """The NVIDIA fields as a dict (Score is a pydantic model there)."""
        return {"score": self.score, "norm_score": self.norm_score, "params": self.params,
                "metadata": self.metadata if isinstance(self.metadata, str) else json.dumps(self.metadata, default=str),
                "param_id": self.param_id, "num_objectives": self.num_objectives, "is_baseline": self.is_baseline}

    def __repr__(self):
        extra = f", norm_score={self.norm_score!r}" if self.norm_score is not None else ""
        return f"Score(param_id={self.param_id!r}, score={self.score!r}{extra}, failure={self.failure!r})"


def metadata_dict(meta: Any) -> dict:
    """A row's or Score's metadata as a dict: dicts as they are, JSON object text parsed, other
    text kept under "metadata", nothing as {}."""
    if isinstance(meta, dict):
        return meta
    if isinstance(meta, str) and meta.strip():
        try:
            parsed = json.loads(meta)
        except ValueError:
            return {"metadata": meta}
        return parsed if isinstance(parsed, dict) else {"metadata": parsed}
    return {}


SingleScore = float | int | str
MultiScore = tuple

__all__ = ["Score", "INVALID_SCORE", "BASELINE_CONFIG", "BASELINE_DNA", "validate_scores", "check_scores", "is_invalid",
           "metadata_dict", "SingleScore", "MultiScore"]
