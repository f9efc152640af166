"""Synthetic problems over discrete, compiler-like knob spaces, shared by the engine tests and benchmarks.

Each problem is a search space written in the DSL plus a *noiseless* objective to minimise on the
decoded parameters (what a user's objective would receive). Noisy variants add Gaussian noise to
what the engine sees, while success is still judged on the noiseless value, the way a kernel's
true speed matters and not one lucky timing. Every constant comes from a fixed seed, so a problem
is the same in every process; those seeds are large so that no engine seeded 0, 1, 2... replays
the draws that placed a problem's optimum.

``suite()`` is the benchmark set; ``target()`` is the bar an engine must reach (the best of 2,000
uniform random samples, or their front's hypervolume for two objectives).
"""

from __future__ import annotations

import math
import random
from functools import cached_property
from typing import Any, Sequence

from ..search_spaces import base as ss
from ..space.space import SearchSpace

RANDOM_SAMPLES = 2_000  # the target is the best of this many uniform random candidates


class Problem:
    """A space and a noiseless objective (minimised); subclasses fill ``_space`` and ``value``."""

    name = "problem"
    num_objectives = 1
    reference: tuple | None = None  # hypervolume reference point (two objectives)
    optimum: float | None = None  # the known best noiseless value, where known

    def __init__(self, noise: float = 0.0):
        # noise: sd of the Gaussian noise the engine sees, as a fraction of the spread of the
        # objective over random candidates (a scale-free setting that means the same everywhere)
        self.noise = noise
        if noise:
            self.name = f"{self.name}+noise"

    def _space(self) -> dict:
        raise NotImplementedError

    def value(self, params: dict) -> Any:
        raise NotImplementedError

    @cached_property
    def space(self) -> dict:
        return self._space()

    @cached_property
    def search_space(self) -> SearchSpace:
        return SearchSpace(self.space)

    @cached_property
    def _noise_sd(self) -> list[float]:
        values = [self.value(p) for p in self.random_params(500, seed=12345)]
        columns = zip(*values) if self.num_objectives > 1 else [values]
        # the interquartile range, not the sd: a few disastrous candidates must not set the noise
        return [self.noise * (c[374] - c[125]) / 1.349 for c in map(sorted, columns)]

    def observe(self, params: dict, rng: random.Random) -> Any:
        """What the engine is told: the value, plus noise for a noisy problem."""
        v = self.value(params)
        if not self.noise:
            return v
        if self.num_objectives == 1:
            return v + rng.gauss(0.0, self._noise_sd[0])
        return tuple(x + rng.gauss(0.0, sd) for x, sd in zip(v, self._noise_sd))

    def random_params(self, n: int, seed: int) -> list[dict]:
        rng = random.Random(seed)
        sp = self.search_space
        out = []
        while len(out) < n:
            c = sp.canonical(sp.random_genotype(rng))
            if c is not None:
                out.append(sp.decode(c))
        return out


# -- single objective -------------------------------------------------------------------------
class Separable(Problem):
    """A weighted quadratic bowl per knob: the easy case every engine should solve fast."""

    name = "separable-20"
    optimum = 0.0

    def __init__(self, knobs: int = 20, noise: float = 0.0, seed: int = 910001):
        r = random.Random(seed)
        sizes = [4, 8, 16, 32, 6, 12, 24, 10]
        self.sizes = [sizes[i % len(sizes)] for i in range(knobs)]
        self.opt = [r.randrange(s) for s in self.sizes]
        self.weights = [r.uniform(0.5, 2.0) for _ in range(knobs)]
        self.name = f"separable-{knobs}"
        super().__init__(noise)

    def _space(self):
        return {f"k{i:02d}": ss.range(0, s - 1) for i, s in enumerate(self.sizes)}

    def value(self, params):
        return sum(w * ((params[f"k{i:02d}"] - o) / (s - 1)) ** 2
                   for i, (s, o, w) in enumerate(zip(self.sizes, self.opt, self.weights)))


class Rastrigin(Problem):
    """Rastrigin on a grid: a bowl covered in local minima three steps apart."""

    name = "rastrigin-12"
    optimum = 0.0

    def __init__(self, knobs: int = 12, size: int = 30, noise: float = 0.0, seed: int = 910002):
        r = random.Random(seed)
        self.size = size
        self.opt = [r.randrange(size) for _ in range(knobs)]
        self.name = f"rastrigin-{knobs}"
        super().__init__(noise)

    def _space(self):
        return {f"r{i:02d}": ss.range(0, self.size - 1) for i in range(len(self.opt))}

    def value(self, params):
        total = 0.0
        for i, o in enumerate(self.opt):
            d = (params[f"r{i:02d}"] - o) / 3.0
            total += d * d + 10.0 * (1.0 - math.cos(2.0 * math.pi * d))
        return total


class Trap(Problem):
    """Deceptive traps over on/off flags: each block pays most when all on, but leans towards all off."""

    name = "trap-5x8"

    def __init__(self, blocks: int = 8, width: int = 5, noise: float = 0.0, seed: int = 910003):
        self.blocks, self.width = blocks, width
        # the flags of a block are scattered over the space, as related compiler flags are
        order = list(range(blocks * width))
        random.Random(seed).shuffle(order)
        self.members = [order[b * width:(b + 1) * width] for b in range(blocks)]
        self.optimum = -float(blocks * width)
        self.name = f"trap-{width}x{blocks}"
        super().__init__(noise)

    def _space(self):
        return {f"-fflag{i:02d}": ss.literal(f"-fflag{i:02d}", knockout_prob=0.5)
                for i in range(self.blocks * self.width)}

    def value(self, params):
        total = 0
        for block in self.members:
            on = sum(f"-fflag{i:02d}" in params for i in block)
            total += self.width if on == self.width else self.width - 1 - on
        return -float(total)


class Pairs(Problem):
    """Categorical knobs whose effect depends on a neighbour's choice (a ring of random pair tables)."""

    name = "pairs-16"

    def __init__(self, knobs: int = 16, options: int = 5, noise: float = 0.0, seed: int = 910004):
        r = random.Random(seed)
        self.options = [f"opt{j}" for j in range(options)]
        self.knobs = knobs
        self.tables = [[[r.gauss(0.0, 1.0) for _ in range(options)] for _ in range(options)] for _ in range(knobs)]
        # a second, long-range partner per knob so that the interaction graph is not just a ring
        self.partner = [(i + knobs // 2 + 1) % knobs for i in range(knobs)]
        self.long = [[[0.5 * r.gauss(0.0, 1.0) for _ in range(options)] for _ in range(options)] for _ in range(knobs)]
        self.name = f"pairs-{knobs}"
        super().__init__(noise)

    def _space(self):
        return {f"c{i:02d}": ss.choice(self.options) for i in range(self.knobs)}

    def value(self, params):
        x = [int(params[f"c{i:02d}"][3:]) for i in range(self.knobs)]
        total = 0.0
        for i in range(self.knobs):
            total += self.tables[i][x[i]][x[(i + 1) % self.knobs]]
            total += self.long[i][x[i]][x[self.partner[i]]]
        return total


class CompilerMix(Problem):
    """A made-up kernel's run time over a realistic mix of knobs: ranges, log grids, enums, flags.

    Unrolling helps until register pressure spills (an interaction with the register cap), some
    flags help only at -O3, and one flag hurts."""

    name = "compiler-mix"

    def __init__(self, noise: float = 0.0, seed: int = 910005):
        r = random.Random(seed)
        self.flags = [f"-fopt{i}" for i in range(10)]
        self.flag_gain = [r.uniform(-0.04, 0.08) for _ in self.flags]
        self.flag_gain[3] = -0.15  # a flag that costs a lot
        self.o3_only = {1, 6}  # flags that only pay with opt_level O3
        self.sched_cost = {"list": 0.06, "trace": 0.02, "swing": 0.0, "none": 0.1}
        super().__init__(noise)

    def _space(self):
        space = {
            "opt_level": ss.choice(["O1", "O2", "O3"]),
            "unroll": ss.range(1, 16),
            "maxrregcount": ss.range(32, 255, 8),
            "inline_threshold": ss.log_sampling(16, 4096, 9),
            "sched": ss.choice(["list", "trace", "swing", "none"]),
            "vector_width": ss.choice([1, 2, 4, 8, 16]),
            "block": ss.range(64, 1024, 64),
        }
        for f in self.flags:
            space[f] = ss.literal(f, knockout_prob=0.5)
        return space

    def value(self, p):
        t = {"O1": 1.3, "O2": 1.1, "O3": 1.0}[p["opt_level"]]
        regs_needed = 40 + 12 * p["unroll"] * (p["vector_width"] ** 0.5)
        spill = max(0.0, regs_needed - p["maxrregcount"]) / 64.0
        occupancy = min(1.0, 2048.0 / (p["maxrregcount"] * 8.0)) * min(1.0, p["block"] / 256.0)
        t *= 1.0 + 0.6 / p["unroll"] + 0.5 * math.log1p(spill) + 0.4 * (1.0 - occupancy)
        t *= 1.0 + 0.05 * (math.log2(p["inline_threshold"]) - 9.0) ** 2 / 9.0
        t *= 1.0 + self.sched_cost[p["sched"]] + 0.03 * abs(math.log2(p["vector_width"]) - 3)
        t *= 1.0 + 0.02 * abs(p["block"] - 448) / 64.0
        for i, f in enumerate(self.flags):
            if f in p and (i not in self.o3_only or p["opt_level"] == "O3"):
                t *= 1.0 - self.flag_gain[i]
        return t


class Needle(Problem):
    """One right answer in a small space, every other candidate scores the same: only search order matters."""

    name = "needle"
    optimum = 0.0

    def __init__(self, sizes: Sequence[int] = (4, 3, 5), seed: int = 910006):
        r = random.Random(seed)
        self.sizes = list(sizes)
        self.needle = [r.randrange(s) for s in self.sizes]
        super().__init__(0.0)

    def _space(self):
        return {f"n{i}": ss.range(0, s - 1) for i, s in enumerate(self.sizes)}

    def value(self, params):
        return 0.0 if [params[f"n{i}"] for i in range(len(self.sizes))] == self.needle else 1.0


# -- two objectives ---------------------------------------------------------------------------
class TwoObjective(Problem):
    """Run time against code size: each knob's best setting differs between the two, and every
    flag trades one for the other, so the front is a curve of compromises."""

    name = "speed-vs-size"
    num_objectives = 2

    def __init__(self, knobs: int = 10, size: int = 16, flags: int = 6, noise: float = 0.0, seed: int = 910007):
        r = random.Random(seed)
        self.size = size
        self.a = [r.randrange(size) for _ in range(knobs)]
        self.b = [r.randrange(size) for _ in range(knobs)]
        self.flags = [(r.uniform(0.05, 0.3), r.uniform(0.05, 0.3)) for _ in range(flags)]
        m = size - 1
        worst = [sum(max(x, m - x) ** 2 for x in pts) / m ** 2 for pts in (self.a, self.b)]
        self.reference = (worst[0] + 0.1, worst[1] + sum(c for _, c in self.flags) + 0.1)
        super().__init__(noise)

    def _space(self):
        space = {f"k{i}": ss.range(0, self.size - 1) for i in range(len(self.a))}
        for j in range(len(self.flags)):
            space[f"-fopt{j}"] = ss.literal(f"-fopt{j}", knockout_prob=0.5)
        return space

    def value(self, params):
        m = self.size - 1
        x = [params[f"k{i}"] for i in range(len(self.a))]
        f1 = sum((xi - ai) ** 2 for xi, ai in zip(x, self.a)) / m ** 2
        f2 = sum((xi - bi) ** 2 for xi, bi in zip(x, self.b)) / m ** 2
        for j, (gain, cost) in enumerate(self.flags):
            if f"-fopt{j}" in params:
                f1 -= gain
                f2 += cost
        return (f1, f2)


def hypervolume_2d(points: Sequence[Sequence[float]], reference: Sequence[float]) -> float:
    """The area dominated by ``points`` (minimised) and bounded by ``reference``."""
    rx, ry = reference
    # sweep in x order: each point that lowers the best y so far adds the rectangle it opens up
    area, best_y = 0.0, ry
    for x, y in sorted((x, y) for x, y in points if x < rx and y < ry):
        if y < best_y:
            area += (rx - x) * (best_y - y)
            best_y = y
    return area


def drive(engine, problem: Problem, generations: int, seed: int = 0, stop=None) -> list[tuple]:
    """Search's loop (ask a batch, evaluate, tell) for ``generations`` generations or until ask()
    returns nothing or ``stop(noiseless value)`` holds; returns (genotype, noiseless value) in ask order."""
    rng = random.Random(seed)
    space = problem.search_space
    seen = []
    for _ in range(generations):
        batch = engine.ask()
        if not batch:
            break
        told = []
        for g in batch:
            params = space.decode(g)
            seen.append((g, problem.value(params)))
            v = problem.observe(params, rng)
            told.append(v if isinstance(v, tuple) else (v,))
        engine.tell(batch, told)
        if stop is not None and any(stop(v) for _, v in seen[-len(batch):]):
            break
    return seen


# -- the suite and its targets ----------------------------------------------------------------
NOISE = 0.25  # noise sd in a noisy variant, as a fraction of the objective's spread over random candidates


def suite() -> list[Problem]:
    """The benchmark problems: five landscapes, each clean and noisy, plus a two-objective one."""
    base = [Separable, Rastrigin, Trap, Pairs, CompilerMix]
    return [cls() for cls in base] + [cls(noise=NOISE) for cls in base] + [TwoObjective()]


def problem(name: str) -> Problem:
    for p in suite() + [Needle()]:
        if p.name == name:
            return p
    raise KeyError(f"no synthetic problem called {name!r}; known: {', '.join(p.name for p in suite())}")


def quality(problem: Problem, values: Sequence[Any]) -> float:
    """The figure to minimise for a set of noiseless values: the best value, or minus the hypervolume."""
    if problem.num_objectives == 1:
        return min(values)
    return -hypervolume_2d(values, problem.reference)


def target(problem: Problem, samples: int = RANDOM_SAMPLES, seed: int = 2024) -> float:
    """The bar to reach: the quality of ``samples`` uniform random candidates (fixed seed)."""
    return quality(problem, [problem.value(p) for p in problem.random_params(samples, seed)])
