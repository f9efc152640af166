"""SequentialWorker: the objective in the parent, one candidate after the other.

For debugging (breakpoints and prints work, nothing is pickled) and as the template for a custom
worker: ``run`` hands the batch to ``run_batches``, which evaluates the baseline first when
normalising, and evaluates each candidate with ``evaluate_call``.
"""

from __future__ import annotations

from typing import Callable

from ..utils.validation import Score
from ._common import Job, run_batches, warn_ignored
from .base import Worker, evaluate_call


class SequentialWorker(Worker):
    """Runs every candidate in the calling process; num_workers and task_timeout do not apply."""

    respects_num_workers = False
    supports_timeout = False

    def run(self, *, function: Callable, params_pool: list, params_ids: list, num_function_returns: int = 1,
            num_workers=None, task_timeout=None, **kwargs) -> list[Score]:
        warn_ignored(self, kwargs)

        def evaluate(jobs: list[Job]) -> list[Score]:
            return [evaluate_call(function, j.params, j.param_id, num_function_returns,
                                  metadata={"worker": 0}, is_baseline=j.is_baseline) for j in jobs]

        return run_batches(self, params_pool, params_ids, num_function_returns, evaluate)
