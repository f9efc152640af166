"""NSGA-II: the default engine for several objectives.

The population is the best candidates evaluated so far by (non-domination rank, crowding
distance), 3/8 of a batch; failed candidates rank after every successful one. Parents come from
binary tournaments on (rank, crowding) and children from the GA's operators (``ga.Variation``), whose
mutation rate adapts the same way, here to how many children make it into the population.
Children are pre-selected as in the GA, with one additive model per objective and the NSGA-II
order applied to the predicted ranks, so that the kept children spread along the whole front.

``non_dominated_sort`` and ``crowding_distance`` are plain functions of points (minimisation) so
that results code can rank a finished run's front the same way the engine does.
"""

from __future__ import annotations

import math
from typing import Iterator, Sequence

import numpy as np

from ..space.space import Genotype, SearchSpace
from .base import Objectives
from .ga import CROSSOVER, Evolutionary, Marginals

MU = 0.375  # population size as a share of pool_size
TOURNAMENT = 2  # binary tournaments on (rank, crowding), as in the original
RATE0 = 0.5  # starting mutation rate as a share of mutate_rate: a front needs more spread than one best
SUCCESS = 0.35  # share of children entering the population at which the mutation rate holds still


def non_dominated_sort(points: Sequence[Sequence[float]]) -> list[list[int]]:
    """Indices of ``points`` split into Pareto fronts (minimisation), best front first, each ascending."""
    n = len(points)
    if n == 0:
        return []
    p = np.asarray(points, dtype=float).reshape(n, -1)
    le = (p[:, None, :] <= p[None, :, :]).all(axis=2)
    lt = (p[:, None, :] < p[None, :, :]).any(axis=2)
    dom = le & lt  # dom[i, j]: i dominates j
    count = dom.sum(axis=0)  # how many points dominate each point
    fronts = []
    current = np.flatnonzero(count == 0)
    while current.size:
        fronts.append(current.tolist())
        count = count - dom[current].sum(axis=0)
        count[current] = -1  # placed: never picked again
        current = np.flatnonzero(count == 0)
    return fronts


def crowding_distance(points: Sequence[Sequence[float]]) -> list[float]:
    """NSGA-II crowding distance of each point within its set; the extremes of every objective get inf."""
    n = len(points)
    if n == 0:
        return []
    if n <= 2:
        return [math.inf] * n
    p = np.asarray(points, dtype=float).reshape(n, -1)
    dist = np.zeros(n)
    for m in range(p.shape[1]):
        order = np.argsort(p[:, m], kind="stable")
        col = p[order, m]
        dist[order[0]] = dist[order[-1]] = math.inf
        span = col[-1] - col[0]
        if span > 0:
            dist[order[1:-1]] += (col[2:] - col[:-2]) / span
    return dist.tolist()


class NSGA2Engine(Evolutionary):
    name = "nsga2"
    multi_objective = True
    rate_share = RATE0

    def __init__(self, space: SearchSpace, settings):
        super().__init__(space, settings)
        # a population smaller than the batch (3/8 of it): with binary tournaments that is what
        # gives the selection pressure a compile-and-run budget needs; the whole front found so
        # far is in the results anyway, not only in the population
        self.mu = max(2 * settings.num_objectives + 1, round(settings.pool_size * MU))
        # population: (objectives or None, issue number, genotype); rank and crowding per member
        self.pop: list[tuple[tuple | None, int, Genotype]] = []
        self.rank: list[int] = []
        self.crowd: list[float] = []
        self.archive: list[tuple[tuple, int, Genotype]] = []  # recent successful candidates, for the models
        self.models = [self.model] + [Marginals(self.var) for _ in range(settings.num_objectives - 1)]
        self.n_ok = 0  # successful members: the first n_ok of the population, the only ones bred from

    def _can_breed(self) -> bool:
        return self.n_ok > 0

    def _children(self, n: int) -> Iterator[tuple[list[int], object]]:
        # no local-search share here: neighbours of front members mostly land next to the front,
        # which adds little hypervolume for an evaluation
        rng, var = self.rng, self.var
        while True:
            a = self._pick()
            if self.n_ok > 1 and rng.random() < CROSSOVER:
                b = self._pick()
                child = var.mutate(var.crossover(a, b), self.rate, at_least_one=False)
                if child == list(a) or child == list(b):
                    var.nudge(child)
            else:
                child = var.mutate(list(a), self.rate)
            yield child, None

    def _pick(self) -> Genotype:
        # tournament on (rank, crowding): the front first, and its sparse regions first within it
        m = self.n_ok
        best = self.rng.randrange(m)
        for _ in range(TOURNAMENT - 1):
            j = self.rng.randrange(m)
            if (self.rank[j], -self.crowd[j]) < (self.rank[best], -self.crowd[best]):
                best = j
        return self.pop[best][2]

    # -- tell -----------------------------------------------------------------------------------
    def tell(self, genotypes: Sequence, objectives: Sequence[Objectives | None]) -> None:
        told = self.book.take(genotypes, objectives)
        for g, _, _ in told:
            self.origin.pop(g, None)
        newcomers = {num for _, num, _ in told}
        bred = self._can_breed()
        self._select(self.pop + [(obj, num, g) for g, num, obj in told])
        if bred:
            self._adapt(sum(1 for _, num, _ in self.pop if num in newcomers), len(told), target=SUCCESS)
        self.generation += 1
        ok = [(obj, num, g) for g, num, obj in told if obj is not None]
        if ok:
            self.archive.extend(ok)
            if len(self.archive) > Marginals.WINDOW:
                del self.archive[:len(self.archive) - Marginals.WINDOW]
            for j, model in enumerate(self.models):
                model.fit([m[2] for m in sorted(self.archive, key=lambda m: (m[0][j], m[1]))])

    def _model_ready(self) -> bool:
        return self.models[0].table is not None

    def _preselect(self, cands: list[Genotype]) -> list[int]:
        # one additive model per objective, and the NSGA-II order on the predicted ranks: the
        # likeliest children along the whole front, not just towards its middle
        predicted = [tuple(m.predict(c) for m in self.models) for c in cands]
        return _ranked(predicted)

    def _select(self, merged: list) -> None:
        ok = [m for m in merged if m[0] is not None]
        failed = sorted((m for m in merged if m[0] is None), key=lambda m: m[1])
        pop, rank, crowd = [], [], []
        fronts = non_dominated_sort([m[0] for m in ok])
        for r, front in enumerate(fronts):
            members = [ok[i] for i in front]
            dist = crowding_distance([m[0] for m in members])
            order = sorted(range(len(members)), key=lambda i: (-dist[i], members[i][1]))
            for i in order[:self.mu - len(pop)]:
                pop.append(members[i])
                rank.append(r)
                crowd.append(dist[i])
            if len(pop) >= self.mu:
                break
        self.n_ok = len(pop)
        last = len(fronts)
        for m in failed[:self.mu - len(pop)]:
            pop.append(m)
            rank.append(last)
            crowd.append(0.0)
        self.pop, self.rank, self.crowd = pop, rank, crowd


def _ranked(points: Sequence[Sequence[float]]) -> list[int]:
    """Indices best first: by front, then by crowding distance within a front."""
    out = []
    for front in non_dominated_sort(points):
        dist = crowding_distance([points[i] for i in front])
        out.extend(front[j] for j in sorted(range(len(front)), key=lambda j: (-dist[j], front[j])))
    return out
