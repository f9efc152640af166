"""Search: the public entry point (NVIDIA-compatible), driving an engine, a worker and the results.

One generation = engine.ask() -> decode -> worker.run() -> validate -> results CSV -> engine.tell().
The engine is told a whole batch at once and in ask order, so a run is a pure function of the seed
and the scores: this is what makes resume exact (a resumed run replays the same asks and takes the
scores the CSV already holds instead of evaluating them again).
"""

from __future__ import annotations

import hashlib
import logging
import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

import pandas as pd

from ._diagnosis import _last_line, first_generation_diagnosis
from ._progress import Progress
from ._runfolder import RunFolder
from .engines.base import Engine, EngineSettings, make_engine
from .errors import ConfigurationError, SearchFailedError, SearchSpaceExhaustedWarning, WorkerCapabilityWarning
from .results.csv_io import column_order, read_csv, score_columns, write_csv
from .results.search_result import SearchResult
from .space.space import SearchSpace, params_key
from .types import SearchConfiguration, WorkerTypes
from .utils.validation import BASELINE_CONFIG, INVALID_SCORE, Score, is_invalid
from .worker.base import BASELINE_ID, LOG_ONLY_MARKER, Worker

log = logging.getLogger("compileiq")

CONSOLE_TRACEBACKS = 3  # every failure gets one console line; the first few also their traceback
CONSOLE_LINES = 20  # ... cut to its last lines (a compiler's own output goes to the run log only)


@dataclass(frozen=True)
class Candidate:
    """One candidate handed out by ``Search.ask``: evaluate ``params``, then ``tell`` its score by ``param_id``."""

    param_id: Any
    params: Any


def _resolve_space(search_space: Any) -> SearchSpace:
    if isinstance(search_space, SearchSpace):
        return search_space
    return SearchSpace(search_space)


def _resolve_config(search_config: Any) -> SearchConfiguration:
    if isinstance(search_config, SearchConfiguration):
        return search_config
    if isinstance(search_config, Mapping):
        return SearchConfiguration.from_dict(dict(search_config))
    if isinstance(search_config, (str, os.PathLike)):
        from ._legacy_config import read_legacy_config
        return read_legacy_config(search_config)
    raise ConfigurationError(
        f"search_config must be a SearchConfiguration, a dict of its fields or a legacy .config path, "
        f"not {type(search_config).__name__}")


def _make_worker(worker_type: Any, cache_folder, normalize: bool) -> Worker:
    if worker_type is None:
        worker_type = WorkerTypes.NATIVE
    if isinstance(worker_type, str) and not isinstance(worker_type, WorkerTypes):
        try:
            worker_type = WorkerTypes(worker_type.lower())
        except ValueError:
            raise ConfigurationError(f"worker_type={worker_type!r} is not a worker; use one of "
                                     f"{', '.join(w.value for w in WorkerTypes)} or a Worker subclass") from None
    if isinstance(worker_type, WorkerTypes):
        worker_type = worker_type.worker_class()
    if isinstance(worker_type, Worker):
        if worker_type.normalize != normalize:
            worker_type.normalize = normalize
        return worker_type
    if isinstance(worker_type, type) and issubclass(worker_type, Worker):
        return worker_type.create(cache_folder, normalize, None)
    raise ConfigurationError(f"worker_type={worker_type!r} must be a WorkerTypes value, a Worker subclass or a Worker instance")


class Search:
    """An evolutionary search of ``search_space`` for the candidate that optimises ``objective_function``."""

    def __init__(self, objective_function: Callable, search_space: Any, search_config: Any,
                 worker_type: Any = None, cache_folder: str | os.PathLike | None = None,
                 dump_results: str | os.PathLike | None = None, disable_progress_bar: bool = False,
                 exit_on_failure: bool = True, engine: Any = "auto", resume_from: str | os.PathLike | None = None,
                 tracker_config: Any = None, debug: bool = False):
        if not callable(objective_function):
            raise ConfigurationError(f"objective_function must be callable, got {type(objective_function).__name__}")
        self.objective_function = objective_function
        self.search_config = _resolve_config(search_config)
        self.space = _resolve_space(search_space)
        self.search_space = search_space
        self.worker_type = worker_type
        self.cache_folder = cache_folder
        self.dump_results = Path(dump_results) if dump_results is not None else None
        self.disable_progress_bar = disable_progress_bar
        self.exit_on_failure = exit_on_failure
        self.debug = debug
        cfg = self.search_config
        if self.dump_results is not None and not self.dump_results.parent.is_dir():
            raise ConfigurationError(f"dump_results={str(self.dump_results)!r}: the folder {self.dump_results.parent} "
                                     "does not exist; create it or choose another path")
        self._space_id = hashlib.sha256(self.space.identity().encode()).hexdigest()[:16]
        self._resume = _ResumeLedger(resume_from, cfg, self._space_id) if resume_from is not None else None
        seed = cfg.seed
        if seed is None and self._resume is not None:
            seed = self._resume.seed
        if seed is None:
            seed = int.from_bytes(os.urandom(4), "little")
        self.seed = seed  # recorded in every row's metadata, so a resume can continue an unseeded run
        self._engine_spec = engine
        self.engine: Engine = self._new_engine(engine)
        self._rows: list[dict] = []
        self._next_id = 0
        self._generation = 0
        self._pending: dict[Any, tuple] = {}  # ask/tell: param_id -> (genotype, params, batch)
        self._batches: dict[int, dict] = {}
        self._baseline: Score | None = None
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
            d = cfg.to_dict()
            d["num_objectives"] = num_objectives
            for f in ("pool_size", "cull_size"):
                if cfg._derived.get(f):
                    d[f] = None
            cfg = SearchConfiguration.from_dict(d)
        return cls(objective_function, search_space, cfg, **kwargs)

    # -- helpers ------------------------------------------------------------------------------------
    def _new_engine(self, spec) -> Engine:
        cfg = self.search_config
        settings = EngineSettings(num_objectives=cfg.num_objectives, pool_size=cfg.pool_size, cull_size=cfg.cull_size,
                                  mutate_rate=cfg.mutate_rate, objective_weights=cfg.objective_weights,
                                  init_with_true_random_threshold=cfg.init_with_true_random_threshold,
                                  seed=self.seed, generations=cfg.generations)
        return make_engine(spec, self.space, settings)

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
        meta = dict(s.metadata or {})
        meta["param_id"] = s.param_id
        meta["seed"] = self.seed
        meta["space"] = self._space_id
        meta["problem_type"] = self.search_config.problem_type
        if s.is_baseline:
            meta["baseline"] = True
        if s.failure:
            meta["failure"] = s.failure
        if s.elapsed is not None:
            meta["elapsed_s"] = round(s.elapsed, 6)
        row = {"metadata": meta, "generation": generation}
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
        return SearchResult(self._frame(), self.search_config.problem_type)

    @property
    def best_result(self) -> dict | list[dict]:
        return self.result.get_best_result()

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

    # -- the managed loop -----------------------------------------------------------------------------
    def start(self, num_workers: int | None = None, task_timeout: float | None = None, **worker_kwargs) -> SearchResult:
        """Run every generation and return the results (also written to dump_results after each batch)."""
        if num_workers is not None and (isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 1):
            raise ConfigurationError(f"num_workers={num_workers!r} must be an int >= 1")
        if task_timeout is not None and (isinstance(task_timeout, bool) or not isinstance(task_timeout, (int, float))
                                         or not task_timeout > 0):
            raise ConfigurationError(f"task_timeout={task_timeout!r} must be a number of seconds > 0 (or None for no limit)")
        cfg = self.search_config
        worker = _make_worker(self.worker_type, self.cache_folder, cfg.normalize)
        if num_workers is not None and not getattr(worker, "respects_num_workers", True):
            warnings.warn(f"{type(worker).__name__} ignores num_workers={num_workers}", WorkerCapabilityWarning, stacklevel=2)
        if task_timeout is not None and not getattr(worker, "supports_timeout", True):
            warnings.warn(f"{type(worker).__name__} ignores task_timeout={task_timeout}; use MultiProcessWorker or "
                          "IsoMultiProcessWorker to bound an evaluation", WorkerCapabilityWarning, stacklevel=2)
        if cfg.normalize:
            # this search's baseline (from a resumed CSV, or none yet): never one a reused worker kept
            worker.baseline_score = self._baseline
        run = RunFolder(self.cache_folder)
        progress = Progress(cfg.generations, disable=self.disable_progress_bar, k=self.k, problem_type=cfg.problem_type)
        console_budget = [CONSOLE_TRACEBACKS]
        failures = 0
        evaluated = 0
        try:
            for gen in range(self._generation, cfg.generations):
                genos = self.engine.ask()
                if not genos:
                    warnings.warn(
                        f"the search space holds no candidate that was not evaluated already (it has "
                        f"{self.space.size:,} distinct candidates); stopping after {gen} of {cfg.generations} "
                        "generations with what was evaluated", SearchSpaceExhaustedWarning, stacklevel=2)
                    break
                params = [self.space.decode(g) for g in genos]
                ids = list(range(self._next_id, self._next_id + len(genos)))
                self._next_id += len(genos)
                by_id: dict[Any, Score] = {}
                todo = []
                for pid, p in zip(ids, params):
                    old = self._resume.lookup(p) if self._resume is not None else None
                    if old is not None:
                        by_id[pid] = old
                    else:
                        todo.append((pid, p))
                fresh: list[Score] = []
                if todo or (cfg.normalize and worker.needs_baseline()):
                    fresh = worker.run(function=self.objective_function, params_pool=[p for _, p in todo],
                                       params_ids=[i for i, _ in todo], num_function_returns=self.k,
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
                asked = {pid: p for pid, p in todo}
                for s in fresh:
                    if s in baseline_rows:
                        continue
                    if s.param_id not in asked:
                        raise SearchFailedError(f"{type(worker).__name__}.run returned a score for param_id "
                                                f"{s.param_id!r}, which was not in this batch; a worker must return "
                                                "one Score per params_ids entry")
                    by_id[s.param_id] = s
                for pid, p in todo:
                    if pid not in by_id:
                        by_id[pid] = Score(INVALID_SCORE, pid, p, self.k, failure="crash",
                                           error=f"{type(worker).__name__}.run returned no score for this candidate")
                batch = [by_id[i] for i in ids]
                new = [s for s in batch if s.param_id in asked]
                if cfg.normalize and self._baseline is not None:
                    for s in new:
                        if s.norm_score is None:
                            s.norm_score = worker.normalize_scores(s.score, self._baseline.score)
                self._record([s for s in baseline_rows if not s.invalid] + new, gen, run, console_budget)
                evaluated += len(new)
                failures += sum(1 for s in new if s.invalid)
                self._dump()
                if gen == 0 and self.exit_on_failure and batch and all(s.invalid for s in batch):
                    raise SearchFailedError(first_generation_diagnosis(batch, self.k, task_timeout, run, self.space))
                self.engine.tell(genos, [self._oriented(s) for s in batch])
                self._generation = gen + 1
                progress.update(gen + 1, batch)
        finally:
            progress.close()
            worker.close()
            run.close()
        if failures:
            log.warning("%d of %d evaluated candidates failed%s", failures, evaluated,
                        f"; failing candidates and run.log kept in {run.path}" if run.keep
                        else "; set CIQ_KEEP_CACHE=1 to keep the run log and every failing candidate for replay")
        return self.result

    # -- sampling and the ask/tell API ---------------------------------------------------------------
    def sample(self, num_samples: int = 1) -> list:
        """``num_samples`` distinct candidates, exactly as the objective would receive them."""
        if isinstance(num_samples, bool) or not isinstance(num_samples, int) or num_samples < 1:
            raise ConfigurationError(f"sample(num_samples={num_samples!r}): num_samples must be an int >= 1")
        eng = make_engine("random", self.space, EngineSettings(seed=self.seed, init_with_true_random_threshold=
                                                               self.search_config.init_with_true_random_threshold))
        return [self.space.decode(g) for g in eng.initial(num_samples)]

    def ask(self, num_samples: int | None = None) -> list[Candidate]:
        """Candidates to evaluate yourself; report each with ``tell``. With normalize=True the first
        ask also returns the baseline candidate (param_id "baseline", params {})."""
        if self._resume is not None:
            raise ConfigurationError("resume_from works with start(), which replays the stored scores; with ask/tell "
                                     "look candidates up in SearchResult.from_csv(path) yourself")
        out = []
        if self.search_config.normalize and self._baseline is None and BASELINE_ID not in self._pending:
            self._pending[BASELINE_ID] = (None, BASELINE_CONFIG, -1)
            out.append(Candidate(BASELINE_ID, BASELINE_CONFIG))
        genos = self.engine.ask(num_samples)
        if not genos and not out:
            warnings.warn("the search space holds no candidate that was not asked already", SearchSpaceExhaustedWarning,
                          stacklevel=2)
            return []
        b = len(self._batches)
        self._batches[b] = {"genos": genos, "ids": [], "scores": {}, "generation": self._generation}
        for g in genos:
            pid = self._next_id
            self._next_id += 1
            p = self.space.decode(g)
            self._pending[pid] = (g, p, b)
            self._batches[b]["ids"].append(pid)
            out.append(Candidate(pid, p))
        return out

    @property
    def pending_candidates(self) -> list[Candidate]:
        return [Candidate(pid, p) for pid, (_, p, _) in self._pending.items()]

    def tell(self, scores: Mapping | Iterable) -> None:
        """Report scores of asked candidates: ``{param_id: score}``, ``[(param_id, score), ...]`` or Scores.

        Any order, any non-empty subset. The engine learns a batch once all of it is reported."""
        items: list[tuple[Any, Any, Score | None]] = []
        if isinstance(scores, Mapping):
            items = [(pid, v, None) for pid, v in scores.items()]
        else:
            for entry in scores:
                if isinstance(entry, Score):
                    items.append((entry.param_id, entry.score, entry))
                elif isinstance(entry, tuple) and len(entry) == 2:
                    items.append((entry[0], entry[1], None))
                else:
                    raise ValueError(f"tell: {entry!r} is not a (param_id, score) pair or a Score")
        if not items:
            raise ValueError("tell: no scores given")
        ids = [pid for pid, _, _ in items]
        dup = sorted({str(i) for i in ids if ids.count(i) > 1})
        if dup:
            raise ValueError(f"tell: param_id(s) {', '.join(dup)} given twice")
        unknown = [pid for pid in ids if pid not in self._pending]
        if unknown:
            raise ValueError(f"tell: param_id(s) {unknown!r} were never asked or were already told; "
                             f"pending: {sorted(map(str, self._pending))[:10]}")
        items.sort(key=lambda it: it[0] != BASELINE_ID)  # the baseline first: later scores divide by it
        completed = any(pid == BASELINE_ID for pid, _, _ in items)
        for pid, value, given in items:
            g, p, b = self._pending.pop(pid)
            s = given if given is not None else Score(value, pid, p, self.k)
            s.params = p
            if pid == BASELINE_ID:
                s.is_baseline = True
                s.norm_score = Worker.normalize_scores(s.score, s.score)
                self._check_baseline(s)
                self._rows.append(self._row(s, self._generation))
                for batch in self._batches.values():  # scores told before the baseline: normalise them now
                    for told, row in batch["scores"].values():
                        told.norm_score = Worker.normalize_scores(told.score, s.score)
                        row.update(self._row(told, batch["generation"]))
                continue
            if self.search_config.normalize and self._baseline is not None:
                s.norm_score = Worker.normalize_scores(s.score, self._baseline.score)
            batch = self._batches[b]
            row = self._row(s, batch["generation"])
            batch["scores"][pid] = (s, row)
            self._rows.append(row)
        for b in sorted(self._batches):
            batch = self._batches[b]
            if len(batch["scores"]) == len(batch["ids"]):
                if self.search_config.normalize and self._baseline is None:
                    continue  # normalised scores need the baseline first
                self.engine.tell(batch["genos"], [self._oriented(batch["scores"][i][0]) for i in batch["ids"]])
                del self._batches[b]
                self._generation += 1
                completed = True
        if completed:  # once per finished batch: telling scores one by one must not rewrite the CSV each time
            self._dump()


class _ResumeLedger:
    """Rows of an earlier run's CSV, looked up by candidate identity so that none is evaluated twice."""

    def __init__(self, path, cfg: SearchConfiguration, space_id: str):
        self.path = Path(path)
        df = read_csv(self.path)
        k = len(score_columns(df))
        if k != cfg.num_objectives:
            raise ConfigurationError(f"resume_from={str(path)!r} holds {k} score column(s) but num_objectives="
                                     f"{cfg.num_objectives}; resume with the configuration of the original run")
        norm = any(c.startswith("norm_score_") for c in df.columns)
        if norm != cfg.normalize:
            raise ConfigurationError(f"resume_from={str(path)!r} was written with normalize={norm}; resume with the same setting")
        self.rows = df.to_dict("records")
        self.by_key: dict[str, Score] = {}
        self.baseline: Score | None = None
        seeds = set()
        for r in self.rows:
            meta = r.get("metadata") if isinstance(r.get("metadata"), dict) else {}
            if "seed" in meta:
                seeds.add(meta["seed"])
            score = tuple(r[f"score_{i + 1}"] for i in range(k))
            s = Score(score[0] if k == 1 else score, meta.get("param_id"), r["params"], k, metadata=meta,
                      failure=meta.get("failure"))
            if norm:
                nv = tuple(r[f"norm_score_{i + 1}"] for i in range(k))
                s.norm_score = nv[0] if k == 1 else nv
            if meta.get("baseline"):
                s.is_baseline = True
                self.baseline = s
            else:
                self.by_key[params_key(r["params"])] = s
        metas = [r["metadata"] for r in self.rows if isinstance(r.get("metadata"), dict)]
        for field, mine in (("space", space_id), ("problem_type", cfg.problem_type)):
            theirs = {m[field] for m in metas if field in m}
            if theirs and theirs != {mine}:
                what = "search space" if field == "space" else f"problem_type ({', '.join(sorted(theirs))})"
                raise ConfigurationError(f"resume_from={str(path)!r} was written by a search with another {what}; "
                                         "resume with the original search space and configuration, or start a new "
                                         "results file")
        ids = [m.get("param_id") for m in metas]
        self.next_id = max([i for i in ids if isinstance(i, int)], default=-1) + 1
        self.seed = None
        if len(seeds) == 1:
            self.seed = seeds.pop()
        if cfg.seed is not None and self.seed is not None and cfg.seed != self.seed:
            warnings.warn(f"resume_from={str(path)!r} was run with seed={self.seed} but this search has seed={cfg.seed}: "
                          "candidates will differ from the original run (ones already in the CSV are still not "
                          "evaluated again)", UserWarning, stacklevel=3)
        if cfg.seed is None and self.seed is None and self.rows:
            warnings.warn(f"resume_from={str(path)!r} records no seed; the resumed run cannot replay the original "
                          "candidates exactly (ones already in the CSV are still not evaluated again)", UserWarning,
                          stacklevel=3)

    def lookup(self, params: Any) -> Score | None:
        s = self.by_key.get(params_key(params))
        if s is None:
            return None
        return Score(s.score, s.param_id, s.params, s.num_objectives, norm_score=s.norm_score, metadata=s.metadata,
                     failure=s.failure)


__all__ = ["Search", "Candidate", "SearchConfiguration", "INVALID_SCORE", "BASELINE_CONFIG"]
