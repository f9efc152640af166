"""The genetic algorithm: the default engine for one objective, and the machinery NSGA-II shares.

Design, for discrete compiler-like spaces and budgets of a few dozen generations of ~32:

* (mu + lambda) elitism: the parents are the best ``cull_size`` candidates evaluated so far, and
  the ``pool_size - cull_size`` best of them (the elites) are where local search works. A
  candidate is never evaluated twice, so "survival" means staying a parent.
* Parents are picked by tournament on rank (failed candidates are never parents); children come
  from per-knob crossover (an ordinal knob may land between its parents, a "hyper-box" draw)
  followed by per-knob mutation.
* Mutation: ordinal knobs take small steps or are redrawn uniformly, enumerations are redrawn,
  knockout (presence) genes flip with their prior. The per-knob rate starts below
  ``mutate_rate`` and follows the 1/5th-success rule (children that beat their better parent),
  because a rate that explores well early wastes evaluations once the population is in a basin.
* A share of the children is local search: one- or two-knob neighbours of the elites, which is
  what finishes off an almost-right candidate.
* Offspring pre-selection: the operators make SCREEN times as many children as asked for, and a
  per-knob model of the evaluated candidates (``Marginals``, an additive guess of each child's
  rank) keeps the likeliest, plus a random share so that the model's blind spots still get
  explored. Evaluations are the expensive part (a compile and a benchmark run each); spending
  microseconds to avoid a hopeless one pays off.
* When the best has not improved for STALL generations and the parents have collapsed onto it,
  the population restarts from random candidates, so that it does not burn the budget re-exploring
  one neighbourhood.

The constants below were tuned on ``compileiq.testing.problems`` (see ``compileiq.bench.engine_quality``).
"""

from __future__ import annotations

import math
import numbers
from typing import Iterator, Sequence

from ..space.space import Genotype, SearchSpace
from .base import Engine, Objectives

BOX = 0.5  # chance an ordinal knob's child value is drawn between its parents' values, not copied
STEP = 0.6  # chance an ordinal mutation is a small step rather than a uniform redraw
CROSSOVER = 0.9  # chance a child has two parents rather than being a mutated copy of one
TOURNAMENT = 6  # tournament size: strong pressure, since every evaluation counts
RATE0 = 0.2  # the GA's starting per-knob mutation rate, as a share of mutate_rate
TARGET_SUCCESS = 0.2  # the 1/5th rule: the success rate at which the mutation rate holds still
LOCAL = 0.1  # share of the children made that are neighbours of the elites
SCREEN = 4.0  # children made per child asked for, before the model picks
EXPLORE = 0.25  # share of a generation picked at random among the children, not by the model
STALL = 10  # generations without a better best before the population restarts, if it has
COLLAPSE = 1.0  # collapsed: its parents differ from the best in fewer genes than this, on average


def batch_size(n, settings) -> int:
    """ask()'s n: None means the engine's own batch (pool_size)."""
    if n is None:
        return settings.pool_size
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 0:
        raise ValueError(f"ask(n={n!r}): n must be an int >= 0, or None for a batch of pool_size={settings.pool_size}")
    return int(n)


class TellBook:
    """What was issued and not yet told, and the checks every engine's ``tell`` applies."""

    def __init__(self, space: SearchSpace, num_objectives: int):
        self.space = space
        self.k = num_objectives
        self.pending: dict[Genotype, int] = {}  # issued, not yet told -> issue number
        self.count = 0

    @property
    def issued_any(self) -> bool:
        return self.count > 0

    def issued(self, genotypes: Sequence[Genotype]) -> None:
        for g in genotypes:
            self.pending[g] = self.count
            self.count += 1

    def take(self, genotypes: Sequence, objectives: Sequence) -> list[tuple[Genotype, int, tuple | None]]:
        """(genotype, issue number, objectives or None) for a told batch; ValueError on a bad one."""
        if len(genotypes) != len(objectives):
            raise ValueError(f"tell() got {len(genotypes)} genotypes but {len(objectives)} objectives; give one per genotype")
        out, batch = [], set()
        for g, obj in zip(genotypes, objectives):
            key = tuple(g)
            if key not in self.pending:
                c = self.space.canonical(key)
                key = c if c in self.pending else key
            if key not in self.pending or key in batch:
                raise ValueError(
                    f"tell() got genotype {tuple(g)}, which this engine has no pending ask for: it was never "
                    "returned by ask(), or its score was told already")
            batch.add(key)
            out.append((key, self.pending[key], self._objectives(key, obj)))
        for key, _, _ in out:
            del self.pending[key]
        # issue order, not arrival order: workers finish in any order, the engine must not care
        out.sort(key=lambda t: t[1])
        return out

    def _objectives(self, g: Genotype, obj) -> tuple | None:
        if obj is None:
            return None
        if self.k == 1 and not isinstance(obj, (tuple, list)):
            obj = (obj,)
        if not isinstance(obj, (tuple, list)) or len(obj) != self.k:
            raise ValueError(
                f"tell() got objectives {obj!r} for genotype {g}: expected a tuple of {self.k} float(s) "
                "to minimise, or None for a failed candidate")
        try:
            vals = tuple(float(x) for x in obj)
        except (TypeError, ValueError):
            raise ValueError(f"tell() got objectives {obj!r} for genotype {g}: every entry must be a number") from None
        # NaN / inf cannot be ranked: the candidate counts as failed
        return vals if all(math.isfinite(x) for x in vals) else None


class Variation:
    """Crossover and mutation on genes; used by the GA and NSGA-II."""

    def __init__(self, space: SearchSpace, rng):
        self.space = space
        self.rng = rng
        self.genes = space.genes
        presence = [None] * len(self.genes)
        for i, g in enumerate(self.genes):
            if g.presence_of is not None:
                presence[g.presence_of] = i
        # a unit = a parameter: its value gene and, for a knockable one, its presence gene
        self.units = [(i, presence[i]) for i, g in enumerate(self.genes) if g.presence_of is None]
        self.presence = presence
        # genes whose change can change the candidate (a one-value literal's value gene cannot)
        self.mutable = [i for i, g in enumerate(self.genes) if g.size > 1]

    # -- crossover ------------------------------------------------------------------------------
    def crossover(self, a: Sequence[int], b: Sequence[int]) -> list[int]:
        rng = self.rng
        child = list(a)
        for vi, pi in self.units:
            if pi is None:
                child[vi] = self._cross_value(vi, a[vi], b[vi])
                continue
            pa, pb = a[pi], b[pi]
            present = pa if (pa == pb or rng.random() < 0.5) else pb
            child[pi] = present
            if not present:
                child[vi] = 0
            elif pa and pb:
                child[vi] = self._cross_value(vi, a[vi], b[vi])
            else:
                # only one parent has this knob: its value, not the other's meaningless placeholder
                child[vi] = a[vi] if pa else b[vi]
        return child

    def _cross_value(self, i: int, x: int, y: int) -> int:
        if x == y:
            return x
        rng = self.rng
        if self.genes[i].ordinal and rng.random() < BOX:
            return rng.randint(min(x, y), max(x, y))
        return x if rng.random() < 0.5 else y

    # -- mutation -------------------------------------------------------------------------------
    def mutate(self, g: list[int], rate: float, at_least_one: bool = True) -> list[int]:
        changed = False
        for i in self.mutable:
            if self.rng.random() < rate and self._live(g, i):
                changed |= self.mutate_gene(g, i)
        if at_least_one and not changed:
            self.nudge(g)
        return g

    def nudge(self, g: list[int], small: bool = False) -> list[int]:
        """Change exactly one live gene (tries a few genes: a presence flip may be declined by its prior)."""
        for _ in range(8):
            if not self.mutable:
                break
            i = self.mutable[self.rng.randrange(len(self.mutable))]
            if self._live(g, i) and self.mutate_gene(g, i, small):
                break
        return g

    def _live(self, g: Sequence[int], i: int) -> bool:
        # a value gene of a knocked-out knob is invisible: changing it changes nothing
        pi = self.presence[i]
        return pi is None or g[pi] == 1

    def mutate_gene(self, g: list[int], i: int, small: bool = False) -> bool:
        rng = self.rng
        gene = self.genes[i]
        cur = g[i]
        if gene.presence_of is not None:
            # flip, but towards the rarer state only as often as the prior makes it plausible
            p = gene.present_prob
            if rng.random() >= min(1.0, 2.0 * ((1.0 - p) if cur else p)):
                return False
            g[i] = 1 - cur
            if g[i]:
                g[gene.presence_of] = self.space.sample_gene(gene.presence_of, rng)
            else:
                g[gene.presence_of] = 0
            return True
        if gene.ordinal and (small or rng.random() < STEP):
            step = 1
            while rng.random() < 0.3:
                step += 1
            v = cur + step if rng.random() < 0.5 else cur - step
            if not 0 <= v < gene.size:
                v = cur - step if v > cur else cur + step
            g[i] = min(max(v, 0), gene.size - 1)
        else:
            v = rng.randrange(gene.size - 1)
            g[i] = v + 1 if v >= cur else v
        return g[i] != cur


class Marginals:
    """An additive guess of how a child will rank, from per-knob value statistics of evaluated candidates.

    Each knob value gets the mean rank (0 = best, 1 = worst) of the recent candidates that used it,
    shrunk towards the average when seen rarely and, for ordinal knobs, borrowing from neighbouring
    values. It ignores interactions, which is why it only screens children the GA operators made."""

    WINDOW = 1024  # recent candidates the statistics use: keeps the cost per generation bounded
    PRIOR = 2.0  # pseudo-observations at the average rank, per value
    NEIGHBOUR = 0.5  # weight of an ordinal value's neighbours' evidence

    def __init__(self, var: Variation):
        self.var = var
        self.table: list[list[float]] | None = None

    def fit(self, ranked: Sequence[Genotype]) -> None:
        """``ranked``: successful candidates, best first."""
        var = self.var
        n = len(ranked)
        if n < 2:
            self.table = None
            return
        sums = [[0.0] * g.size for g in var.genes]
        counts = [[0.0] * g.size for g in var.genes]
        for pos, g in enumerate(ranked):
            r = pos / (n - 1)
            for vi, pi in var.units:
                if pi is not None:
                    sums[pi][g[pi]] += r
                    counts[pi][g[pi]] += 1.0
                    if not g[pi]:
                        continue  # an absent knob's value gene is a placeholder, not evidence
                sums[vi][g[vi]] += r
                counts[vi][g[vi]] += 1.0
        w, k = self.NEIGHBOUR, self.PRIOR
        table = []
        for i, gene in enumerate(var.genes):
            s, c = sums[i], counts[i]
            if gene.ordinal and gene.size > 2:
                # neighbours share evidence: a good 12 says something about 11 and 13
                last = gene.size - 1
                s = [s[v] + w * ((s[v - 1] if v else 0.0) + (s[v + 1] if v < last else 0.0)) for v in range(gene.size)]
                c = [c[v] + w * ((c[v - 1] if v else 0.0) + (c[v + 1] if v < last else 0.0)) for v in range(gene.size)]
            table.append([(sv + 0.5 * k) / (cv + k) for sv, cv in zip(s, c)])
        self.table = table

    def predict(self, g: Sequence[int]) -> float:
        t = self.table
        total = 0.0
        for vi, pi in self.var.units:
            if pi is not None:
                total += t[pi][g[pi]]
                if not g[pi]:
                    total += 0.5  # an absent knob's value is neither good nor bad
                    continue
            total += t[vi][g[vi]]
        return total


def scalarise(objectives: tuple | None, weights: Sequence[float]) -> float:
    """One number to minimise; a failed candidate ranks after every successful one."""
    if objectives is None:
        return math.inf
    return sum(w * x for w, x in zip(weights, objectives))


class Evolutionary(Engine):
    """What the GA and NSGA-II share: the ask path (generation 0, breeding, pre-selection) and bookkeeping.

    A subclass says whether it has parents (``_can_breed``), makes children (``_children``),
    may replace the pre-selection order (``_preselect``) and implements ``tell``."""

    rate_share = RATE0  # starting mutation rate = mutate_rate * rate_share

    def __init__(self, space: SearchSpace, settings):
        super().__init__(space, settings)
        self.book = TellBook(space, settings.num_objectives)
        self.var = Variation(space, self.rng)
        self.model = Marginals(self.var)
        genes = max(1, len(self.var.mutable))
        self.rate0 = settings.mutate_rate * self.rate_share
        self.rate = self.rate0
        self.min_rate = min(self.rate0, 0.5 / genes)  # still about one knob in two children
        self.max_rate = max(self.rate0, 0.5)
        self.origin: dict[Genotype, object] = {}  # pending child -> its better parent's standing
        self.space_size = space.size

    def _can_breed(self) -> bool:
        raise NotImplementedError

    def _children(self, n: int) -> Iterator[tuple[list[int], object]]:
        """Endless (child genes, parent standing) pairs; n is the number the caller wants."""
        raise NotImplementedError

    def ask(self, n: int | None = None) -> list[Genotype]:
        n = min(batch_size(n, self.settings), self.space_size - len(self.seen))
        if n <= 0:
            out = []  # the space is used up
        elif not self.book.issued_any:
            out = self.initial(n)
        elif not self._can_breed():
            out = self.fresh(n)  # nothing has succeeded yet (or a restart): nothing to breed from
        else:
            out = self._screened(n)
        self.book.issued(out)
        return out

    def _screened(self, n: int) -> list[Genotype]:
        """n children: the operators make SCREEN times as many, the model keeps the likeliest."""
        want = max(n, round(n * SCREEN))
        pool: dict[Genotype, object] = {}  # unclaimed, distinct, in the order made -> parent standing
        misses = 0
        for child, parent in self._children(want):
            if len(pool) >= want or misses > 20 * want:
                break
            c = self.space.canonical(child)
            if c is None or c in self.seen or c in pool:
                misses += 1
                continue
            pool[c] = parent
        cands = list(pool)
        if len(cands) > n and self._model_ready():
            explore = round(n * EXPLORE)
            order = self._preselect(cands)
            rest = order[n - explore:]
            self.rng.shuffle(rest)
            cands = [cands[i] for i in sorted(order[:n - explore] + rest[:explore])]
        out = [c for c in cands[:n] if self.issue(c) is not None]
        for c in out:
            self.origin[c] = pool[c]
        if len(out) < n:
            out += self.fresh(n - len(out))  # the operators keep remaking known candidates
        # a batch is evaluated in parallel: its order means nothing, so it must not favour any
        # one kind of child (local-search children come first otherwise) when workers are few
        self.rng.shuffle(out)
        return out

    def _model_ready(self) -> bool:
        return self.model.table is not None

    def _preselect(self, cands: list[Genotype]) -> list[int]:
        """Indices of ``cands``, likeliest first."""
        return sorted(range(len(cands)), key=lambda i: (self.model.predict(cands[i]), i))

    def _adapt(self, successes: int, told: int, target: float = TARGET_SUCCESS) -> None:
        # the 1/5th rule: raise the rate while children beat their parents, lower it when they stop
        if told:
            self.rate = min(self.max_rate, max(self.min_rate, self.rate * math.exp(0.8 * (successes / told - target))))


class GeneticEngine(Evolutionary):
    name = "ga"
    multi_objective = False  # several objectives are scalarised with objective_weights

    def __init__(self, space: SearchSpace, settings):
        super().__init__(space, settings)
        k = settings.num_objectives
        self.weights = tuple(settings.objective_weights) if settings.objective_weights else (1.0 / k,) * k
        self.mu = max(2, min(settings.cull_size, settings.pool_size))  # parents kept
        self.elites = max(1, settings.pool_size - settings.cull_size)
        self.parents: list[tuple[float, int, Genotype]] = []  # (fitness, issue number, genotype), best first
        self.archive: list[tuple[float, int, Genotype]] = []  # recent successful candidates, for the model
        self.best: tuple[float, int, Genotype] | None = None
        self.stalled = 0
        self.restarts = 0

    def _can_breed(self) -> bool:
        return bool(self.parents)

    def _children(self, n: int) -> Iterator[tuple[list[int], float]]:
        rng, var = self.rng, self.var
        parents = self.parents
        local = round(n * LOCAL)
        made = 0
        while True:
            if made < local:
                # a neighbour of an elite, best first: one or two small changes
                e = parents[made % min(self.elites, len(parents))]
                child = var.nudge(list(e[2]), small=True)
                if rng.random() < 0.3:
                    var.nudge(child, small=True)
                yield child, e[0]
            else:
                a = self._pick()
                if len(parents) > 1 and rng.random() < CROSSOVER:
                    b = self._pick()
                    if b is a:  # strong pressure picks the best twice often: mate it with anyone else
                        b = parents[rng.randrange(len(parents) - 1) + 1] if a is parents[0] else parents[0]
                    child = var.mutate(var.crossover(a[2], b[2]), self.rate, at_least_one=False)
                    if child == list(a[2]) or child == list(b[2]):
                        var.nudge(child)
                    yield child, min(a[0], b[0])
                else:
                    yield var.mutate(list(a[2]), self.rate), a[0]
            made += 1

    def _pick(self) -> tuple[float, int, Genotype]:
        # tournament on rank (parents are sorted best first)
        m = len(self.parents)
        return self.parents[min(self.rng.randrange(m) for _ in range(TOURNAMENT))]

    def tell(self, genotypes: Sequence, objectives: Sequence[Objectives | None]) -> None:
        told = self.book.take(genotypes, objectives)
        scored = [(scalarise(obj, self.weights), num, g) for g, num, obj in told]
        wins = sum(1 for f, _, g in scored if f < self.origin.pop(g, -math.inf))
        self.generation += 1
        if self.parents:
            self._adapt(wins, len(told))
        ok = [s for s in scored if s[0] < math.inf]
        if not ok:
            return
        self.parents = sorted(self.parents + ok)[:self.mu]
        self.archive.extend(ok)
        if len(self.archive) > Marginals.WINDOW:
            del self.archive[:len(self.archive) - Marginals.WINDOW]
        self.model.fit([g for _, _, g in sorted(self.archive)])
        if self.best is None or self.parents[0][0] < self.best[0]:
            self.best = self.parents[0]
            self.stalled = 0
        else:
            self.stalled += 1
            if self.stalled >= STALL and self._collapsed():
                self._restart()

    def _collapsed(self) -> bool:
        # the parents are all next to the best: breeding them can only re-explore one neighbourhood
        best = self.parents[0][2]
        spread = sum(sum(x != y for x, y in zip(g, best)) for _, _, g in self.parents) / len(self.parents)
        return spread < COLLAPSE

    def _restart(self) -> None:
        # start over from random candidates, and forget the model too: it would only steer the
        # new population back into the basin the old one got stuck in
        self.parents, self.archive = [], []
        self.model.table = None
        self.rate = self.rate0
        self.stalled = 0
        self.restarts += 1
