"""Tracker configurations (pydantic, NVIDIA's names and fields). ``Search(tracker_config=...)`` takes one."""

from __future__ import annotations

import enum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SkipValidation, field_validator


class TrackerTypes(enum.Enum):
    LOGURU = "loguru"
    MLFLOW = "mlflow"
    DISABLED = "disabled"
    DEFAULT = DISABLED  # no tracker unless one is asked for


class TrackerConfig(BaseModel):
    """Base of every tracker configuration. Extra fields are kept and reach the tracker."""

    model_config = ConfigDict(extra="allow", arbitrary_types_allowed=True)
    type: TrackerTypes
    enqueue: bool = True

    @field_validator("type", mode="before")
    @classmethod
    def _type_by_value(cls, v):
        return TrackerTypes(v) if isinstance(v, str) else v  # "loguru" as well as TrackerTypes.LOGURU


class DisabledTrackerConfig(TrackerConfig):
    type: Literal[TrackerTypes.DISABLED] = TrackerTypes.DISABLED


class DefaultTrackerConfig(DisabledTrackerConfig):
    pass


CONSOLE = "console"  # sink=None: stderr


class LoguruTrackerConfig(TrackerConfig):
    """Log the search with loguru: a line per generation, and a line per candidate.

    ``sink``: a file path, an open stream, a callable, or a list of these; None means the console
    (stderr). Candidate lines reach console sinks only with ``log_candidates=True``: a search of a
    few thousand candidates must not flood a terminal. ``level`` is the minimum level of each sink."""

    type: Literal[TrackerTypes.LOGURU] = TrackerTypes.LOGURU
    sink: SkipValidation[Any] = Field(None, validate_default=True)  # the default too becomes [None]: the console
    level: str | int = "INFO"
    format: str = "{time:YYYY-MM-DD HH:mm:ss.SSS} | {level: <8} | {extra[task_id]} | {message}"
    enqueue: bool = True
    log_candidates: bool | None = None  # None: files yes, console no

    @field_validator("sink", mode="after")
    @classmethod
    def _as_list(cls, v):
        return list(v) if isinstance(v, (list, tuple)) else [v]


class MLflowTrackerConfig(TrackerConfig):
    """Log the search to MLflow: one run per search, the configuration as parameters, per-generation
    metrics (best, valid, failed), every candidate's scores as metrics stepped by param_id and,
    with ``log_config``, each generation's candidates as a JSON artifact."""

    type: Literal[TrackerTypes.MLFLOW] = TrackerTypes.MLFLOW
    experiment_name: str | None = None
    run_name: str | None = None
    tracking_uri: str | None = None
    description: str | None = None
    score_names: list[str] = []
    log_config: bool = True


__all__ = ["TrackerTypes", "TrackerConfig", "DisabledTrackerConfig", "DefaultTrackerConfig", "LoguruTrackerConfig",
           "MLflowTrackerConfig"]
