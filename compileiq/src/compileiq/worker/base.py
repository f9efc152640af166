"""The Worker interface (NVIDIA-compatible) and the one function that calls an objective safely.

``evaluate_call`` runs in whatever process a worker uses. It never raises: an exception inside
the objective becomes INVALID_SCORE with its traceback in ``Score.error`` (Search writes it to the
run log), and a return value breaking the contract becomes INVALID_SCORE with the "not in
expected format" message.
"""

from __future__ import annotations

import os
import time
import traceback
from abc import ABC, abstractmethod
from typing import Any, Callable

from ..errors import BaselineMissingError
from ..utils.validation import BASELINE_CONFIG, INVALID_SCORE, Score, is_invalid

BASELINE_ID = "baseline"

# Score.error text after this marker goes to the run log but not to the console
LOG_ONLY_MARKER = "\n--- full output (run log only) ---\n"

FROMHEX_HINT = (
    "hint: the objective passed the candidate to bytes.fromhex, the legacy pattern "
    "`open(path, 'wb').write(bytes.fromhex(config))`. With a dict or mixed search space the "
    "candidate is not a hex string. Write compiler configurations with "
    "compileiq.utils.helpers.save_compiler_config(path, config), which does the fromhex itself "
    "(see the compileiq-debug skill, 'TypeError around fromhex')"
)


def _fromhex_failure(exc: BaseException) -> bool:
    if not isinstance(exc, TypeError) or "fromhex" not in str(exc):
        tb = traceback.extract_tb(exc.__traceback__) if isinstance(exc, TypeError) else []
        return any("fromhex" in (fr.line or "") for fr in tb)
    return True


def evaluate_call(function: Callable, params: Any, param_id: Any, num_objectives: int,
                  metadata: dict | None = None, is_baseline: bool = False) -> Score:
    """Call the objective once and turn whatever happens into a Score."""
    meta = {"pid": os.getpid(), **(metadata or {})}
    t0 = time.perf_counter()
    try:
        raw = function(params)
    except Exception as exc:  # the objective's own failure: scored invalid, never propagated
        text = "".join(traceback.format_exception(exc))
        if _fromhex_failure(exc):
            text += FROMHEX_HINT + "\n"
        detail = getattr(exc, "log_text", None)  # e.g. a compiler's full output: run log only
        if detail:
            text += LOG_ONLY_MARKER + str(detail).rstrip() + "\n"
        return Score(INVALID_SCORE, param_id, params, num_objectives, is_baseline=is_baseline, metadata=meta,
                     error=text, failure="exception", elapsed=time.perf_counter() - t0)
    return Score(raw, param_id, params, num_objectives, is_baseline=is_baseline, metadata=meta, strict=False,
                 elapsed=time.perf_counter() - t0)


def failed_score(param_id: Any, params: Any, num_objectives: int, failure: str, error: str,
                 metadata: dict | None = None, is_baseline: bool = False, elapsed: float | None = None) -> Score:
    """A Score for a candidate that produced no return value (timeout, crashed process, ...)."""
    return Score(INVALID_SCORE, param_id, params, num_objectives, is_baseline=is_baseline,
                 metadata=metadata, error=error, failure=failure, elapsed=elapsed)


class Worker(ABC):
    """Runs a batch of candidates through the objective and returns one Score per candidate.

    Subclass it for a custom worker: implement ``run``; use ``self.normalize``,
    ``self.baseline_score`` and ``self.normalize_scores`` to support normalize=True. Keyword
    arguments given to ``Search.start(...)`` beyond num_workers / task_timeout reach ``run``.
    """

    respects_num_workers: bool = True
    supports_timeout: bool = True

    def __init__(self, cache_folder=None, normalize: bool = False, tracker=None, **_ignored):
        self.cache_folder = cache_folder
        self.normalize = normalize
        self.tracker = tracker
        self.baseline_score: Score | None = None

    @classmethod
    def create(cls, cache_folder, normalize, tracker=None) -> "Worker":
        return cls(cache_folder=cache_folder, normalize=normalize, tracker=tracker)

    @abstractmethod
    def run(self, *, function: Callable, params_pool: list, params_ids: list, num_function_returns: int = 1,
            **kwargs) -> list[Score]:
        """Evaluate every candidate (plus the baseline first when normalising and none exists yet)."""

    def close(self) -> None:
        """Release processes or connections; Search calls it once at the end of a run."""

    # -- normalisation helpers ------------------------------------------------------------------
    @staticmethod
    def normalize_scores(score: Any, baseline: Any) -> Any:
        """score / baseline per objective (NVIDIA's rule): INVALID_SCORE where either is invalid or the
        baseline is 0, never an exception for those. Several objectives come as a tuple or a list (the
        result has the score's type); a Score may stand for its value. No baseline (None) raises."""
        score = score.score if isinstance(score, Score) else score
        baseline = baseline.score if isinstance(baseline, Score) else baseline
        if baseline is None:
            raise BaselineMissingError(
                "Worker.normalize_scores: no baseline score to divide by (baseline=None). With normalize=True a "
                "worker evaluates BASELINE_CONFIG first and keeps its score in self.baseline_score "
                "(Worker.set_baseline does both); or run the search with normalize=False")

        def one(s, b):
            if is_invalid(s) or is_invalid(b) or b == 0:
                return INVALID_SCORE
            try:
                return s / b
            except (TypeError, ArithmeticError):  # not numbers: scored invalid, as NVIDIA does
                return INVALID_SCORE

        many = (tuple, list)
        if isinstance(score, many) or isinstance(baseline, many):
            s = list(score) if isinstance(score, many) else [score] * len(baseline)
            b = list(baseline) if isinstance(baseline, many) else [baseline] * len(s)
            if len(s) != len(b):
                raise ValueError(f"Worker.normalize_scores: {len(s)} score(s) but {len(b)} baseline score(s); "
                                 "give the baseline one score per objective")
            out = [one(x, y) for x, y in zip(s, b)]
            return out if isinstance(score if isinstance(score, many) else baseline, list) else tuple(out)
        return one(score, baseline)

    def needs_baseline(self) -> bool:
        return self.normalize and self.baseline_score is None

    def set_baseline(self, score: Score) -> Score:
        score.is_baseline = True
        score.param_id = BASELINE_ID
        score.norm_score = self.normalize_scores(score.score, score.score)
        self.baseline_score = score
        return score

    def apply_normalization(self, scores: list[Score]) -> list[Score]:
        if self.normalize and self.baseline_score is not None:
            for s in scores:
                if not s.is_baseline:
                    s.norm_score = self.normalize_scores(s.score, self.baseline_score.score)
        return scores


BaseWorker = Worker

__all__ = ["Worker", "BaseWorker", "evaluate_call", "failed_score", "BASELINE_ID", "BASELINE_CONFIG", "FROMHEX_HINT"]
