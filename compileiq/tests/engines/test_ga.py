"""The genetic algorithm on synthetic problems with known optima, plus its operators and edge cases."""

import random

import pytest

from compileiq.engines.base import EngineSettings, make_engine
from compileiq.engines.ga import GeneticEngine, Variation
from compileiq.search_spaces import base as ss
from compileiq.space.space import SearchSpace
from compileiq.testing import problems as P


def settings(**kw):
    return EngineSettings(**{"pool_size": 32, "cull_size": 24, "seed": 0, **kw})


def test_auto_is_the_ga_for_one_objective():
    assert isinstance(make_engine("auto", P.Needle().search_space, settings()), GeneticEngine)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_finds_the_optimum_of_a_separable_problem(seed):
    p = P.Separable(knobs=8)  # 8 ordinal knobs of 4 to 32 values: 2.6e8 candidates
    seen = P.drive(GeneticEngine(p.search_space, settings(seed=seed)), p, 40, seed, stop=lambda v: v <= 1e-12)
    assert min(v for _, v in seen) == pytest.approx(0.0)
    assert len(seen) <= 1000


def test_finds_the_optimum_of_a_deceptive_trap():
    # 3 traps of 4 flags: every block leans towards all-off, the optimum is all-on (4,095 candidates)
    p = P.Trap(blocks=3, width=4)
    needed = []
    for seed in range(5):
        seen = P.drive(GeneticEngine(p.search_space, settings(seed=seed)), p, 200, seed, stop=lambda v: v <= p.optimum)
        assert min(v for _, v in seen) == p.optimum
        needed.append(len(seen))
    assert sorted(needed)[2] < 2048  # random search needs half the space on average


def test_finds_the_needle_by_exhausting_a_small_space_without_repeats():
    p = P.Needle(sizes=(4, 3, 5))
    eng = GeneticEngine(p.search_space, settings(pool_size=8, cull_size=6))
    seen = P.drive(eng, p, 100, 0)
    genotypes = [g for g, _ in seen]
    assert len(genotypes) == len(set(genotypes)) == 60
    assert min(v for _, v in seen) == 0.0
    assert eng.ask() == []


def test_finds_the_optimum_through_timing_noise():
    # the engine is told noisy values; the optimum is judged on the noiseless one
    p = P.Separable(knobs=8, noise=0.02)
    seen = P.drive(GeneticEngine(p.search_space, settings(seed=2)), p, 40, 2, stop=lambda v: v <= 1e-12)
    assert min(v for _, v in seen) == pytest.approx(0.0)


def test_makes_progress_through_heavy_noise():
    p = P.Separable(knobs=8, noise=0.25)
    bar = P.target(P.Separable(knobs=8))  # best of 2,000 random candidates, without noise
    seen = P.drive(GeneticEngine(p.search_space, settings(seed=4)), p, 25, 4)
    assert min(v for _, v in seen) < bar / 2


def test_beats_random_search_on_interacting_knobs():
    p = P.Pairs()
    bar = P.target(p)
    needed = {}
    for name in ("ga", "random"):
        seen = P.drive(make_engine(name, p.search_space, settings(seed=5)), p, 30, 5, stop=lambda v: v <= bar)
        needed[name] = len(seen) if min(v for _, v in seen) <= bar else 10**9
    assert needed["ga"] < needed["random"]


def test_failures_rank_last_and_never_stall_the_search():
    p = P.Separable(knobs=6)
    space = p.search_space
    eng = GeneticEngine(space, settings(seed=2))
    # generation 0 fails entirely: the next generation is random again, not bred from failures
    batch = eng.ask()
    eng.tell(batch, [None] * len(batch))
    assert not eng.parents
    best = float("inf")
    for _ in range(15):
        batch = eng.ask()
        assert len(batch) == 32
        scores = []
        for g in batch:
            v = p.value(space.decode(g))
            # candidates with an odd first knob "fail to compile"
            scores.append(None if g[0] % 2 else (v,))
            if not g[0] % 2:
                best = min(best, v)
        eng.tell(batch, scores)
        assert all(g[0] % 2 == 0 for _, _, g in eng.parents)
    assert best < 0.2


def test_two_objectives_are_scalarised_with_the_weights():
    p = P.TwoObjective(knobs=4, size=8, flags=0)
    eng = GeneticEngine(p.search_space, settings(num_objectives=2, objective_weights=(1.0, 0.0), seed=3))
    seen = P.drive(eng, p, 20, 3)
    assert min(v[0] for _, v in seen) == pytest.approx(0.0)  # the first objective's optimum


def test_variation_stays_in_range_and_respects_knockouts():
    space = SearchSpace({
        "r": ss.range(0, 9, knockout_prob=0.5),
        "c": ss.choice(["a", "b", "c"]),
        "one": ss.literal("-x"),  # a size-1 gene: never mutated
        "f": ss.literal("-f", knockout_prob=0.2),
        "lg": ss.log_sampling(1, 1024, 11),
    })
    rng = random.Random(0)
    var = Variation(space, rng)
    pop = [list(space.canonical(space.random_genotype(rng)) or space.random_genotype(rng)) for _ in range(50)]
    one = [g.name for g in space.genes].index("one")
    unchanged = 0
    for _ in range(2000):
        a, b = rng.choice(pop), rng.choice(pop)
        child = var.mutate(var.crossover(a, b), rng.random())
        assert all(0 <= v < gene.size for v, gene in zip(child, space.genes))
        for vi, pi in var.units:
            if pi is not None and child[pi] == 0:
                assert child[vi] == 0  # an absent knob keeps the neutral placeholder
        assert child[one] == 0  # the one-value literal
        unchanged += space.canonical(var.mutate(list(a), 0.0)) == space.canonical(a)
    assert unchanged <= 2  # a mutated copy (at least one change forced) almost never equals its parent


def test_hands_out_every_candidate_of_a_small_space_with_presence_genes():
    space = SearchSpace({"r": ss.range(0, 2, knockout_prob=0.5), "f": ss.literal("-f", knockout_prob=0.5),
                         "one": ss.literal("-O2")})
    eng = GeneticEngine(space, settings(pool_size=4, cull_size=2))
    got = []
    for _ in range(10):
        batch = eng.ask()
        got += batch
        eng.tell(batch, [(float(sum(g)),) for g in batch])
    assert len(got) == len(set(got)) == space.size
