"""Search: the public entry point (NVIDIA-compatible), driving an engine, a worker and the results.

One generation = ask (engine) -> decode -> worker.run() -> validate -> results CSV -> tell (engine).
The engine is told a whole batch at once and in ask order, so a run is a pure function of the seed
and the scores: this is what makes resume and checkpoints exact. ``start()`` runs that loop;
``ask`` / ``evaluate`` / ``tell`` (``_asktell.py``) let the caller run it; both share the same
bookkeeping (pending candidates and batches, the typed records of ``_batches.py``, and the rows),
so a checkpoint (``checkpoint.py``) can be taken from either and continued with either.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import warnings
from pathlib import Path
from typing import Any, Callable, Mapping

import pandas as pd

from ._asktell import AskTell, Candidate
from ._batches import Batch, Pending, PendingTrial, Told
from ._diagnosis import _last_line, first_generation_diagnosis
from ._progress import Progress
from ._resume import ResumeLedger
from ._runfolder import RunFolder
from ._watch import RunChecks
from .backends import resolve_engine
from .checkpoint import CheckpointMixin
from .configuration import SearchConfiguration
from .engines.base import Engine, EngineSettings, make_engine
from .errors import (CheckpointCompatibilityWarning, ConfigurationError, SearchFailedError,  # noqa: F401 (NVIDIA's
                     SearchSpaceExhaustedWarning, WorkerCapabilityWarning)                  # names, importable here)
from .results.csv_io import column_order, write_csv
from .results.search_result import SearchResult
from .space.space import SearchSpace
from .tracker import TrackerDriver, make_tracker
from .types import WorkerTypes
from .utils.validation import BASELINE_CONFIG, INVALID_SCORE, Score, is_invalid, metadata_dict
from .worker.base import BASELINE_ID, LOG_ONLY_MARKER, Worker

log = logging.getLogger("compileiq")

CONSOLE_TRACEBACKS = 3  # every failure gets one console line; the first few also their traceback
CONSOLE_LINES = 20  # ... cut to its last lines (a compiler's own output goes to the run log only)


def _resolve_space(search_space: Any) -> SearchSpace:
    if isinstance(search_space, SearchSpace):
        return search_space
    return SearchSpace(search_space)


def _resolve_config(search_config: Any) -> SearchConfiguration:
    if isinstance(search_config, SearchConfiguration):
        return search_config
    if isinstance(search_config, Mapping):
        return SearchConfiguration.model_validate(dict(search_config))
    if isinstance(search_config, (str, os.PathLike)):
        return SearchConfiguration.from_legacy(search_config)
    raise ConfigurationError(
        f"search_config must be a SearchConfiguration, a dict of its fields or a legacy .config path, "
        f"not {type(search_config).__name__}")


def _worker_class(worker_type: Any):
    """The Worker subclass (or instance) ``worker_type`` names. Search() calls it when it is built, so a
    wrong worker_type fails there, as NVIDIA's pydantic Search does, and not minutes later at start()."""
    if worker_type is None:
        return WorkerTypes.NATIVE.worker_type()
    given = worker_type
    if isinstance(worker_type, str) and not isinstance(worker_type, WorkerTypes):
        try:
            worker_type = WorkerTypes(worker_type.lower())
        except ValueError:
            worker_type = None
    if isinstance(worker_type, WorkerTypes):
        return worker_type.worker_type()
    if isinstance(worker_type, Worker) or (isinstance(worker_type, type) and issubclass(worker_type, Worker)):
        return worker_type
    names = ", ".join(repr(w.value) for w in WorkerTypes)
    raise ConfigurationError(f"Search(worker_type={given!r}): not a worker. Use one of the names {names} (or "
                             "compileiq.types.WorkerTypes), a Worker subclass such as "
                             "compileiq.worker.MultiProcessWorker, or a Worker instance")


def make_worker(worker_type: Any, cache_folder, normalize: bool, tracker=None) -> Worker:
    worker_type = _worker_class(worker_type)
    if isinstance(worker_type, Worker):
        if worker_type.normalize != normalize:
            worker_type.normalize = normalize
        return worker_type
    return worker_type.create(cache_folder, normalize, tracker)


def check_run_args(num_workers, task_timeout) -> None:
    if num_workers is not None and (isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 1):
        raise ConfigurationError(f"num_workers={num_workers!r} must be an int >= 1")
    if task_timeout is not None and (isinstance(task_timeout, bool) or not isinstance(task_timeout, (int, float))
                                     or not task_timeout > 0):
        raise ConfigurationError(f"task_timeout={task_timeout!r} must be a number of seconds > 0 (or None for no limit)")


class Search(AskTell, CheckpointMixin):
    """An evolutionary search of ``search_space`` for the candidate that optimises ``objective_function``."""

    def __init__(self, objective_function: Callable, search_space: Any, search_config: Any,
                 worker_type: Any = None, cache_folder: str | os.PathLike | None = None,
                 dump_results: str | os.PathLike | None = None, disable_progress_bar: bool = False,
                 exit_on_failure: bool = True, engine: Any = "amber", resume_from: str | os.PathLike | None = None,
                 tracker_config: Any = None, debug: bool = False, on_compiler_change: str = "stop",
                 watch_compilers=()):
        if not callable(objective_function):
            raise ConfigurationError(f"objective_function must be callable, got {type(objective_function).__name__}")
        self.objective_function = objective_function
        engine_spec, cfg = resolve_engine(engine, _resolve_config(search_config))
        self.search_config = cfg
        self.space = _resolve_space(search_space)
        self.search_space = search_space
        _worker_class(worker_type)  # a wrong worker_type fails here, not at start()
        self.worker_type = worker_type
        self.cache_folder = cache_folder
        self.dump_results = Path(dump_results) if dump_results is not None else None
        self.disable_progress_bar = disable_progress_bar
        self.exit_on_failure = exit_on_failure
        self.debug = debug
        if self.dump_results is not None and not self.dump_results.parent.is_dir():
            raise ConfigurationError(f"dump_results={str(self.dump_results)!r}: the folder {self.dump_results.parent} "
                                     "does not exist; create it or choose another path")
        self._space_id = hashlib.sha256(self.space.identity().encode()).hexdigest()[:16]
        self._resume = ResumeLedger(resume_from, cfg, self._space_id) if resume_from is not None else None
        seed = cfg.seed
        if seed is None and self._resume is not None:
            seed = self._resume.seed
        if seed is None:
            seed = int.from_bytes(os.urandom(4), "little")
        self.seed = seed  # recorded in every row's metadata, so a resume can continue an unseeded run
        self._engine_spec = engine_spec
        self.engine: Engine = self._new_engine(engine_spec)
        self._checks = RunChecks(search_space, watch_compilers, on_compiler_change)
        self.tracker = make_tracker(tracker_config)
        self._tracking = TrackerDriver(self.tracker, cfg.problem_type)
        self._rows: list[dict] = []
        self._next_id = 0
        self._generation = 0
        self._pending: dict[Any, Pending] = {}  # param_id -> what was asked and not told yet (_batches.py)
        self._batches: dict[int, Batch] = {}    # batch number -> its candidates and those told so far
        self._next_batch = 0
        self._resubmit: list = []              # param_ids a restored checkpoint hands out again first
        self._baseline: Score | None = None
        self._eval_worker: Worker | None = None
        self._tracking_started = False  # ask/tell mode: search_starts sent on the first ask
        if self._resume is not None:
            self._rows.extend(self._resume.rows)
            self._baseline = self._resume.baseline
            self._next_id = self._resume.next_id

    # -- NVIDIA-style constructors -----------------------------------------------------------------
    @classmethod
    def single_objective(cls, objective_function, search_space, search_config, **kwargs) -> "Search":
        return cls(objective_function, search_space, search_config, **kwargs)

    @classmethod
    def multi_objective(cls, objective_function, search_space, search_config, num_objectives: int = 2, **kwargs) -> "Search":
        cfg = _resolve_config(search_config)
        if cfg.num_objectives != num_objectives:
            cfg = cfg.with_objectives(num_objectives)
        return cls(objective_function, search_space, cfg, **kwargs)

    # -- helpers ------------------------------------------------------------------------------------
    def _settings(self) -> EngineSettings:
        cfg = self.search_config
        return EngineSettings(num_objectives=cfg.num_objectives, pool_size=cfg.pool_size, cull_size=cfg.cull_size,
                              mutate_rate=cfg.mutate_rate,
                              objective_weights=tuple(cfg.objective_weights) if cfg.objective_weights else None,
                              init_with_true_random_threshold=cfg.init_with_true_random_threshold,
                              seed=self.seed, generations=cfg.generations)

    def _new_engine(self, spec) -> Engine:
        return make_engine(spec, self.space, self._settings())

    @property
    def engine_options(self) -> dict:
        """The engine and the settings it runs with (NVIDIA 1.1's property)."""
        return {"engine": getattr(self.engine, "name", type(self.engine).__name__), **vars(self._settings())}

    @property
    def k(self) -> int:
        return self.search_config.num_objectives

    def _oriented(self, s: Score) -> tuple | None:
        """What the engine learns: normalised (when normalising) scores to minimise; None = failed."""
        vals = s.norm_values() if self.search_config.normalize else s.values()
        if vals is None or any(is_invalid(v) for v in vals):
            return None
        sign = -1.0 if self.search_config.problem_type == "max" else 1.0
        return tuple(sign * float(v) for v in vals)

    def _row(self, s: Score, generation: int) -> dict:
        meta = dict(s.metadata_dict())
        meta["param_id"] = s.param_id
        meta["seed"] = self.seed
        meta["space"] = self._space_id
        meta["problem_type"] = self.search_config.problem_type
        compilers = self._checks.metadata()
        if compilers:
            meta["compilers"] = compilers
        if s.is_baseline:
            meta["baseline"] = True
        if s.failure:
            meta["failure"] = s.failure
        if s.elapsed is not None:
            meta["elapsed_s"] = round(s.elapsed, 6)
        row = {"metadata": json.dumps(meta, default=str), "generation": generation}
        for i, v in enumerate(s.values()):
            row[f"score_{i + 1}"] = v
        row["params"] = s.params
        if self.search_config.normalize:
            nv = s.norm_values() or (INVALID_SCORE,) * self.k
            for i, v in enumerate(nv):
                row[f"norm_score_{i + 1}"] = v
        return row

    def _frame(self) -> pd.DataFrame:
        cols = column_order(self.k, self.search_config.normalize)
        return pd.DataFrame(self._rows, columns=cols)

    @property
    def result(self) -> SearchResult:
        return SearchResult(self._frame(), self.search_config.problem_type, self.k)

    @property
    def best_result(self) -> dict | list[dict]:
        return self.result.get_best_result()

    @property
    def search_space_resolution_metadata(self) -> list[dict]:
        """Where each compiler search space came from (NVIDIA 1.1's property): one dict per provider."""
        parts = self.search_space if isinstance(self.search_space, (list, tuple)) else [self.search_space]
        return [m for m in (getattr(p, "resolution_metadata", None) for p in parts) if m]

    def _dump(self) -> None:
        if self.dump_results is not None:
            write_csv(self._frame(), self.dump_results)

    def _check_baseline(self, s: Score, run: RunFolder | None = None) -> None:
        vals = s.values()
        if s.invalid or any(v == 0 for v in vals):
            why = [_last_line(s.error)] if s.error else [f"it returned {s.raw!r}"]
            if run is not None and s.error:
                why[0] += f" (full traceback: {run.log_path if run.keep else 'set CIQ_KEEP_CACHE=1 to keep the run log'})"
            raise SearchFailedError(
                "normalize=True needs a baseline, but the baseline evaluation (the objective called with "
                f"BASELINE_CONFIG = {{}}) {'returned 0' if not s.invalid else 'failed'}: {why[0]}. "
                "Make the objective treat an empty dict as 'measure the untuned build' and return a "
                "non-zero score, or set normalize=False")
        self._baseline = s

    def _record(self, scores: list[Score], generation: int, run: RunFolder | None, console_budget: list[int]) -> None:
        for s in scores:
            if s.invalid and run is not None:
                text = s.error or f"the objective returned {s.raw!r} (INVALID_SCORE)"
                run.log.info("candidate %s (generation %d) failed [%s]:\n%s\nparams: %r",
                             s.param_id, generation, s.failure or "invalid", text.rstrip(), s.params)
                run.record_failure(s.param_id, s.params, text)
            if s.failure and s.failure not in ("invalid", "format") and s.error:
                self._console(s, run, console_budget)
            self._rows.append(self._row(s, generation))

    @staticmethod
    def _console(s: Score, run: RunFolder | None, console_budget: list[int]) -> None:
        """One line per failure; the first few also show their traceback (never a compiler's output)."""
        head, _, tool_output = s.error.partition(LOG_ONLY_MARKER)
        lines = [ln for ln in head.rstrip().splitlines() if ln.strip()]
        summary = next((ln.strip() for ln in reversed(lines) if not ln.startswith("hint:")), s.failure)
        if console_budget[0] > 0 and not tool_output and len(lines) > 1:
            console_budget[0] -= 1
            where = f" (full log: {run.log_path})" if run is not None and run.keep else ""
            shown = lines if len(lines) <= CONSOLE_LINES else ["  ..."] + lines[-CONSOLE_LINES:]
            log.warning("candidate %s failed [%s]%s:\n%s", s.param_id, s.failure, where, "\n".join(shown))
        else:
            log.warning("candidate %s failed [%s]: %s", s.param_id, s.failure, summary)

    def _worker_for_run(self, num_workers, task_timeout) -> Worker:
        worker = make_worker(self.worker_type, self.cache_folder, self.search_config.normalize, self.tracker)
        if getattr(worker, "manual", False):
            raise ConfigurationError(
                "worker_type=WorkerTypes.MANUAL runs nothing by itself: drive the search with ask() and tell() "
                "(evaluate() calls the objective for you), or choose a worker such as WorkerTypes.NATIVE for start()")
        if num_workers is not None and not getattr(worker, "respects_num_workers", True):
            warnings.warn(f"{type(worker).__name__} ignores num_workers={num_workers}", WorkerCapabilityWarning, stacklevel=3)
        if task_timeout is not None and not getattr(worker, "supports_timeout", True):
            warnings.warn(f"{type(worker).__name__} ignores task_timeout={task_timeout}; use MultiProcessWorker or "
                          "IsoMultiProcessWorker to bound an evaluation", WorkerCapabilityWarning, stacklevel=3)
        if self.search_config.normalize:
            # this search's baseline (from a resumed CSV, a checkpoint, or none yet): never one a reused worker kept
            worker.baseline_score = self._baseline
        return worker

    # -- the managed loop -----------------------------------------------------------------------------
    def start(self, num_workers: int | None = None, task_timeout: float | None = None, *,
              checkpoint_path: str | os.PathLike | None = None, **worker_kwargs) -> SearchResult:
        """Run every generation and return the results (also written to dump_results after each batch).

        ``checkpoint_path``: a checkpoint is written there after every generation (atomically), so
        ``Search.from_checkpoint(checkpoint_path, ...)`` continues the run exactly where it stopped."""
        check_run_args(num_workers, task_timeout)
        if checkpoint_path is not None:
            self._check_checkpointable()
            checkpoint_path = Path(checkpoint_path)
            if not checkpoint_path.parent.is_dir():
                raise ConfigurationError(f"checkpoint_path={str(checkpoint_path)!r}: the folder {checkpoint_path.parent} "
                                         "does not exist; create it or choose another path")
        cfg = self.search_config
        worker = self._worker_for_run(num_workers, task_timeout)
        self._checks.start()
        run = RunFolder(self.cache_folder)
        progress = Progress(cfg.generations, disable=self.disable_progress_bar, k=self.k, problem_type=cfg.problem_type)
        console_budget = [CONSOLE_TRACEBACKS]
        totals = {"evaluated": 0, "failed": 0}
        error = None
        self._tracking_started = True
        self._tracking.search_starts(search_config=cfg.model_dump(), engine=self.engine_options["engine"],
                                     seed=self.seed)
        try:
            if self._pending:  # a restored checkpoint's candidates: evaluate them before anything new
                self._run_batch(None, worker, run, console_budget, totals, num_workers, task_timeout, worker_kwargs)
            while self._generation < cfg.generations:
                gen = self._generation
                genos = self.engine.ask()
                if not genos:
                    warnings.warn(
                        f"the search space holds no candidate that was not evaluated already (it has "
                        f"{self.space.size:,} distinct candidates); stopping after {gen} of {cfg.generations} "
                        "generations with what was evaluated", SearchSpaceExhaustedWarning, stacklevel=2)
                    break
                self._run_batch(genos, worker, run, console_budget, totals, num_workers, task_timeout, worker_kwargs)
                progress.update(gen + 1, self._last_batch)
                if checkpoint_path is not None:
                    self.save_checkpoint(checkpoint_path, require_no_pending=True)
        except BaseException as exc:
            error = exc
            raise
        finally:
            progress.close()
            worker.close()
            run.close()
            self._tracking.search_ends(error=repr(error) if error else None, **totals)
            self._tracking.close()
        if totals["failed"]:
            log.warning("%d of %d evaluated candidates failed%s", totals["failed"], totals["evaluated"],
                        f"; failing candidates and run.log kept in {run.path}" if run.keep
                        else "; set CIQ_KEEP_CACHE=1 to keep the run log and every failing candidate for replay")
        return self.result

    def _run_batch(self, genos, worker, run, console_budget, totals, num_workers, task_timeout, worker_kwargs) -> None:
        """Evaluate one batch (new genotypes, or None for the pending candidates of a restored
        checkpoint), record it and tell the engine."""
        cfg = self.search_config
        gen = self._generation
        if genos is None:
            trials = {pid: e for pid, e in self._pending.items() if isinstance(e, PendingTrial)}
            cands = [Candidate(pid, e.params) for pid, e in trials.items()]
            self._resubmit = []
            gen = min((self._batches[e.batch].generation for e in trials.values()), default=gen)
        else:
            cands = self._issue(genos)
        by_id: dict[Any, Score] = {}
        todo = []
        for c in cands:
            old = self._resume.lookup(c.params) if self._resume is not None else None
            if old is not None:
                old.param_id = c.param_id
                by_id[c.param_id] = old
            else:
                todo.append(c)
        fresh: list[Score] = []
        if todo or (cfg.normalize and worker.needs_baseline()):
            fresh = worker.run(function=self.objective_function, params_pool=[c.params for c in todo],
                               params_ids=[c.param_id for c in todo], num_function_returns=self.k,
                               num_workers=num_workers, task_timeout=task_timeout, **worker_kwargs)
        baseline_rows = [s for s in fresh if s.is_baseline or s.param_id == BASELINE_ID]
        for s in baseline_rows:
            s.is_baseline = True
            if s.norm_score is None:
                s.norm_score = worker.normalize_scores(s.score, s.score)
            if s.invalid or any(v == 0 for v in s.values()):
                self._record([s], gen, run, console_budget)  # its traceback reaches the run log
                self._dump()
            self._check_baseline(s, run)
            if worker.baseline_score is None:
                worker.baseline_score = s  # a custom worker that did not call set_baseline
            self._pending.pop(BASELINE_ID, None)
        asked = {c.param_id: c.params for c in todo}
        for s in fresh:
            if s in baseline_rows:
                continue
            if s.param_id not in asked:
                raise SearchFailedError(f"{type(worker).__name__}.run returned a score for param_id "
                                        f"{s.param_id!r}, which was not in this batch; a worker must return "
                                        "one Score per params_ids entry")
            by_id[s.param_id] = s
        for pid, p in asked.items():
            if pid not in by_id:
                by_id[pid] = Score(INVALID_SCORE, pid, p, self.k, failure="crash",
                                   error=f"{type(worker).__name__}.run returned no score for this candidate")
        batch = [by_id[c.param_id] for c in cands]
        new = [s for s in batch if s.param_id in asked]
        if cfg.normalize and self._baseline is not None:
            for s in new:
                if s.norm_score is None:
                    s.norm_score = worker.normalize_scores(s.score, self._baseline.score)
        recorded = [s for s in baseline_rows if not s.invalid] + new
        self._record(recorded, gen, run, console_budget)
        totals["evaluated"] += len(new)
        totals["failed"] += sum(1 for s in new if s.invalid)
        self._dump()
        self._tracking.batch(gen, recorded, self.k)
        self._checks.after_batch()
        if gen == 0 and self.exit_on_failure and batch and all(s.invalid for s in batch):
            raise SearchFailedError(first_generation_diagnosis(batch, self.k, task_timeout, run, self.space))
        self._settle([Told(s) for s in batch], track=False)
        if gen == 0:
            self._checks.first_generation(batch)
        self._last_batch = batch

    # -- sampling -------------------------------------------------------------------------------------
    def sample(self, num_samples: int = 1) -> list:
        """``num_samples`` distinct candidates, exactly as the objective would receive them."""
        if isinstance(num_samples, bool) or not isinstance(num_samples, int) or num_samples < 1:
            raise ConfigurationError(f"sample(num_samples={num_samples!r}): num_samples must be an int >= 1")
        eng = make_engine("random", self.space, EngineSettings(seed=self.seed, init_with_true_random_threshold=
                                                               self.search_config.init_with_true_random_threshold))
        return [self.space.decode(g) for g in eng.initial(num_samples)]

    def close(self) -> None:
        """End an ask/tell session: stop the worker processes ``evaluate`` keeps between calls (also
        done at exit) and close the tracker's run. start() does this itself."""
        if self._eval_worker is not None:
            self._eval_worker.close()
            self._eval_worker = None
        if self._tracking_started and self._tracking.active:
            rows = [r for r in self._rows if not metadata_dict(r.get("metadata")).get("baseline")]
            failed = sum(1 for r in rows if any(r.get(f"score_{i + 1}") == INVALID_SCORE for i in range(self.k)))
            self._tracking.search_ends(evaluated=len(rows), failed=failed)
            self._tracking.close()


__all__ = ["Search", "Candidate", "SearchConfiguration", "INVALID_SCORE", "BASELINE_CONFIG"]
