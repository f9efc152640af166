"""BaseTracker (NVIDIA's lifecycle) and how Search drives a tracker.

Lifecycle, in call order: setup -> search_starts -> [generation_starts -> [pre_objective ->
post_objective]* -> generation_ends]* -> search_ends -> cleanup.

Unlike NVIDIA's workers, ours never call a tracker: Search calls it in the parent process once a
batch is scored, pre_objective / post_objective in pairs per candidate and in ask order. A tracker
therefore holds one connection (one MLflow client, one set of loguru sinks) whatever the worker,
and never slows an evaluation down. A tracker that raises loses its own record, not the search: the
error becomes one warning per method.
"""

from __future__ import annotations

import warnings
from abc import ABC, abstractmethod
from typing import Any

from .config import TrackerConfig


class TrackerWarning(UserWarning):
    """A tracker failed to record something; the search itself goes on."""


class BaseTracker(ABC):
    def __init__(self, tracker_config: TrackerConfig):
        self.tracker_type = tracker_config.type
        self.tracker_config = tracker_config.model_copy()
        self.search_title: str | None = None
        self.setup()

    def setup(self, **kwargs) -> None:
        """Acquire resources (sinks, connections)."""

    def cleanup(self, **kwargs) -> None:
        """Release them; called once after the search, also when it failed."""

    @abstractmethod
    def search_starts(self, **kwargs) -> None: ...

    @abstractmethod
    def search_ends(self, **kwargs) -> None: ...

    @abstractmethod
    def generation_starts(self, generation_number: int, **kwargs) -> None: ...

    @abstractmethod
    def generation_ends(self, generation_number: int, **kwargs) -> None: ...

    @abstractmethod
    def pre_objective(self, config: Any, **kwargs) -> None: ...

    @abstractmethod
    def post_objective(self, scores: Any, **kwargs) -> None: ...


class DisabledTracker(BaseTracker):
    """Records nothing (the default)."""

    def __init__(self, tracker_config: TrackerConfig | None = None):
        from .config import DisabledTrackerConfig
        super().__init__(tracker_config or DisabledTrackerConfig())

    def search_starts(self, **kwargs): pass
    def search_ends(self, **kwargs): pass
    def generation_starts(self, generation_number, **kwargs): pass
    def generation_ends(self, generation_number, **kwargs): pass
    def pre_objective(self, config, **kwargs): pass
    def post_objective(self, scores, **kwargs): pass


class TrackerDriver:
    """What Search holds: calls the tracker's hooks and turns a failing hook into one warning."""

    def __init__(self, tracker: BaseTracker | None, problem_type: str = "min"):
        self.tracker = tracker
        self.problem_type = problem_type
        self._warned: set[str] = set()
        self.active = tracker is not None and not isinstance(tracker, DisabledTracker)

    def _call(self, method: str, *args, **kwargs) -> None:
        if not self.active:
            return
        try:
            getattr(self.tracker, method)(*args, **kwargs)
        except Exception as exc:  # a tracker must never stop the search
            if method not in self._warned:
                self._warned.add(method)
                warnings.warn(f"{type(self.tracker).__name__}.{method} failed ({type(exc).__name__}: {exc}); "
                              "the search goes on without that record", TrackerWarning, stacklevel=3)

    def search_starts(self, **kw) -> None:
        self._call("search_starts", **kw)

    def batch(self, generation: int, scores: list, k: int) -> None:
        """One scored batch: generation_starts, a pre/post pair per candidate, generation_ends."""
        if not self.active:
            return
        self._call("generation_starts", generation)
        for s in scores:
            meta = {"param_id": s.param_id, "generation": generation, "baseline": bool(s.is_baseline)}
            self._call("pre_objective", s.params, **meta)
            score = list(s.values()) if k > 1 else s.score
            self._call("post_objective", score, failed=s.invalid, norm_score=s.norm_score, **meta)
        self._call("generation_ends", generation, scores=scores, num_objectives=k, problem_type=self.problem_type)

    def search_ends(self, **kw) -> None:
        self._call("search_ends", **kw)

    def close(self) -> None:
        self._call("cleanup")
        self.active = False


__all__ = ["BaseTracker", "DisabledTracker", "TrackerDriver", "TrackerWarning"]
