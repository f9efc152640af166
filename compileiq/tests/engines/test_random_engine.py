"""Random search: uniform over the priors, never a repeat, clean exhaustion, seed windows, tell checks."""

import importlib.util

import pytest

from compileiq.engines.base import EngineSettings, make_engine
from compileiq.engines.random_search import RandomEngine
from compileiq.search_spaces import base as ss
from compileiq.space.space import SearchSpace


def settings(**kw):
    return EngineSettings(**{"pool_size": 16, "cull_size": 12, "seed": 3, **kw})


def mixed_space():
    # a value gene, knockout presence genes, a one-value literal (size-1 gene) and a flag
    return SearchSpace({
        "unroll": ss.range(1, 4),
        "sched": ss.choice(["list", "trace", "swing"], knockout_prob=0.3),
        "const": ss.literal("-O3"),
        "fast": ss.literal("-ffast-math", knockout_prob=0.5),
    })


def test_never_repeats_and_hands_out_the_whole_space_then_stops():
    space = mixed_space()
    eng = make_engine("random", space, settings())
    assert isinstance(eng, RandomEngine)
    got = []
    sizes = []
    for _ in range(10):
        batch = eng.ask()
        sizes.append(len(batch))
        got += batch
        eng.tell(batch, [(0.0,)] * len(batch))
    assert len(got) == len(set(got)) == space.size == 32
    assert all(space.canonical(g) == g for g in got)
    assert sizes[:2] == [16, 16] and sizes[2:] == [0] * 8


def test_tiny_space_returns_fewer_then_nothing():
    space = SearchSpace({"a": ss.literal("-fa", knockout_prob=0.5), "b": ss.literal("-fb", knockout_prob=0.5)})
    assert space.size == 3  # both absent is the baseline, never offered
    eng = RandomEngine(space, settings())
    first = eng.ask(2)
    second = eng.ask(2)
    assert len(first) == 2 and len(second) == 1
    assert eng.ask(2) == []
    assert {space.decode(g).keys().__len__() for g in first + second} == {1, 2}


ALL_ENGINES = ["random", "ga", "nsga2"]
if importlib.util.find_spec("optuna") is not None:
    ALL_ENGINES += ["optuna-tpe", "optuna-nsga2"]


@pytest.mark.parametrize("engine", ALL_ENGINES)
def test_seed_window_biases_generation_zero_only(engine):
    space = SearchSpace({"x": ss.range(0, 99, seed_low=10, seed_high=19), "y": ss.range(0, 99)})
    k = 2 if "nsga2" in engine else 1
    eng = make_engine(engine, space, settings(num_objectives=k, pool_size=200, cull_size=150,
                                              init_with_true_random_threshold=0.75))
    gen0 = eng.ask()
    inside = sum(10 <= g[0] <= 19 for g in gen0)
    # 150 seeded, plus about a tenth of the 50 uniform ones
    assert 150 <= inside <= 165
    eng.tell(gen0, [(abs(g[0] - 50) + g[1],) * k for g in gen0])
    gen1 = eng.ask()
    assert len(gen1) == 200 and sum(10 <= g[0] <= 19 for g in gen1) < 150
    eng.close()


def test_tell_rejects_what_was_never_asked_and_bad_scores():
    eng = RandomEngine(mixed_space(), settings())
    batch = eng.ask(4)
    with pytest.raises(ValueError, match="never"):
        eng.tell([(9, 9, 9, 9, 9, 9)], [(1.0,)])
    with pytest.raises(ValueError, match="1 float"):
        eng.tell(batch[:1], [(1.0, 2.0)])
    with pytest.raises(ValueError, match="one per genotype"):
        eng.tell(batch[:2], [(1.0,)])
    eng.tell(batch[:2], [(1.0,), None])  # a subset, with a failure
    with pytest.raises(ValueError, match="told already"):
        eng.tell(batch[:1], [(1.0,)])
    eng.tell(batch[2:], [2.0, float("nan")])  # a bare number is fine for one objective; NaN = failed


def test_negative_ask_is_an_error():
    with pytest.raises(ValueError, match="n="):
        RandomEngine(mixed_space(), settings()).ask(-1)
