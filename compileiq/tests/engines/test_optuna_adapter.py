"""The Optuna adapter: TPE and NSGA-II behind ask/tell, never repeating a candidate."""

import subprocess
import sys
import textwrap

import pytest

from compileiq.engines.base import EngineSettings, make_engine
from compileiq.search_spaces import base as ss
from compileiq.space.space import SearchSpace
from compileiq.testing import problems as P

optuna = pytest.importorskip("optuna", reason="the Optuna adapter needs optuna (pip install optuna)")


def settings(**kw):
    return EngineSettings(**{"pool_size": 16, "cull_size": 12, "seed": 0, **kw})


@pytest.mark.parametrize("engine", ["optuna-tpe", "optuna-nsga2"])
def test_runs_and_never_repeats_on_a_space_it_keeps_re_proposing(engine):
    # 60 candidates: the samplers propose known ones constantly once the space fills up
    p = P.Needle(sizes=(4, 3, 5))
    eng = make_engine(engine, p.search_space, settings())
    assert eng.name == engine
    seen = P.drive(eng, p, 10, 0)
    genotypes = [g for g, _ in seen]
    assert len(genotypes) == len(set(genotypes)) == 60
    assert min(v for _, v in seen) == 0.0
    assert eng.ask() == []
    eng.close()


@pytest.mark.parametrize("engine,k", [("optuna-tpe", 1), ("optuna-tpe", 2), ("optuna-nsga2", 2)])
def test_handles_knockouts_failures_and_several_objectives(engine, k):
    space = SearchSpace({"a": ss.range(0, 63), "b": ss.choice(["x", "y", "z"], knockout_prob=0.5),
                         "f": ss.literal("-f", knockout_prob=0.5), "one": ss.literal("-O2")})
    eng = make_engine(engine, space, settings(num_objectives=k))
    got = []
    for gen in range(3):
        batch = eng.ask()
        assert len(batch) == 16
        got += batch
        scores = [None if g[0] == 3 else tuple(float(g[0] + j * g[1]) for j in range(k)) for g in batch]
        eng.tell(batch, scores)
    assert len(got) == len(set(got))
    assert all(space.canonical(g) == g for g in got)
    with pytest.raises(ValueError, match="never"):
        eng.tell([got[0]], [(1.0,) * k])


def test_learns_something():
    p = P.Separable(knobs=6)
    bar = P.target(p)
    seen = P.drive(make_engine("optuna-tpe", p.search_space, settings(pool_size=32, cull_size=24)), p, 8, 0)
    assert min(v for _, v in seen) <= bar


def test_missing_optuna_says_how_to_install_it():
    code = textwrap.dedent("""
        import sys
        sys.modules["optuna"] = None  # as if it were not installed
        from compileiq.engines.base import EngineSettings, make_engine
        from compileiq.testing.problems import Needle
        try:
            make_engine("optuna-tpe", Needle().search_space, EngineSettings())
        except ImportError as exc:
            print(exc)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "pip install optuna" in out.stdout, out.stderr
