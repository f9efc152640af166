"""MultiProcessWorker, the default: long-lived worker processes fed over loopback sockets.

Processes start with CIQ_PROCESS_MODE (default forkserver), connect back with a random token and
stay up across generations. One selector in the parent watches every socket and every process
sentinel, so a result, a crash, a silent worker or an expired task_timeout is handled within
milliseconds and a dead worker is replaced without disturbing the other candidates.
"""

from __future__ import annotations

import atexit
import itertools
import logging
import multiprocessing
import multiprocessing.util
import secrets
import select
import selectors
import socket
import time
import weakref
from collections import deque
from typing import Callable

from .. import _env
from ..errors import WorkerStartError
from ..utils.validation import Score
from . import _child
from ._common import (Job, describe_exit, kill_tree, load_score, main_hidden, num_workers_arg, pickle_objective,
                      preload_in_forkserver, run_batches, task_timeout_arg, warn_ignored)
from ._transport import HELLO, FrameReader, frame, send_all, tune
from .base import Worker, failed_score

log = logging.getLogger("compileiq")

MAX_START_DEATHS = 3  # replacements dying before they connect, in a row, before we give up
_STOP_GRACE = 2.0  # seconds close() lets workers exit on their own (flushing their output)


def _start_causes(mode: str) -> str:
    others = " or ".join(f"CIQ_PROCESS_MODE={m}" for m in _env.PROCESS_MODES if m != mode)
    return ("Likely causes: heavy imports at start-up in the objective's module, a slow or overloaded machine, or "
            f"the process mode. Fixes: raise the limit, e.g. CIQ_SOCKET_TIMEOUT=120; try {others}")


class _Proc:
    """The parent's view of one worker process."""

    def __init__(self, index: int, launch_id: int, process, started: float):
        self.index = index
        self.launch_id = launch_id
        self.process = process
        self.started = started
        self.conn: socket.socket | None = None
        self.reader = FrameReader()
        self.state = "starting"  # -> idle <-> busy -> dead
        self.last_seen = started
        self.job: Job | None = None
        self.job_started = 0.0  # dispatch time
        self.clock = 0.0  # task_timeout counts from here: when the evaluation itself began
        self.grace = 0.0  # extra allowance before it began, for unpickling (importing) the objective
        self.fn_id: int | None = None
        self.job_task_id = -1
        self.exitcode: int | None = None

    @property
    def pid(self):
        return self.process.pid

    def meta(self) -> dict:
        return {"pid": self.pid, "worker": self.index}


class _Pool:
    """Processes, listener and selector of one MultiProcessWorker; owns every OS resource it holds."""

    def __init__(self, mode: str):
        self.mode = mode
        self.ctx = multiprocessing.get_context(mode)
        if mode == "forkserver":
            preload_in_forkserver(self.ctx)
        self.token = secrets.token_bytes(32)
        self.listener = socket.create_server(("127.0.0.1", 0), backlog=128)
        self.listener.setblocking(False)
        self.port = self.listener.getsockname()[1]
        self.sel = selectors.DefaultSelector()
        self.sel.register(self.listener, selectors.EVENT_READ, ("accept", None))
        self.procs: list[_Proc] = []
        self.unauth: dict[socket.socket, tuple[bytearray, float]] = {}  # accepted, hello not yet checked
        self.launch_ids = itertools.count()
        self.closed = False
        # a fork-mode worker inherits our sockets; it must not keep its siblings' connections open
        multiprocessing.util.register_after_fork(self, _Pool._forget_in_child)

    def _forget_in_child(self) -> None:
        self.closed = True
        for s in [self.listener, *(p.conn for p in self.procs if p.conn), *self.unauth]:
            try:
                s.close()
            except OSError:
                pass
        try:
            self.sel.close()
        except OSError:
            pass
        self.procs, self.unauth = [], {}

    # -- lifecycle -------------------------------------------------------------------------------
    def launch(self, hb_interval: float) -> _Proc:
        used = {p.index for p in self.procs}
        index = next(i for i in itertools.count() if i not in used)
        launch_id = next(self.launch_ids)
        process = self.ctx.Process(target=_child.main, name=f"compileiq-worker-{index}",
                                   args=("127.0.0.1", self.port, self.token, launch_id, index, hb_interval))
        with main_hidden(self.ctx):
            process.start()
        proc = _Proc(index, launch_id, process, time.monotonic())
        self.procs.append(proc)
        self.sel.register(process.sentinel, selectors.EVENT_READ, ("exit", proc))
        return proc

    def discard(self, proc: _Proc, kill: bool = True) -> None:
        """Forget a worker: kill it (and its process group) if asked, reap it, release its fds."""
        if proc.state == "dead":
            return
        proc.state = "dead"
        if kill:
            kill_tree(proc.process)
        proc.process.join(5.0 if kill else 1.0)
        if proc.process.exitcode is None:  # closed its socket yet lingers: do not leave it behind
            kill_tree(proc.process)
            proc.process.join(5.0)
        for obj in (proc.process.sentinel, proc.conn):
            if obj is not None:
                try:
                    self.sel.unregister(obj)
                except (KeyError, ValueError):
                    pass
        if proc.conn is not None:
            proc.conn.close()
        proc.exitcode = proc.process.exitcode
        try:
            proc.process.close()
        except ValueError:
            pass
        self.procs.remove(proc)

    def shutdown(self, graceful: bool) -> None:
        if self.closed:
            return
        self.closed = True
        live = [p for p in self.procs if p.state != "dead"]
        if graceful:
            stopping = []
            for p in live:
                if p.conn is not None and p.state == "idle":
                    try:
                        send_all(p.conn, frame(("stop",)), 1.0)
                        stopping.append(p)
                    except OSError:
                        pass
            deadline = time.monotonic() + _STOP_GRACE
            for p in stopping:  # the others (still starting, or busy) have nothing worth waiting for
                p.process.join(max(0.0, deadline - time.monotonic()))
        for p in live:
            self.discard(p, kill=p.process.exitcode is None)
        for s in list(self.unauth):
            s.close()
        self.unauth.clear()
        self.sel.close()
        self.listener.close()


_live_pools: "weakref.WeakSet[_Pool]" = weakref.WeakSet()


@atexit.register
def _kill_pools_at_exit() -> None:
    # registered after multiprocessing's own exit hook, so it runs first (LIFO): that hook would
    # otherwise join our non-daemonic workers, which wait for the parent forever
    for pool in list(_live_pools):
        pool.shutdown(graceful=False)


class MultiProcessWorker(Worker):
    """Long-lived worker processes (CIQ_PROCESS_MODE, default forkserver) kept across generations.

    ``run(..., num_workers=N, task_timeout=T)``: N processes at most (default 1); an evaluation
    running longer than T seconds is killed and scored INVALID_SCORE. CIQ_SOCKET_TIMEOUT bounds
    only the connection and heartbeats, never an evaluation.
    """

    respects_num_workers = True
    supports_timeout = True

    def __init__(self, cache_folder=None, normalize: bool = False, tracker=None, **kwargs):
        super().__init__(cache_folder=cache_folder, normalize=normalize, tracker=tracker, **kwargs)
        self._pool: _Pool | None = None
        self._fn_bytes: bytes | None = None
        self._fn_id = 0
        self._task_ids = itertools.count()
        self._start_deaths = 0

    # -- public API ------------------------------------------------------------------------------
    def run(self, *, function: Callable, params_pool: list, params_ids: list, num_function_returns: int = 1,
            num_workers: int | None = None, task_timeout: float | None = None, **kwargs) -> list[Score]:
        n = num_workers_arg(num_workers)
        timeout = task_timeout_arg(task_timeout)
        warn_ignored(self, kwargs)
        fn_bytes = pickle_objective(function, "worker")
        if fn_bytes != self._fn_bytes:
            self._fn_bytes, self._fn_id = fn_bytes, self._fn_id + 1
        try:
            return run_batches(self, params_pool, params_ids, num_function_returns,
                               lambda jobs: self._evaluate(jobs, num_function_returns, n, timeout))
        except BaseException:
            # KeyboardInterrupt, WorkerStartError, or a bug: the workers' state is unknown, stop them all
            self._kill()
            raise

    def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(graceful=True)
            _live_pools.discard(pool)

    def _kill(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(graceful=False)
            _live_pools.discard(pool)

    def __del__(self):
        try:
            self._kill()
        except Exception:
            pass

    # -- the event loop --------------------------------------------------------------------------
    def _ensure_pool(self) -> _Pool:
        if self._pool is None:
            self._pool = _Pool(_env.process_mode("forkserver"))
            _live_pools.add(self._pool)
        return self._pool

    def _evaluate(self, jobs: list[Job], k: int, n: int, task_timeout: float | None) -> list[Score]:
        pool = self._ensure_pool()
        st = _env.socket_timeout()
        hb_interval = min(1.0, st / 4)
        pending = deque(jobs)
        results: dict[int, Score] = {}
        self._start_deaths = 0  # workers in a row that died before connecting

        now = time.monotonic()
        for p in list(pool.procs):
            if p.state == "idle" and p.index >= n:  # fewer workers asked for than last generation
                self._stop_idle(pool, p)
            elif p.state == "idle":
                p.last_seen = now  # the parent was away (the engine ran); buffered beats are read below
        self._poll(pool, 0.0, results, k, task_timeout, st)

        while pending or any(p.state == "busy" for p in pool.procs):
            busy = sum(p.state == "busy" for p in pool.procs)
            live = sum(p.state in ("starting", "idle", "busy") for p in pool.procs)
            for _ in range(min(n, len(pending) + busy) - live):
                pool.launch(hb_interval)
            for p in pool.procs:
                if p.state == "idle" and pending:
                    self._dispatch(pool, p, pending.popleft(), pending, k, st)
            self._poll(pool, self._wait_time(pool, task_timeout, st), results, k, task_timeout, st)
            self._check_deadlines(pool, pending, results, k, task_timeout, st)
        return [results[j.slot] for j in jobs]

    def _wait_time(self, pool: _Pool, task_timeout: float | None, st: float) -> float:
        deadlines = []
        for p in pool.procs:
            if p.state == "starting":
                deadlines.append(p.started + st)
            elif p.state in ("idle", "busy"):
                deadlines.append(p.last_seen + st)
                if p.state == "busy" and task_timeout is not None:
                    deadlines.append(p.clock + p.grace + task_timeout)
        deadlines.extend(d for _, d in pool.unauth.values())
        if not deadlines:
            return st
        return max(0.0, min(deadlines) - time.monotonic()) + 0.001

    def _poll(self, pool: _Pool, wait: float, results: dict, k: int, task_timeout, st: float) -> None:
        for key, _ in pool.sel.select(wait):
            kind, proc = key.data
            if kind == "accept":
                self._accept(pool, st)
            elif kind == "auth":
                self._authenticate(pool, key.fileobj)
            elif proc.state == "dead":
                continue
            elif kind == "conn":
                self._read(pool, proc, results, k)
            elif kind == "exit":
                self._drain(pool, proc, results, k)
                if proc.state != "dead":
                    self._died(pool, proc, results, k)

    def _accept(self, pool: _Pool, st: float) -> None:
        while True:
            try:
                conn, _ = pool.listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            conn.setblocking(False)
            tune(conn)
            pool.unauth[conn] = (bytearray(), time.monotonic() + st)
            pool.sel.register(conn, selectors.EVENT_READ, ("auth", None))

    def _authenticate(self, pool: _Pool, conn: socket.socket) -> None:
        buf, deadline = pool.unauth[conn]
        try:
            data = conn.recv(65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        buf += data
        if data and len(buf) < HELLO.size:
            return  # the hello is still arriving
        del pool.unauth[conn]
        pool.sel.unregister(conn)
        proc = None
        if len(buf) >= HELLO.size:
            token, launch_id, _pid = HELLO.unpack_from(buf)
            if secrets.compare_digest(token, pool.token):
                proc = next((p for p in pool.procs if p.launch_id == launch_id and p.state == "starting"), None)
        if proc is None:  # not one of ours (or a worker we already gave up on)
            conn.close()
            return
        proc.conn, proc.state, proc.last_seen = conn, "idle", time.monotonic()
        self._start_deaths = 0
        pool.sel.register(conn, selectors.EVENT_READ, ("conn", proc))
        if len(buf) > HELLO.size:  # heartbeats that came in the same packet
            proc.reader.feed(bytes(buf[HELLO.size:]))

    def _read(self, pool: _Pool, proc: _Proc, results: dict, k: int) -> bool:
        """Consume what the worker sent; False (and the worker handled as dead) on EOF."""
        try:
            data = proc.conn.recv(1 << 18)
        except (BlockingIOError, InterruptedError):
            return True
        except OSError:
            data = b""
        if not data:
            self._died(pool, proc, results, k)
            return False
        proc.last_seen = time.monotonic()
        try:
            messages = proc.reader.feed(data)
        except Exception as exc:
            log.error("worker %d (pid %s) sent a corrupt message (%s); replacing it", proc.index, proc.pid, exc)
            self._died(pool, proc, results, k)
            return False
        for msg in messages:
            if msg[0] == "start" and proc.job is not None and msg[1] == proc.job_task_id:
                proc.clock, proc.grace = time.monotonic(), 0.0
            elif msg[0] == "result" and proc.job is not None and msg[1] == proc.job_task_id:
                results[proc.job.slot] = load_score(msg[2], proc.job, k, proc.meta())
                proc.job, proc.state = None, "idle"
        return True

    def _drain(self, pool: _Pool, proc: _Proc, results: dict, k: int) -> None:
        # a result may sit in the socket behind the exit notification
        while proc.conn is not None and proc.state != "dead":
            try:
                readable, _, _ = select.select([proc.conn], [], [], 0)
            except (OSError, ValueError):
                return
            if not readable or not self._read(pool, proc, results, k):
                return

    def _beats(self, pool: _Pool, proc: _Proc, results: dict, k: int) -> bool:
        """Read what waits in the socket before calling a worker silent: the parent itself may have been
        busy (sending a large objective to another worker) while the heartbeats arrived."""
        self._drain(pool, proc, results, k)
        return proc.state == "dead" or time.monotonic() <= proc.last_seen + _env.socket_timeout()

    def _dispatch(self, pool: _Pool, proc: _Proc, job: Job, pending: deque, k: int, st: float) -> None:
        task_id = next(self._task_ids)
        data, grace = b"", 0.0
        if proc.fn_id != self._fn_id:
            data, grace = frame(("fn", self._fn_id, self._fn_bytes)), st
        data += frame(("task", task_id, job.params, job.param_id, k, job.is_baseline))
        try:
            send_all(proc.conn, data, st)
        except OSError:
            # it died between two messages; the candidate was never started, so it goes back in the queue
            pending.appendleft(job)
            self._died(pool, proc, {}, k)
            return
        proc.fn_id = self._fn_id
        proc.job, proc.job_task_id, proc.state = job, task_id, "busy"
        proc.job_started = proc.clock = time.monotonic()
        proc.grace = grace

    def _stop_idle(self, pool: _Pool, proc: _Proc) -> None:
        try:
            send_all(proc.conn, frame(("stop",)), 1.0)
        except OSError:
            pass
        pool.discard(proc, kill=False)

    # -- failures --------------------------------------------------------------------------------
    def _died(self, pool: _Pool, proc: _Proc, results: dict, k: int) -> None:
        was, job = proc.state, proc.job
        meta = proc.meta()
        proc.process.join(1.0)
        lingering = proc.process.exitcode is None
        pool.discard(proc, kill=lingering)
        exitcode = proc.exitcode
        if lingering:
            log.warning("worker %d (pid %s) closed its connection but kept running; it was killed",
                        proc.index, meta["pid"])
        if was == "starting":
            self._start_deaths += 1
            if self._start_deaths >= MAX_START_DEATHS:
                raise WorkerStartError(
                    f"{self._start_deaths} worker processes in a row exited before connecting back to the parent "
                    f"(the last with {describe_exit(exitcode)}; process mode {pool.mode}); their error output is "
                    f"above. A worker imports compileiq (never your script) before it connects: fix the "
                    f"exception it prints (a broken environment, e.g. a package that fails to import), or "
                    f"try another CIQ_PROCESS_MODE")
            log.warning("worker %d (pid %s) exited before connecting (%s); starting a replacement",
                        proc.index, meta["pid"], describe_exit(exitcode))
            return
        if job is None:
            log.warning("idle worker %d (pid %s) exited (%s); a replacement starts when needed",
                        proc.index, meta["pid"], describe_exit(exitcode))
            return
        elapsed = time.monotonic() - proc.job_started
        results[job.slot] = failed_score(
            job.param_id, job.params, k, "crash",
            f"candidate {job.param_id!r}: worker {proc.index} (pid {meta['pid']}) died while evaluating it, "
            f"{describe_exit(exitcode)} after {elapsed:.1f}s. The objective or native code it calls (a compiled "
            f"kernel, ctypes, a driver, os._exit) ended the process; scored INVALID_SCORE and the worker was "
            f"replaced. To see the crash, call the objective on this candidate's params in a plain Python "
            f"process (or use SequentialWorker)",
            metadata=meta, is_baseline=job.is_baseline, elapsed=elapsed)

    def _check_deadlines(self, pool: _Pool, pending: deque, results: dict, k: int, task_timeout, st: float):
        now = time.monotonic()
        for conn, (_, deadline) in list(pool.unauth.items()):
            if now > deadline:  # connected but never said hello
                del pool.unauth[conn]
                pool.sel.unregister(conn)
                conn.close()
        for proc in list(pool.procs):
            if proc.state == "starting" and now > proc.started + st:
                # its hello may be waiting unread (the parent was busy): accept, then authenticate
                for _ in range(2):
                    self._poll(pool, 0.0, results, k, task_timeout, st)
                if proc.state != "starting":
                    continue
                proc.process.join(0)
                code = proc.process.exitcode
                state = (f"it exited with {describe_exit(code)}" if code is not None
                         else f"it was still starting after {now - proc.started:.1f}s and was killed")
                raise WorkerStartError(
                    f"worker {proc.index} (pid {proc.pid}) did not connect back to the parent within "
                    f"CIQ_SOCKET_TIMEOUT={st:g}s (process mode {pool.mode}); {state}. {_start_causes(pool.mode)}")
            if proc.state == "busy" and task_timeout is not None and now > proc.clock + proc.grace + task_timeout:
                job, meta = proc.job, proc.meta()
                pool.discard(proc, kill=True)
                results[job.slot] = failed_score(
                    job.param_id, job.params, k, "timeout",
                    f"candidate {job.param_id!r} exceeded task_timeout={task_timeout:g}s on worker {proc.index} "
                    f"(pid {meta['pid']}); the process was killed with SIGKILL and replaced; raise task_timeout "
                    f"if a clean compile+run takes longer",
                    metadata=meta, is_baseline=job.is_baseline, elapsed=now - proc.clock)
            elif (proc.state in ("idle", "busy") and now > proc.last_seen + st
                  and not self._beats(pool, proc, results, k)):
                job, meta = proc.job, proc.meta()
                silent = now - proc.last_seen
                pool.discard(proc, kill=True)
                doing = f"while evaluating candidate {job.param_id!r}" if job is not None else "while idle"
                text = (f"worker {proc.index} (pid {meta['pid']}) sent no heartbeat for {silent:.1f}s, more than "
                        f"CIQ_SOCKET_TIMEOUT={st:g}s, {doing} (process mode {pool.mode}); it was killed and "
                        f"replaced. Its heartbeat thread could not run: native code holding the GIL for that long, "
                        f"a stopped process (SIGSTOP) or a machine swapping. Fixes: raise CIQ_SOCKET_TIMEOUT=120; "
                        f"release the GIL in long native calls; set task_timeout to bound evaluations")
                log.error("%s", text)
                if job is not None:
                    results[job.slot] = failed_score(job.param_id, job.params, k, "heartbeat", text, metadata=meta,
                                                     is_baseline=job.is_baseline, elapsed=now - proc.job_started)

