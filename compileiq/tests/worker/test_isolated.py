"""IsoMultiProcessWorker: a fresh process per candidate; timeouts and crashes produced for real."""

import ctypes
import os
import sys
import threading
import time

import cloudpickle
import pytest

from compileiq.errors import ObjectiveNotPicklableError
from compileiq.utils.validation import INVALID_SCORE
from compileiq.worker import IsoMultiProcessWorker

pytestmark = pytest.mark.timeout(60)  # a worker bug must fail the test, not hang the run

cloudpickle.register_pickle_by_value(sys.modules[__name__])


def objective(p):
    if p == "hang":
        time.sleep(60)
    elif p == "segv":
        ctypes.string_at(0)
    elif p == "exit3":
        os._exit(3)
    return float(p)


@pytest.mark.parametrize("mode", ["fork", "forkserver"])
def test_one_process_per_candidate_with_timeout_and_crashes(mode, monkeypatch, children, gone):
    monkeypatch.setenv("CIQ_PROCESS_MODE", mode)
    before = children()
    w = IsoMultiProcessWorker.create(None, True)
    t0 = time.monotonic()
    scores = {s.param_id: s for s in w.run(function=objective if mode == "fork" else (lambda p: objective(p)),
                                           params_pool=[1, "hang", "segv", 2, "exit3", 4],
                                           params_ids=list(range(6)), num_workers=2, task_timeout=0.5)}
    w.close()
    assert time.monotonic() - t0 < 10
    # float({}) raises: an invalid baseline is returned and the candidates are not evaluated
    assert scores["baseline"].score == INVALID_SCORE and scores["baseline"].failure == "exception"
    assert all(scores[i].failure == "baseline" for i in range(6))

    w = IsoMultiProcessWorker.create(None, False)
    scores = {s.param_id: s for s in w.run(function=objective, params_pool=[1, "hang", "segv", 2, "exit3", 4],
                                           params_ids=list(range(6)), num_workers=2, task_timeout=0.5)}
    assert [scores[i].score for i in (0, 3, 5)] == [1.0, 2.0, 4.0], [scores[i].error for i in (0, 3, 5)]
    assert scores[1].failure == "timeout" and "exceeded task_timeout=0.5s" in scores[1].error
    assert scores[2].failure == "crash" and "SIGSEGV" in scores[2].error
    assert scores[4].failure == "crash" and "exit code 3" in scores[4].error
    assert len({s.metadata["pid"] for s in scores.values()}) == 6, "one process per candidate"
    assert not gone(children() - before)


def test_unpicklable_objective_is_refused_up_front():
    lock = threading.Lock()
    with pytest.raises(ObjectiveNotPicklableError, match="isolated worker"):
        IsoMultiProcessWorker.create(None, False).run(function=lambda p: lock, params_pool=[1], params_ids=[0])
