"""Pieces every built-in worker shares: argument checks, the objective's picklability check, the
baseline-first batch protocol, exit-status wording and result serialisation.

Kept private so that ``base.py`` stays the small, NVIDIA-shaped surface custom workers subclass.
"""

from __future__ import annotations

import contextlib
import multiprocessing.forkserver
import os
import pickle
import signal
import sys
import threading
import types
import warnings
from typing import Any, Callable, NamedTuple

import cloudpickle

from ..errors import ObjectiveNotPicklableError, WorkerCapabilityWarning
from ..utils.validation import BASELINE_CONFIG, Score
from .base import BASELINE_ID, Worker, failed_score


class Job(NamedTuple):
    """One evaluation to perform; ``slot`` is its position in the batch handed to a runner."""
    slot: int
    params: Any
    param_id: Any
    is_baseline: bool


def num_workers_arg(num_workers: Any, default: int | None = 1) -> int | None:
    if num_workers is None:
        return default
    if isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 1:
        raise ValueError(f"num_workers={num_workers!r} must be an int >= 1 (or None for {default})")
    return num_workers


def task_timeout_arg(task_timeout: Any) -> float | None:
    if task_timeout is None:
        return None
    if isinstance(task_timeout, bool) or not isinstance(task_timeout, (int, float)) or not task_timeout > 0:
        raise ValueError(f"task_timeout={task_timeout!r} must be a number of seconds > 0 (or None for no limit)")
    return float(task_timeout)


def warn_ignored(worker: Worker, kwargs: dict, known: tuple[str, ...] = ()) -> None:
    """One WorkerCapabilityWarning per worker instance for start() options it cannot use."""
    ignored = sorted(k for k in kwargs if k not in known)
    if not ignored or getattr(worker, "_warned_ignored", False):
        return
    worker._warned_ignored = True
    warnings.warn(
        f"{type(worker).__name__} ignores the start() option(s) {', '.join(ignored)}; "
        f"it understands {', '.join(('num_workers', 'task_timeout') + known)}",
        WorkerCapabilityWarning, stacklevel=3)


def pickle_objective(function: Callable, worker_name: str) -> bytes:
    """cloudpickle the objective once, before any process starts, with an actionable error."""
    if not callable(function):
        raise TypeError(f"function={function!r} is not callable; pass the objective, e.g. "
                        f"Search(...).start(objective)")
    try:
        return cloudpickle.dumps(function)
    except Exception as exc:
        raise ObjectiveNotPicklableError(
            f"the objective {getattr(function, '__qualname__', function)!r} cannot be sent to {worker_name} "
            f"processes: cloudpickle failed with {type(exc).__name__}: {exc}. Fixes: define the objective at "
            f"module level; create locks, open files, sockets and connections inside the objective instead "
            f"of capturing them; or use SequentialWorker or AsyncWorker, which run the objective in the "
            f"parent process") from exc


def describe_exit(exitcode: int | None) -> str:
    if exitcode is None:
        return "exit status unknown (the process was still running)"
    if exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        return f"killed by {name} (exit code {exitcode})"
    return f"exit code {exitcode}"


def own_process_group() -> None:
    """Called first in a worker process: the parent can then kill the objective's compilers with it
    (killpg), and Ctrl-C in a terminal reaches only the parent, which stops the workers itself."""
    try:
        os.setpgid(0, 0)
    except OSError:
        pass


def kill_tree(process) -> None:
    """SIGKILL a worker process and whatever it started in its process group; never raises."""
    pid = process.pid
    if pid is not None:
        try:
            if os.getpgid(pid) == pid:
                os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass
    try:
        process.kill()
    except (OSError, ValueError, AttributeError):
        pass


def preload_in_forkserver(ctx) -> None:
    # imported once by the fork server instead of once per worker (compileiq pulls in pandas: ~0.3 s).
    # Never "__main__" (multiprocessing's default): the fork server would run the user's script again.
    # No effect when the fork server already runs; the user's other preloads are kept.
    server = getattr(multiprocessing.forkserver, "_forkserver", None)
    modules = [m for m in (getattr(server, "_preload_modules", None) or []) if m != "__main__"]
    if "compileiq.worker._child" not in modules:
        modules.append("compileiq.worker._child")
    ctx.set_forkserver_preload(modules)


_start_lock = threading.Lock()


@contextlib.contextmanager
def main_hidden(ctx):
    """Start spawn / forkserver workers without re-running the user's main module.

    multiprocessing makes such a child import the parent's ``__main__`` again (as ``__mp_main__``),
    which runs an unguarded script's top level, i.e. starts the search again inside the worker.
    Our workers need nothing from it: their entry point is ``compileiq.worker._child`` and the
    objective arrives by cloudpickle, by value when it was defined in ``__main__``. So while a
    process starts, ``__main__`` is a bare module with neither ``__file__`` nor ``__spec__``, which is
    what multiprocessing sees in an interactive session or a notebook; the child then imports
    nothing of the user's. ``fork`` copies the parent and imports nothing either way."""
    if ctx.get_start_method() == "fork":
        yield
        return
    with _start_lock:
        real = sys.modules.get("__main__")
        stub = types.ModuleType("__main__")
        stub.__spec__ = None
        sys.modules["__main__"] = stub
        try:
            yield
        finally:
            if real is not None:
                sys.modules["__main__"] = real


def dump_score(score: Score) -> bytes:
    """Pickle a child's Score for the parent; an unpicklable raw return value must not lose the result."""
    score.params = None  # the parent re-attaches its own copy of the candidate
    try:
        return pickle.dumps(score, pickle.HIGHEST_PROTOCOL)
    except Exception:
        score.raw = repr(score.raw)
    try:
        return pickle.dumps(score, pickle.HIGHEST_PROTOCOL)
    except Exception as exc:
        return pickle.dumps(failed_score(score.param_id, None, score.num_objectives, "exception",
                                         f"the evaluation's result could not be pickled back to the parent: "
                                         f"{type(exc).__name__}: {exc}; return plain numbers from the objective",
                                         metadata=_plain(score.metadata), is_baseline=score.is_baseline,
                                         elapsed=score.elapsed), pickle.HIGHEST_PROTOCOL)


def _plain(meta: dict) -> dict:
    return {k: v for k, v in meta.items() if isinstance(v, (str, int, float, type(None)))}


def load_score(payload: bytes, job: Job, num_objectives: int, metadata: dict) -> Score:
    try:
        score = pickle.loads(payload)
    except Exception as exc:
        return failed_score(job.param_id, job.params, num_objectives, "exception",
                            f"candidate {job.param_id!r}: its result could not be unpickled in the parent: "
                            f"{type(exc).__name__}: {exc}; return plain numbers from the objective",
                            metadata=metadata, is_baseline=job.is_baseline)
    score.params = job.params
    return score


def run_batches(worker: Worker, params_pool: list, params_ids: list, num_objectives: int,
                evaluate: Callable[[list[Job]], list[Score]]) -> list[Score]:
    """The protocol Search expects: the baseline alone and first when it is missing, then the batch.

    ``evaluate`` gets Jobs and returns one Score per Job in the same order. When the baseline is
    invalid the candidates are not evaluated (Search stops the run on an invalid baseline)."""
    params_pool, params_ids = list(params_pool), list(params_ids)
    if len(params_pool) != len(params_ids):
        raise ValueError(f"params_pool has {len(params_pool)} candidates but params_ids has {len(params_ids)} ids; "
                         f"pass one id per candidate")
    jobs = [Job(i, p, pid, False) for i, (p, pid) in enumerate(zip(params_pool, params_ids))]
    out: list[Score] = []
    if worker.needs_baseline():
        baseline = evaluate([Job(0, BASELINE_CONFIG, BASELINE_ID, True)])[0]
        worker.set_baseline(baseline)
        out.append(baseline)
        if baseline.invalid:
            return out + baseline_skipped(jobs, num_objectives)
    if jobs:
        out.extend(evaluate(jobs))
    return worker.apply_normalization(out)


def baseline_skipped(jobs: list[Job], num_objectives: int) -> list[Score]:
    return [failed_score(j.param_id, j.params, num_objectives, "baseline",
                         "not evaluated: the normalisation baseline (BASELINE_CONFIG, the compiler's defaults) "
                         "scored INVALID_SCORE; see the baseline's error, fix the objective for the default "
                         "configuration, or run with normalize=False")
            for j in jobs]
