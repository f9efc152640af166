"""Experiment trackers (NVIDIA's names): ``Search(tracker_config=LoguruTrackerConfig(...))``.

No tracker runs unless one is configured. loguru and MLflow are optional: ``pip install loguru``
/ ``pip install mlflow`` (both come with compileiq's ``tracker`` extra).
"""

from __future__ import annotations

from typing import Any

from .base import BaseTracker, DisabledTracker, TrackerDriver, TrackerWarning
from .config import (DefaultTrackerConfig, DisabledTrackerConfig, LoguruTrackerConfig, MLflowTrackerConfig,
                     TrackerConfig, TrackerTypes)


def __getattr__(name: str) -> Any:
    # the loguru and MLflow trackers import their library only when asked for
    if name == "LoguruTracker":
        from .loguru_tracker import LoguruTracker
        return LoguruTracker
    if name == "MLflowTracker":
        from .mlflow_tracker import MLflowTracker
        return MLflowTracker
    raise AttributeError(f"module 'compileiq.tracker' has no attribute {name!r}")


def make_tracker(config: Any) -> BaseTracker:
    """The tracker for ``Search(tracker_config=...)``: None or a Disabled config give DisabledTracker."""
    if config is None:
        return DisabledTracker()
    if isinstance(config, BaseTracker):
        return config
    if isinstance(config, dict):
        kind = TrackerTypes(config.get("type", "disabled"))
        config = {TrackerTypes.LOGURU: LoguruTrackerConfig, TrackerTypes.MLFLOW: MLflowTrackerConfig}.get(
            kind, DisabledTrackerConfig).model_validate(config)
    if not isinstance(config, TrackerConfig):
        from ..errors import ConfigurationError
        raise ConfigurationError(f"tracker_config={config!r} must be a TrackerConfig (LoguruTrackerConfig(...), "
                                 "MLflowTrackerConfig(...)), a BaseTracker instance or None")
    if config.type == TrackerTypes.LOGURU:
        from .loguru_tracker import LoguruTracker
        return LoguruTracker(config)
    if config.type == TrackerTypes.MLFLOW:
        from .mlflow_tracker import MLflowTracker
        return MLflowTracker(config)
    return DisabledTracker(config)


__all__ = ["BaseTracker", "DisabledTracker", "LoguruTracker", "MLflowTracker", "TrackerTypes", "TrackerConfig",
           "DisabledTrackerConfig", "DefaultTrackerConfig", "LoguruTrackerConfig", "MLflowTrackerConfig",
           "make_tracker", "TrackerDriver", "TrackerWarning"]
