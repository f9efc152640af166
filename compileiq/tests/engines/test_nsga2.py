"""NSGA-II: the sorting helpers against brute force, and the engine against a known Pareto front."""

import math
import random

import pytest

from compileiq.engines.base import EngineSettings, dominates, make_engine
from compileiq.engines.nsga2 import NSGA2Engine, crowding_distance, non_dominated_sort
from compileiq.search_spaces import base as ss
from compileiq.space.space import SearchSpace
from compileiq.testing import problems as P


def settings(**kw):
    return EngineSettings(**{"num_objectives": 2, "pool_size": 32, "cull_size": 24, "seed": 0, **kw})


def brute_fronts(points):
    left = list(range(len(points)))
    fronts = []
    while left:
        front = [i for i in left if not any(dominates(points[j], points[i]) for j in left)]
        fronts.append(front)
        left = [i for i in left if i not in front]
    return fronts


def brute_crowding(points):
    n, k = len(points), len(points[0])
    dist = [0.0] * n
    for m in range(k):
        order = sorted(range(n), key=lambda i: (points[i][m], i))
        lo, hi = points[order[0]][m], points[order[-1]][m]
        dist[order[0]] = dist[order[-1]] = math.inf
        for pos in range(1, n - 1):
            if hi > lo and dist[order[pos]] != math.inf:
                dist[order[pos]] += (points[order[pos + 1]][m] - points[order[pos - 1]][m]) / (hi - lo)
    return dist


@pytest.mark.parametrize("k", [2, 3])
def test_non_dominated_sort_matches_brute_force(k):
    rng = random.Random(k)
    for _ in range(30):
        # small integers: plenty of ties and exact duplicates
        points = [tuple(rng.randint(0, 5) for _ in range(k)) for _ in range(rng.randint(1, 40))]
        assert non_dominated_sort(points) == brute_fronts(points)
    assert non_dominated_sort([]) == []


def test_crowding_distance_matches_brute_force():
    rng = random.Random(7)
    for _ in range(30):
        points = [(rng.random(), rng.random()) for _ in range(rng.randint(3, 20))]
        front = [points[i] for i in non_dominated_sort(points)[0]]
        assert crowding_distance(points) == pytest.approx(brute_crowding(points))
        assert crowding_distance(front) == pytest.approx(brute_crowding(front))
    assert crowding_distance([(1.0, 2.0), (2.0, 1.0)]) == [math.inf, math.inf]
    assert crowding_distance([]) == []


def test_auto_is_nsga2_for_several_objectives():
    assert isinstance(make_engine("auto", P.Needle().search_space, settings()), NSGA2Engine)


def test_recovers_a_known_pareto_front():
    p = P.TwoObjective(knobs=3, size=8, flags=1)
    space = p.search_space
    everything = space.enumerate(10_000)  # 1,024 candidates
    values = [p.value(space.decode(g)) for g in everything]
    true_front = {values[i] for i in non_dominated_sort(values)[0]}
    seen = P.drive(NSGA2Engine(space, settings(seed=1)), p, 12, 1)  # 384 evaluations
    found = {v for _, v in seen} & true_front
    assert len(found) >= 0.9 * len(true_front)
    assert P.hypervolume_2d([v for _, v in seen], p.reference) >= 0.99 * P.hypervolume_2d(true_front, p.reference)


def test_beats_random_search_on_hypervolume():
    p = P.TwoObjective()
    hv = {}
    for name in ("nsga2", "random"):
        seen = P.drive(make_engine(name, p.search_space, settings(seed=2)), p, 10, 2)
        hv[name] = P.hypervolume_2d([v for _, v in seen], p.reference)
    assert hv["nsga2"] > hv["random"]


def test_failures_rank_last():
    p = P.TwoObjective(knobs=4, size=8, flags=0)
    space = p.search_space
    eng = NSGA2Engine(space, settings(seed=3))
    for _ in range(6):
        batch = eng.ask()
        eng.tell(batch, [None if g[0] == 0 else p.value(space.decode(g)) for g in batch])
    assert all(obj is not None for obj, _, _ in eng.pop)
    assert sorted(eng.rank) == eng.rank  # ranked front by front
    # everything failed: the population keeps the failures only as a last resort, and asking goes on
    eng2 = NSGA2Engine(space, settings(seed=3))
    batch = eng2.ask()
    eng2.tell(batch, [None] * len(batch))
    assert len(eng2.ask()) == 32


def test_three_objectives_and_no_repeats_with_presence_genes():
    space = SearchSpace({"a": ss.range(0, 5), "b": ss.choice(["x", "y", "z"], knockout_prob=0.4),
                         "f": ss.literal("-f", knockout_prob=0.5), "one": ss.literal(1)})
    eng = NSGA2Engine(space, settings(num_objectives=3, pool_size=9, cull_size=2, seed=4))
    got = []
    for _ in range(12):
        batch = eng.ask()
        got += batch
        eng.tell(batch, [(g[0], -g[0] + g[1], float(g[3])) for g in batch])
    assert len(got) == len(set(got)) == space.size
    assert eng.ask() == []


def test_tell_checks_the_number_of_objectives():
    eng = NSGA2Engine(P.Needle().search_space, settings())
    batch = eng.ask(2)
    with pytest.raises(ValueError, match="2 float"):
        eng.tell(batch, [(1.0,), (1.0, 2.0)])
    with pytest.raises(ValueError, match="every entry must be a number"):
        eng.tell(batch[:1], [("fast", 1.0)])


def test_hypervolume_matches_counting_unit_cells():
    rng = random.Random(9)
    for _ in range(20):
        points = [(rng.randint(0, 9), rng.randint(0, 9)) for _ in range(rng.randint(1, 12))]
        cells = sum(1 for x in range(10) for y in range(10)
                    if any(px <= x and py <= y for px, py in points))
        assert P.hypervolume_2d(points, (10, 10)) == cells
