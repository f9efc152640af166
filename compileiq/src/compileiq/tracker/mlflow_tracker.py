"""MLflowTracker: one MLflow run per search, written through an explicit MlflowClient.

The client (not mlflow's fluent API) keeps the tracker off the global "active run" a user's own
code may be using. One ``log_batch`` per generation carries every candidate's scores (metrics
``score_1..k``, or ``score_names``, stepped by param_id) and the generation's summary (``best_*``,
``valid``, ``failed``, stepped by generation), so a 32-candidate generation costs one round trip,
not NVIDIA's nested run per candidate.
"""

from __future__ import annotations

import getpass
import json
import math
import time

from .base import BaseTracker


def _mlflow():
    try:
        import mlflow  # noqa: F401
        from mlflow.tracking import MlflowClient
    except ImportError as exc:  # pragma: no cover - mlflow is a dependency of the tracker extra
        raise ImportError("MLflowTrackerConfig needs MLflow: pip install mlflow") from exc
    return MlflowClient


class MLflowTracker(BaseTracker):
    def __init__(self, tracker_config):
        super().__init__(tracker_config)
        cfg = self.tracker_config
        self.client = _mlflow()(tracking_uri=cfg.tracking_uri)
        self.experiment_name = cfg.experiment_name or f"{getpass.getuser()}-ciq-search"
        exp = self.client.get_experiment_by_name(self.experiment_name)
        self.experiment_id = exp.experiment_id if exp is not None else self.client.create_experiment(self.experiment_name)
        self.run_name = cfg.run_name
        self.run_id: str | None = None
        self._rows: list[dict] = []

    def _names(self, k: int) -> list[str]:
        names = list(self.tracker_config.score_names)
        return names[:k] if len(names) >= k else [f"score_{i + 1}" for i in range(k)]

    def search_starts(self, **kwargs) -> None:
        tags = {"type": "search", "status": "running"}
        if self.tracker_config.description:
            tags["mlflow.note.content"] = self.tracker_config.description
        run = self.client.create_run(self.experiment_id, run_name=self.run_name, tags=tags)
        self.run_id = run.info.run_id
        self.run_name = run.info.run_name
        cfg = {k: v for k, v in (kwargs.get("search_config") or {}).items() if v is not None}
        from mlflow.entities import Param
        self.client.log_batch(self.run_id, params=[Param(k, str(v)[:6000]) for k, v in cfg.items()])

    def generation_starts(self, generation_number: int, **kwargs) -> None:
        self._rows = []

    def pre_objective(self, config, **kwargs) -> None:
        self._rows.append({"param_id": kwargs.get("param_id"), "params": config})

    def post_objective(self, scores, **kwargs) -> None:
        if self._rows and self._rows[-1]["param_id"] == kwargs.get("param_id"):
            self._rows[-1].update(scores=scores, failed=bool(kwargs.get("failed")),
                                  baseline=bool(kwargs.get("baseline")))

    def generation_ends(self, generation_number: int, **kwargs) -> None:
        from mlflow.entities import Metric
        k = kwargs.get("num_objectives", 1)
        names = self._names(k)
        now = int(time.time() * 1000)
        metrics, best = [], [None] * k
        pick = max if kwargs.get("problem_type") == "max" else min
        for row in self._rows:
            if row.get("failed") or "scores" not in row:
                continue
            vals = row["scores"] if isinstance(row["scores"], (list, tuple)) else [row["scores"]]
            step = row["param_id"] if isinstance(row["param_id"], int) else 0
            prefix = "baseline_" if row.get("baseline") else ""
            for i, v in enumerate(vals):
                if isinstance(v, (int, float)) and math.isfinite(v):
                    metrics.append(Metric(prefix + names[i], float(v), now, step))
                    if not prefix:
                        best[i] = v if best[i] is None else pick(best[i], v)
        failed = sum(1 for r in self._rows if r.get("failed"))
        metrics += [Metric("valid", float(len(self._rows) - failed), now, generation_number),
                    Metric("failed", float(failed), now, generation_number)]
        metrics += [Metric(f"best_{n}", float(b), now, generation_number) for n, b in zip(names, best) if b is not None]
        for i in range(0, len(metrics), 1000):  # MLflow takes at most 1000 metrics per batch
            self.client.log_batch(self.run_id, metrics=metrics[i:i + 1000])
        if self.tracker_config.log_config:
            self.client.log_text(self.run_id, json.dumps(self._rows, default=str, indent=1),
                                 f"candidates/generation_{generation_number:04d}.json")

    def search_ends(self, **kwargs) -> None:
        if self.run_id is None:
            return
        status = "FAILED" if kwargs.get("error") else "FINISHED"
        self.client.set_tag(self.run_id, "status", status.lower())
        self.client.set_terminated(self.run_id, status=status)


__all__ = ["MLflowTracker"]
