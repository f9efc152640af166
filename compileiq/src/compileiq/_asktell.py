"""The ask / evaluate / tell loop of NVIDIA 1.1, and the bookkeeping start() shares with it.

    search = Search(objective, space, SearchConfiguration(generations=10), worker_type=WorkerTypes.MANUAL)
    for _ in range(10):
        candidates = search.ask()
        search.tell([Score(score=measure(c.params), param_id=c.param_id, num_objectives=1) for c in candidates])

Every asked candidate is pending until its score is told. Candidates asked together form a batch;
the engine learns a batch once all of it is told, in ask order, so the order scores arrive in
never changes what the engine proposes next. With normalize=True the first ask also hands out
the baseline candidate (param_id "baseline", params BASELINE_CONFIG = {}).
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from ._batches import Batch, PendingBaseline, PendingTrial, Told
from .backends import BackendCandidate
from .errors import ConfigurationError, SearchSpaceExhaustedError
from .utils.validation import BASELINE_CONFIG, Score
from .worker.base import BASELINE_ID, Worker

Candidate = BackendCandidate  # what ask() returns: .param_id and .params


class AskTell:
    """Mixed into Search (ciq.py), which owns the state this reads and writes."""

    # -- shared bookkeeping ---------------------------------------------------------------------------
    def _issue(self, genos: list) -> list[Candidate]:
        """New candidates for ``genos``: ids, pending entries and one batch."""
        params = [self.space.decode(g) for g in genos]
        b = self._next_batch
        self._next_batch += 1
        ids = list(range(self._next_id, self._next_id + len(genos)))
        self._next_id += len(genos)
        self._batches[b] = Batch(self._generation, list(genos), ids)
        for pid, g, p in zip(ids, genos, params):
            self._pending[pid] = PendingTrial(p, b, g)
        return [Candidate(pid, p) for pid, p in zip(ids, params)]

    def _settle(self, told: list[Told], track: bool = True) -> list[list[Score]]:
        """Mark ``told`` told; tell the engine every batch now complete; the completed batches' scored Scores.

        ``track``: report each completed batch to the tracker (ask/tell; start() reports its own)."""
        for t in told:
            entry = self._pending.pop(t.score.param_id, None)
            if isinstance(entry, PendingTrial):  # the baseline belongs to no batch
                self._batches[entry.batch].told[t.score.param_id] = t
        completed = []
        for b in sorted(self._batches):
            batch = self._batches[b]
            if not batch.complete:
                continue
            if self.search_config.normalize and self._baseline is None:
                continue  # normalised scores need the baseline first
            members = batch.in_ask_order()
            self.engine.tell(batch.genotypes, [None if t.is_discarded else self._oriented(t.score) for t in members])
            del self._batches[b]
            self._generation += 1
            done = [t.score for t in members if not t.is_discarded]
            completed.append(done)
            if track:
                self._tracking.batch(batch.generation, done, self.k)
        return completed

    # -- ask ------------------------------------------------------------------------------------------
    def ask(self, num_samples: int | None = None) -> list[Candidate]:
        """Candidates to evaluate: ``num_samples`` of them (None: one generation, pool_size).

        Candidates a restored checkpoint left pending come first. Report each with ``tell``."""
        if self._resume is not None:
            raise ConfigurationError("resume_from works with start(), which replays the stored scores; with ask/tell "
                                     "restore a checkpoint instead (Search.from_checkpoint)")
        if num_samples is not None and (isinstance(num_samples, bool) or not isinstance(num_samples, int)
                                        or num_samples < 1):
            raise ValueError(f"ask(num_samples={num_samples!r}): num_samples must be an int >= 1, or None for "
                             f"one generation of pool_size={self.search_config.pool_size}")
        if not self._tracking_started:  # ask/tell: the tracker's run begins with the first ask, ends at close()
            self._tracking_started = True
            self._checks.start()  # the compilers are hashed once, as start() does
            self._tracking.search_starts(search_config=self.search_config.model_dump(), seed=self.seed,
                                         engine=self.engine_options["engine"])
        out: list[Candidate] = []
        if self.search_config.normalize and self._baseline is None and BASELINE_ID not in self._pending:
            self._pending[BASELINE_ID] = PendingBaseline()
            out.append(Candidate(BASELINE_ID, BASELINE_CONFIG))
        want = self.search_config.pool_size if num_samples is None else num_samples
        while self._resubmit and (want > 0 or self._pending.get(self._resubmit[0], PendingBaseline).is_baseline):
            pid = self._resubmit.pop(0)
            if pid in self._pending:
                out.append(Candidate(pid, self._pending[pid].params))
                want -= not self._pending[pid].is_baseline  # the baseline comes on top, as in the first ask
        if want > 0:
            genos = self.engine.ask(want)
            if genos:
                out.extend(self._issue(genos))
        if not out:
            raise SearchSpaceExhaustedError(
                f"ask: the search space holds no candidate that was not asked already (it has {self.space.size:,} "
                "distinct candidates, all handed out); stop asking, or search a larger space")
        return out

    @property
    def pending_candidates(self) -> list[Candidate]:
        """Asked and not yet told, in ask order."""
        return [Candidate(pid, entry.params) for pid, entry in self._pending.items()]

    # -- evaluate -------------------------------------------------------------------------------------
    def evaluate(self, candidates: Iterable, num_workers: int | None = None, task_timeout: float | None = None,
                 **worker_kwargs) -> list[Score]:
        """Run the objective on ``candidates`` (from ask) with this search's worker; the Scores, in the
        candidates' order, ready for ``tell``. The engine learns nothing until you tell them.

        The worker stays up between calls (no process start per generation); ``close()`` stops it."""
        from .ciq import check_run_args, make_worker
        check_run_args(num_workers, task_timeout)
        cands = [c if isinstance(c, Candidate) else Candidate(*c) for c in candidates]
        if not cands:
            raise ValueError("evaluate: no candidates given; pass what ask() returned")
        wants_baseline = any(c.param_id == BASELINE_ID for c in cands)
        rest = [c for c in cands if c.param_id != BASELINE_ID]
        if self._eval_worker is None:
            self._eval_worker = make_worker(self.worker_type, self.cache_folder, False, self.tracker)
            self._checks.start()
        worker = self._eval_worker
        worker.normalize = wants_baseline
        worker.baseline_score = None
        scores = worker.run(function=self.objective_function, params_pool=[c.params for c in rest],
                            params_ids=[c.param_id for c in rest], num_function_returns=self.k,
                            num_workers=num_workers, task_timeout=task_timeout, **worker_kwargs)
        by_id = {s.param_id: s for s in scores}
        for s in scores:
            s.norm_score = None  # tell() normalises with this search's baseline
        for c in cands:
            if c.param_id in by_id:
                by_id[c.param_id].params = c.params
        self._checks.after_batch()
        return [by_id[c.param_id] for c in cands if c.param_id in by_id]

    # -- tell -----------------------------------------------------------------------------------------
    def _told_items(self, scores) -> list[tuple[Any, Any, Score | None]]:
        items: list[tuple[Any, Any, Score | None]] = []
        if isinstance(scores, Score):
            scores = [scores]
        if isinstance(scores, Mapping):
            items = [(pid, v, None) for pid, v in scores.items()]
        else:
            for entry in scores:
                if isinstance(entry, Score):
                    if entry.num_objectives != self.k:
                        raise ValueError(f"tell: the Score for param_id {entry.param_id!r} has num_objectives="
                                         f"{entry.num_objectives} but this search has num_objectives={self.k}")
                    items.append((entry.param_id, entry.score, entry))
                elif isinstance(entry, tuple) and len(entry) == 2:
                    items.append((entry[0], entry[1], None))
                else:
                    raise ValueError(f"tell: {entry!r} is not a Score or a (param_id, score) pair")
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
        return items

    def tell(self, scores: Mapping | Iterable | Score) -> None:
        """Report scores of asked candidates: a list of Scores (NVIDIA's form), ``{param_id: score}``
        or ``[(param_id, score), ...]``. Any order, any non-empty subset of what is pending. A value
        that breaks the return contract raises ValueError before anything is recorded."""
        items = self._told_items(scores)
        built = []
        for pid, value, given in items:  # every check first: a bad entry must not leave half a tell behind
            s = given if given is not None else Score(value, pid, self._pending[pid].params, self.k)
            built.append((pid, s))
        built.sort(key=lambda it: it[0] != BASELINE_ID)  # the baseline first: later scores divide by it
        settled, completed = [], []
        for pid, s in built:
            entry = self._pending[pid]
            s.params = entry.params
            s.param_id = pid
            if entry.is_baseline:
                self._check_baseline(s)
                self._pending.pop(pid)
                s.is_baseline = True
                s.norm_score = Worker.normalize_scores(s.score, s.score)
                self._rows.append(self._row(s, self._generation))
                for batch in self._batches.values():  # scores told before the baseline: normalise them now
                    for t in batch.told.values():
                        t.score.norm_score = Worker.normalize_scores(t.score.score, s.score)
                        if t.row is not None:
                            t.row.update(self._row(t.score, batch.generation))
                completed.append([])
                continue
            if self.search_config.normalize and self._baseline is not None:
                s.norm_score = Worker.normalize_scores(s.score, self._baseline.score)
            row = self._row(s, self._batches[entry.batch].generation)
            self._rows.append(row)
            settled.append(Told(s, row))
        completed += self._settle(settled)
        if completed:  # once per finished batch: telling scores one by one must not rewrite the CSV each time
            self._dump()
        self._checks.after_batch(on_stop=self._dump)
        first = next((b for b in completed if b), None)
        if first is not None:
            self._checks.first_generation(first)
