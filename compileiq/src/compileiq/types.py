"""The shared type names, at NVIDIA-compatible import paths (``compileiq.types``).

Each concept lives in its own module (configuration.py, tracker/, worker/, utils/validation.py);
this module gathers the names NVIDIA's scripts import from here.
"""

from __future__ import annotations

import enum
from typing import Any

from .configuration import (MAX_POOL, InternalSearchConfiguration, ProblemType, SearchConfiguration,  # noqa: F401
                            derived_cull_size, derived_pool_size)
from .tracker.config import (DefaultTrackerConfig, DisabledTrackerConfig, LoguruTrackerConfig,  # noqa: F401
                             MLflowTrackerConfig, TrackerConfig, TrackerTypes)
from .utils.validation import BASELINE_CONFIG, BASELINE_DNA, INVALID_SCORE, MultiScore, Score, SingleScore  # noqa: F401


class MultiScoreComparison(str, enum.Enum):
    """How ``SearchResult.get_best_result`` ranks a multi-objective run."""

    AVERAGE = "avg"          # the row with the best mean of its scores
    STDDEV = "stddev"        # the row whose scores vary least among themselves (NVIDIA's rule)
    PARETO = "pareto_front"  # every non-dominated row (the default)


class WorkerTypes(enum.StrEnum):
    """Built-in workers by name (a Worker subclass or instance works too)."""

    NATIVE = "native"
    ISOLATED = "isolated"
    ASYNC = "async"
    RAY = "ray"
    MANUAL = "manual"          # no managed execution: Search.ask / Search.tell
    SEQUENTIAL = "sequential"  # ours: in the parent, one candidate after the other
    DEFAULT = NATIVE

    def worker_type(self) -> type:
        """The Worker subclass for this member (NVIDIA's name)."""
        from . import worker as w
        return {"native": w.MultiProcessWorker, "isolated": w.IsoMultiProcessWorker, "async": w.AsyncWorker,
                "ray": w.RayWorker, "manual": w.ManualWorker, "sequential": w.SequentialWorker}[self.value]

    worker_class = worker_type


def __getattr__(name: str) -> Any:
    # Worker and BaseTracker live in their own packages; imported lazily so that types stays light
    if name in ("Worker", "BaseWorker"):
        from .worker.base import Worker
        return Worker
    if name == "BaseTracker":
        from .tracker.base import BaseTracker
        return BaseTracker
    raise AttributeError(f"module 'compileiq.types' has no attribute {name!r}")


__all__ = ["SearchConfiguration", "InternalSearchConfiguration", "ProblemType", "MultiScoreComparison", "WorkerTypes",
           "Worker", "Score", "SingleScore", "MultiScore", "INVALID_SCORE", "BASELINE_CONFIG", "BASELINE_DNA",
           "TrackerTypes", "TrackerConfig", "DisabledTrackerConfig", "DefaultTrackerConfig", "LoguruTrackerConfig",
           "MLflowTrackerConfig", "BaseTracker"]
