"""AsyncWorker (concurrency, timeout, plain-function error) and SequentialWorker."""

import asyncio
import os
import time

import pytest

from compileiq.errors import WorkerCapabilityWarning
from compileiq.utils.validation import INVALID_SCORE
from compileiq.worker import AsyncWorker, SequentialWorker


pytestmark = pytest.mark.timeout(60)  # a worker bug must fail the test, not hang the run

async def async_objective(p):
    if p == "hang":
        await asyncio.sleep(60)
    if p == "raise":
        raise TimeoutError("the objective's own timeout is not task_timeout")
    if p == {}:
        return 2.0
    await asyncio.sleep(0.3)
    return p if isinstance(p, tuple) else float(p)


def test_async_runs_candidates_concurrently():
    w = AsyncWorker.create(None, False)
    # four 0.3 s sleeps at once take 0.3 s; one after another 1.2 s. Noise on a shared host only adds
    # time, so the fastest of up to three tries is the one that says whether they overlapped.
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        scores = w.run(function=async_objective, params_pool=[1, 2, 3, 4], params_ids=[0, 1, 2, 3], num_workers=4)
        best = min(best, time.perf_counter() - t0)
        if best < 0.8:
            break
    assert best < 0.8
    assert sorted(s.score for s in scores) == [1.0, 2.0, 3.0, 4.0]
    t0 = time.perf_counter()
    w.run(function=async_objective, params_pool=[1, 2, 3, 4], params_ids=[0, 1, 2, 3], num_workers=2)
    assert time.perf_counter() - t0 >= 0.55, "num_workers=2 must cap concurrency"


def test_async_timeout_exceptions_and_normalisation():
    w = AsyncWorker.create(None, True)
    scores = w.run(function=async_objective, params_pool=[1, "hang", "raise", (1, 2)], params_ids=[0, 1, 2, 3],
                   task_timeout=0.5)
    by = {s.param_id: s for s in scores}
    assert scores[0].is_baseline and scores[0].score == 2.0
    assert by[0].score == 1.0 and by[0].norm_score == 0.5
    assert by[1].failure == "timeout" and "exceeded task_timeout=0.5s" in by[1].error
    assert by[2].failure == "exception" and "TimeoutError: the objective's own timeout" in by[2].error
    assert by[3].failure == "format" and "not in expected format" in by[3].error


def test_async_refuses_a_plain_function():
    with pytest.raises(TypeError, match="async def.*MultiProcessWorker"):
        AsyncWorker.create(None, False).run(function=lambda p: 1.0, params_pool=[1], params_ids=[0])


def test_async_works_inside_a_running_event_loop():
    async def main():
        return AsyncWorker.create(None, False).run(function=async_objective, params_pool=[1], params_ids=[0])
    (score,) = asyncio.run(main())
    assert score.score == 1.0


def test_sequential_runs_in_the_parent_with_normalisation():
    w = SequentialWorker.create(None, True)
    scores = w.run(function=lambda p: 4.0 if p == {} else (1 / 0 if p == 0 else float(p)), params_pool=[0, 2],
                   params_ids=[0, 1], num_workers=3, task_timeout=1)
    assert [s.param_id for s in scores] == ["baseline", 0, 1]
    assert scores[0].norm_score == 1.0 and scores[2].norm_score == 0.5
    assert scores[1].score == INVALID_SCORE and "ZeroDivisionError" in scores[1].error
    assert scores[2].metadata["pid"] == os.getpid()
    assert not SequentialWorker.supports_timeout and not SequentialWorker.respects_num_workers


def test_unknown_start_options_warn_once():
    w = SequentialWorker.create(None, False)
    with pytest.warns(WorkerCapabilityWarning, match="num_gpus"):
        w.run(function=float, params_pool=[1], params_ids=[0], num_gpus=1)
    w.run(function=float, params_pool=[1], params_ids=[0], num_gpus=1)  # no second warning (filterwarnings=error)
