"""The interface every search engine implements, and the duplicate-free candidate source they share.

An engine proposes genotypes (``ask``) and learns their scores (``tell``). It never sees values or
the objective: only ``SearchSpace`` genes. Scores reach it as *minimisation* tuples (Search flips
the sign for problem_type="max" and passes normalised scores when normalize=True); ``None`` marks a
failed candidate. All randomness comes from ``self.rng`` seeded by ``EngineSettings.seed``, so the
same seed and the same told scores give the same candidates in any process.
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Sequence

from ..space.space import Genotype, SearchSpace

Objectives = tuple  # k floats, to minimise


@dataclass(frozen=True)
class EngineSettings:
    num_objectives: int = 1
    pool_size: int = 32
    cull_size: int = 24
    mutate_rate: float = 0.25
    objective_weights: tuple | None = None
    init_with_true_random_threshold: float = 0.9
    seed: int = 0
    generations: int | None = None  # planned total; engines may use it to anneal, never to stop


class Engine(ABC):
    """Base of GA, NSGA-II, random search and the Optuna adapter."""

    name: str = "base"
    multi_objective: bool = True  # whether the engine can rank several objectives itself
    checkpointable: bool = True  # whether engines.state can write and restore its state

    # tries at drawing a new candidate before falling back to enumeration / giving up
    _DRAW_TRIES = 200
    _ENUMERATE_LIMIT = 200_000

    def __init__(self, space: SearchSpace, settings: EngineSettings):
        self.space = space
        self.settings = settings
        self.rng = random.Random(settings.seed)
        self.seen: set[Genotype] = set()  # every canonical genotype ever issued
        self.generation = 0  # batches told so far
        self._unissued: list[Genotype] | None = None

    # -- the interface --------------------------------------------------------------------------
    @abstractmethod
    def ask(self, n: int | None = None) -> list[Genotype]:
        """Up to ``n`` (default: the engine's batch, normally pool_size) new canonical genotypes.

        Never returns a genotype issued before. Returns fewer, or none, only when the space has
        no unissued candidate left."""

    @abstractmethod
    def tell(self, genotypes: Sequence[Genotype], objectives: Sequence[Objectives | None]) -> None:
        """Scores of a batch previously asked, in any order; None = the candidate failed."""

    def close(self) -> None:
        """Release anything held (the Optuna adapter's study); the default holds nothing."""

    # -- shared helpers -------------------------------------------------------------------------
    def issue(self, genotype: Sequence[int]) -> Genotype | None:
        """Canonicalise and claim a genotype; None if it was issued already or is not offerable."""
        c = self.space.canonical(genotype)
        if c is None or c in self.seen:
            return None
        self.seen.add(c)
        return c

    def fresh(self, n: int, seeded: bool = False) -> list[Genotype]:
        """n never-issued candidates drawn from the priors (fewer only when the space is exhausted)."""
        out: list[Genotype] = []
        misses = 0
        while len(out) < n and misses < self._DRAW_TRIES:
            c = self.issue(self.space.random_genotype(self.rng, seeded))
            if c is None:
                misses += 1
            else:
                out.append(c)
                misses = 0
        if len(out) < n:
            out.extend(self._from_enumeration(n - len(out)))
        return out

    def _from_enumeration(self, n: int) -> list[Genotype]:
        # Random draws keep colliding: either the space is nearly used up, or it is small.
        # Enumerate it once (when small enough) and hand out what was never issued, in random order.
        if self._unissued is None:
            everything = self.space.enumerate(self._ENUMERATE_LIMIT)
            if everything is None:
                return []
            self.rng.shuffle(everything)
            self._unissued = everything
        out = []
        while self._unissued and len(out) < n:
            c = self._unissued.pop()
            if c not in self.seen:
                self.seen.add(c)
                out.append(c)
        return out

    def initial(self, n: int) -> list[Genotype]:
        """Generation 0: a share init_with_true_random_threshold drawn inside the seed windows."""
        if not self.space.has_seed_windows():
            return self.fresh(n)
        seeded = round(n * self.settings.init_with_true_random_threshold)
        return self.fresh(seeded, seeded=True) + self.fresh(n - seeded)


def dominates(a: Sequence[float], b: Sequence[float]) -> bool:
    """Pareto dominance for minimisation."""
    return all(x <= y for x, y in zip(a, b)) and any(x < y for x, y in zip(a, b))


ENGINE_NAMES = ("auto", "ga", "nsga2", "random", "optuna-tpe", "optuna-nsga2", "amber")


def make_engine(name, space: SearchSpace, settings: EngineSettings) -> Engine:
    """Build the engine called ``name`` ('auto' = GA for one objective, NSGA-II for several)."""
    from ..errors import ConfigurationError
    if isinstance(name, Engine):
        return name
    if isinstance(name, type) and issubclass(name, Engine):
        return name(space, settings)
    from ..backends import registered_backend
    if isinstance(name, str) and registered_backend(name) is not None:
        return registered_backend(name)(space, settings)
    if name in (None, "auto", "amber", "default"):
        name = "ga" if settings.num_objectives == 1 else "nsga2"
    if name == "ga":
        from .ga import GeneticEngine
        return GeneticEngine(space, settings)
    if name == "nsga2":
        from .nsga2 import NSGA2Engine
        return NSGA2Engine(space, settings)
    if name == "random":
        from .random_search import RandomEngine
        return RandomEngine(space, settings)
    if name in ("optuna-tpe", "optuna-nsga2"):
        from .optuna_adapter import OptunaEngine
        return OptunaEngine(space, settings, sampler=name.split("-", 1)[1])
    raise ConfigurationError(f"engine={name!r} is not an engine; use one of {', '.join(ENGINE_NAMES)}, an EngineConfig, "
                             "an Engine subclass or a name given to compileiq.backends.register_backend")

