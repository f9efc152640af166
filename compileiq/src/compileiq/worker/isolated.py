"""IsoMultiProcessWorker: a fresh process per candidate, so no state leaks from one to the next.

Costs a process start per candidate (cheap with fork, the default here); use it when the objective
or the library it drives keeps global state (a CUDA context, a leaking allocator) between calls.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import time
from typing import Callable

import cloudpickle

from .. import _env
from ..utils.validation import Score
from ._common import (Job, describe_exit, dump_score, kill_tree, load_score, num_workers_arg, own_process_group,
                      main_hidden, pickle_objective, preload_in_forkserver, run_batches, task_timeout_arg, warn_ignored)
from .base import Worker, evaluate_call, failed_score


_STARTED = b"started"  # never a pickled Score: those begin with the pickle protocol byte


def _evaluate_once(conn, fn_bytes: bytes, job: Job, num_objectives: int, index: int) -> None:
    own_process_group()
    function = cloudpickle.loads(fn_bytes)
    conn.send_bytes(_STARTED)
    score = evaluate_call(function, job.params, job.param_id, num_objectives, {"worker": index}, job.is_baseline)
    conn.send_bytes(dump_score(score))
    conn.close()


class _Running:
    def __init__(self, job: Job, process, conn, index: int):
        self.job, self.process, self.conn, self.index = job, process, conn, index
        self.started = time.monotonic()
        self.clock: float | None = None  # when the evaluation began; task_timeout counts from there
        self.payload: bytes | None = None

    def deadline(self, timeout: float, startup: float) -> float:
        # process start and unpickling the objective get CIQ_SOCKET_TIMEOUT on top of task_timeout
        return self.clock + timeout if self.clock is not None else self.started + startup + timeout

    def meta(self) -> dict:
        return {"pid": self.process.pid, "worker": self.index}


class IsoMultiProcessWorker(Worker):
    """One new process per candidate (CIQ_PROCESS_MODE, default fork), num_workers at once (default 1)."""

    respects_num_workers = True
    supports_timeout = True

    def run(self, *, function: Callable, params_pool: list, params_ids: list, num_function_returns: int = 1,
            num_workers: int | None = None, task_timeout: float | None = None, **kwargs) -> list[Score]:
        n = num_workers_arg(num_workers)
        timeout = task_timeout_arg(task_timeout)
        warn_ignored(self, kwargs)
        fn_bytes = pickle_objective(function, "isolated worker")
        ctx = multiprocessing.get_context(_env.process_mode("fork"))
        if ctx.get_start_method() == "forkserver":
            preload_in_forkserver(ctx)
        return run_batches(self, params_pool, params_ids, num_function_returns,
                           lambda jobs: self._evaluate(ctx, fn_bytes, jobs, num_function_returns, n, timeout))

    def _evaluate(self, ctx, fn_bytes: bytes, jobs: list[Job], k: int, n: int, timeout: float | None) -> list[Score]:
        pending = list(reversed(jobs))
        running: list[_Running] = []
        results: dict[int, Score] = {}
        startup = _env.socket_timeout()
        try:
            while pending or running:
                while pending and len(running) < n:
                    job = pending.pop()
                    index = min(set(range(n)) - {r.index for r in running})
                    recv, send = ctx.Pipe(duplex=False)
                    process = ctx.Process(target=_evaluate_once, args=(send, fn_bytes, job, k, index),
                                          name=f"compileiq-isolated-{index}")
                    with main_hidden(ctx):
                        process.start()
                    send.close()  # ours; EOF on recv then means the child is gone
                    running.append(_Running(job, process, recv, index))
                wait = None
                if timeout is not None:
                    wait = max(0.0, min(r.deadline(timeout, startup) for r in running) - time.monotonic()) + 0.001
                handles = [r.conn for r in running if r.payload is None] + [r.process.sentinel for r in running]
                multiprocessing.connection.wait(handles, wait)
                now = time.monotonic()
                for r in list(running):
                    while r.payload is None and r.conn.poll():
                        try:
                            data = r.conn.recv_bytes()
                        except (EOFError, OSError):
                            data = b""
                        if data == _STARTED:
                            r.clock = time.monotonic()
                        else:
                            r.payload = data
                    if r.payload or r.process.exitcode is not None:
                        r.process.join(5.0)
                        if r.process.exitcode is None:  # answered, then hung on exit (a non-daemon thread?)
                            kill_tree(r.process)
                            r.process.join()
                        results[r.job.slot] = self._finish(r, k)
                    elif timeout is not None and now > r.deadline(timeout, startup):
                        kill_tree(r.process)
                        r.process.join()
                        results[r.job.slot] = self._timed_out(r, k, timeout, startup, now)
                    else:
                        continue
                    r.conn.close()
                    r.process.close()
                    running.remove(r)
        finally:
            for r in running:  # KeyboardInterrupt or a bug: leave nothing behind
                kill_tree(r.process)
                r.process.join()
                r.conn.close()
        return [results[j.slot] for j in jobs]

    @staticmethod
    def _timed_out(r: _Running, k: int, timeout: float, startup: float, now: float) -> Score:
        if r.clock is None:
            text = (f"candidate {r.job.param_id!r}: its process (pid {r.process.pid}) had not even started the "
                    f"evaluation after {now - r.started:.1f}s (CIQ_SOCKET_TIMEOUT={startup:g}s + "
                    f"task_timeout={timeout:g}s) and was killed with SIGKILL; importing the objective's modules is "
                    f"that slow: raise CIQ_SOCKET_TIMEOUT or task_timeout")
        else:
            text = (f"candidate {r.job.param_id!r} exceeded task_timeout={timeout:g}s; its process (pid "
                    f"{r.process.pid}) was killed with SIGKILL; raise task_timeout if a clean compile+run takes longer")
        return failed_score(r.job.param_id, r.job.params, k, "timeout", text, metadata=r.meta(),
                            is_baseline=r.job.is_baseline, elapsed=now - (r.clock or r.started))

    @staticmethod
    def _finish(r: _Running, k: int) -> Score:
        if r.payload:
            return load_score(r.payload, r.job, k, r.meta())
        # no result yet: a result may still be in the pipe from a process that exited right after sending
        try:
            while r.conn.poll():
                data = r.conn.recv_bytes()
                if data != _STARTED:
                    return load_score(data, r.job, k, r.meta())
        except (EOFError, OSError):
            pass
        code = r.process.exitcode
        return failed_score(
            r.job.param_id, r.job.params, k, "crash",
            f"candidate {r.job.param_id!r}: its process (pid {r.process.pid}) ended without a result, "
            f"{describe_exit(code)} after {time.monotonic() - r.started:.1f}s. The objective or native code it "
            f"calls ended the process (a crash, os._exit, or an error loading the objective printed above); "
            f"scored INVALID_SCORE",
            metadata=r.meta(), is_baseline=r.job.is_baseline, elapsed=time.monotonic() - r.started)
