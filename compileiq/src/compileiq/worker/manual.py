"""ManualWorker (NVIDIA 1.1's name): no managed execution, you evaluate the candidates yourself.

With ``Search(..., worker_type=WorkerTypes.MANUAL)`` the loop is yours::

    for _ in range(generations):
        candidates = search.ask()
        search.tell([Score(score=my_eval(c.params), param_id=c.param_id, num_objectives=1) for c in candidates])

``start()`` refuses this worker (it has nothing to run the objective with). ``Search.evaluate``
still works: it calls the objective in this process, one candidate after the other.
"""

from __future__ import annotations

from typing import Callable

from ..utils.validation import Score
from ._common import Job, run_batches, warn_ignored
from .base import Worker, evaluate_call


class ManualWorker(Worker):
    respects_num_workers = False
    supports_timeout = False
    manual = True  # Search.start refuses it: the caller drives ask / tell

    def run(self, *, function: Callable, params_pool: list, params_ids: list, num_function_returns: int = 1,
            num_workers=None, task_timeout=None, **kwargs) -> list[Score]:
        """Used by ``Search.evaluate`` only: the objective in this process, one candidate at a time."""
        warn_ignored(self, kwargs)

        def evaluate(jobs: list[Job]) -> list[Score]:
            return [evaluate_call(function, j.params, j.param_id, num_function_returns,
                                  metadata={"worker": "manual"}, is_baseline=j.is_baseline) for j in jobs]

        return run_batches(self, params_pool, params_ids, num_function_returns, evaluate)


__all__ = ["ManualWorker"]
