"""AsyncWorker: an ``async def`` objective, many candidates at once on one event loop in the parent.

Suited to objectives that wait on something else (a remote compile service, an HTTP benchmark
runner, an asyncio subprocess): nothing is pickled and no process is started.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import threading
import time
from typing import Callable

from ..utils.validation import Score
from ._common import Job, num_workers_arg, run_batches, task_timeout_arg, warn_ignored
from .base import Worker, evaluate_call, failed_score


def _is_async(function: Callable) -> bool:
    while isinstance(function, functools.partial):
        function = function.func
    return inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(getattr(function, "__call__", None))


async def evaluate_async(function: Callable, job: Job, num_objectives: int, task_timeout: float | None,
                         metadata: dict | None = None) -> Score:
    """Await the objective, then let evaluate_call build the Score (same validation, tracebacks, hints)."""
    async def guarded():
        # the objective's own TimeoutError must not read as task_timeout
        try:
            return True, await function(job.params)
        except Exception as exc:
            return False, exc

    t0 = time.perf_counter()
    try:
        ok, value = await asyncio.wait_for(guarded(), task_timeout)
    except asyncio.TimeoutError:
        return failed_score(job.param_id, job.params, num_objectives, "timeout",
                            f"candidate {job.param_id!r} exceeded task_timeout={task_timeout:g}s and was "
                            f"cancelled; raise task_timeout if a clean compile+run takes longer",
                            metadata=metadata, is_baseline=job.is_baseline, elapsed=time.perf_counter() - t0)
    elapsed = time.perf_counter() - t0

    def replay(_params):
        if ok:
            return value
        raise value

    score = evaluate_call(replay, job.params, job.param_id, num_objectives, metadata, job.is_baseline)
    score.elapsed = elapsed
    return score


class AsyncWorker(Worker):
    """Awaits an ``async def`` objective for up to num_workers candidates at once (None: all)."""

    respects_num_workers = True
    supports_timeout = True

    def run(self, *, function: Callable, params_pool: list, params_ids: list, num_function_returns: int = 1,
            num_workers: int | None = None, task_timeout: float | None = None, **kwargs) -> list[Score]:
        if not _is_async(function):
            raise TypeError(
                f"AsyncWorker needs an `async def` objective; {getattr(function, '__qualname__', function)!r} "
                f"is a plain function. Declare it `async def objective(config): ...`, or keep it and use "
                f"MultiProcessWorker (the default), which runs plain functions in worker processes")
        limit = num_workers_arg(num_workers, default=None)
        timeout = task_timeout_arg(task_timeout)
        warn_ignored(self, kwargs)

        async def batch(jobs: list[Job]) -> list[Score]:
            gate = asyncio.Semaphore(limit or max(1, len(jobs)))

            async def one(job: Job) -> Score:
                async with gate:
                    return await evaluate_async(function, job, num_function_returns, timeout, {"worker": 0})
            return list(await asyncio.gather(*(one(j) for j in jobs)))

        return run_batches(self, params_pool, params_ids, num_function_returns,
                           lambda jobs: _run_coroutine(batch(jobs)))


def _run_coroutine(coro):
    """asyncio.run, also from inside a running loop (Jupyter): then on a helper thread of its own."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    box: dict = {}

    def target():
        try:
            box["value"] = asyncio.run(coro)
        except BaseException as exc:
            box["error"] = exc
    t = threading.Thread(target=target, name="compileiq-async-worker")
    t.start()
    t.join()
    if "error" in box:
        raise box["error"]
    return box["value"]
