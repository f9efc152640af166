"""Optuna's TPE or NSGA-II samplers behind the Engine interface (ask/tell with fixed distributions).

Optuna does not know our rule that a candidate is never evaluated twice, and its samplers do
propose repeats (TPE does so often once it has converged). A proposal that is already known is
answered on the spot: with its score when that is known, so that the sampler learns from it,
or as a failure; a repeat of a candidate still being evaluated stays open and gets the same score
when that arrives. After a bounded number of repeats the slot is filled with a fresh random
candidate, which Optuna is told about as an added trial once it is scored. Generation 0 comes
from the priors (``Engine.initial``) and reaches the study the same way.
"""

from __future__ import annotations

import contextlib
import warnings
from typing import Sequence

from ..space.space import Genotype
from .base import Engine, Objectives
from .ga import TellBook, batch_size

REPEATS = 20  # repeated proposals in a row before a slot is filled at random


def _optuna():
    try:
        import optuna
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            'engine="optuna-tpe" / "optuna-nsga2" needs Optuna: pip install optuna') from exc
    return optuna


class OptunaEngine(Engine):
    name = "optuna"
    multi_objective = True
    checkpointable = False  # the Optuna study lives in memory with its own sampler state

    def __init__(self, space, settings, sampler: str = "tpe"):
        super().__init__(space, settings)
        optuna = self._optuna = _optuna()
        if sampler not in ("tpe", "nsga2"):
            raise ValueError(f"OptunaEngine sampler={sampler!r}: use 'tpe' or 'nsga2'")
        self.name = f"optuna-{sampler}"
        self.book = TellBook(space, settings.num_objectives)
        D = optuna.distributions
        # ordinal knobs keep their order (an int range); the rest are unordered categories
        self.dists = {
            f"g{i}": (D.IntDistribution(0, g.size - 1) if g.ordinal and g.size > 1
                      else D.CategoricalDistribution(list(range(g.size))))
            for i, g in enumerate(space.genes)
        }
        with self._quiet():
            if sampler == "tpe":
                s = optuna.samplers.TPESampler(seed=settings.seed)
            else:
                s = optuna.samplers.NSGAIISampler(seed=settings.seed, population_size=settings.pool_size)
            self.study = optuna.create_study(directions=["minimize"] * settings.num_objectives, sampler=s)
        self.trials: dict[Genotype, list] = {}  # issued candidate -> its open Optuna trials
        self.scores: dict[Genotype, tuple | None] = {}  # told candidate -> objectives (None = failed)

    @contextlib.contextmanager
    def _quiet(self):
        # Optuna logs every trial at INFO and flags some APIs as experimental: neither may reach the user
        logging = self._optuna.logging
        level = logging.get_verbosity()
        logging.set_verbosity(logging.WARNING)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", self._optuna.exceptions.ExperimentalWarning)
                yield
        finally:
            logging.set_verbosity(level)

    # -- ask ------------------------------------------------------------------------------------
    def ask(self, n: int | None = None) -> list[Genotype]:
        n = batch_size(n, self.settings)
        if not self.book.issued_any:
            # generation 0 is ours, as in every engine: it honours the knockout priors and seed
            # windows, which Optuna's own start-up sampling does not know about
            out = self.initial(n)
            for g in out:
                self.trials[g] = []  # added to the study once scored
        else:
            out = []
            with self._quiet():
                while len(out) < n:
                    g = self._propose()
                    if g is None:
                        break
                    out.append(g)
        self.book.issued(out)
        return out

    def _propose(self) -> Genotype | None:
        for _ in range(REPEATS):
            trial = self.study.ask(self.dists)
            raw = tuple(trial.params[f"g{i}"] for i in range(len(self.space.genes)))
            c = self.space.canonical(raw)
            if c is None:  # every knob knocked out: the baseline, never offered
                self.study.tell(trial, state=self._optuna.trial.TrialState.FAIL)
                continue
            if c not in self.seen:
                self.seen.add(c)
                self.trials[c] = [trial]
                return c
            if c in self.scores:
                self._finish(trial, self.scores[c])
            else:
                self.trials[c].append(trial)  # in flight: answered when its score comes
        fresh = self.fresh(1)
        if not fresh:
            return None
        self.trials[fresh[0]] = []  # no trial yet: added to the study once scored
        return fresh[0]

    def _finish(self, trial, objectives: tuple | None) -> None:
        if objectives is None:
            self.study.tell(trial, state=self._optuna.trial.TrialState.FAIL)
        else:
            self.study.tell(trial, list(objectives))

    # -- tell -----------------------------------------------------------------------------------
    def tell(self, genotypes: Sequence, objectives: Sequence[Objectives | None]) -> None:
        told = self.book.take(genotypes, objectives)
        optuna = self._optuna
        with self._quiet():
            for g, _, obj in told:
                self.scores[g] = obj
                trials = self.trials.pop(g, [])
                if trials:
                    for t in trials:
                        self._finish(t, obj)
                elif obj is not None:
                    self.study.add_trial(optuna.trial.create_trial(
                        params={f"g{i}": v for i, v in enumerate(g)}, distributions=self.dists,
                        values=list(obj)))
        self.generation += 1

    def close(self) -> None:
        self.trials.clear()
