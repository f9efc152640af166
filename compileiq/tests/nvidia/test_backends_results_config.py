"""compileiq.backends (EngineConfig, NVIDIA engine names), SearchResult additions, pydantic configuration."""

import json
import warnings

import pandas as pd
import pydantic
import pytest

import compileiq.search_spaces.base as ss
from compileiq import Search, SearchConfiguration
from compileiq.backends import EngineConfig, PendingCandidatePolicy, register_backend
from compileiq.engines.random_search import RandomEngine
from compileiq.results import SearchResult
from compileiq.types import InternalSearchConfiguration, MultiScoreComparison, ProblemType
from compileiq.utils.validation import Score
from compileiq.worker import SequentialWorker

SPACE = {"x": ss.range(0, 20), "y": ss.choice([1, 2, 3])}


def obj(p):
    return (p["x"] - 7) ** 2 + p["y"]


# -- engines -----------------------------------------------------------------------------------------------
def test_amber_and_its_options_map_onto_ours():
    cfg = SearchConfiguration(generations=2, pool_size=16, num_objectives=2)
    engine = EngineConfig(name="amber", options={"seed": 4, "mutation_probability": 0.4, "survivor_count": 10,
                                                 "reference_direction_weights": (0.25, 0.75),
                                                 "seeded_range_probability": 0.5})
    s = Search(lambda p: (1.0, 2.0), SPACE, cfg, engine=engine, worker_type="manual")
    c = s.search_config
    assert (c.seed, c.mutate_rate, c.cull_size, c.objective_weights, c.init_with_true_random_threshold) == \
        (4, 0.4, 6, [0.25, 0.75], 0.5)
    assert s.engine.name == "nsga2" and s.engine_options["seed"] == 4
    assert Search(obj, SPACE, SearchConfiguration(generations=1), engine="amber").engine.name == "ga"
    assert Search(obj, SPACE, SearchConfiguration(generations=1), engine={"name": "amber"}).engine.name == "ga"


def test_an_option_we_cannot_honour_is_named_never_dropped():
    with pytest.warns(UserWarning, match="max_refill_batches_per_generation=50 has no effect here: .*never stall"):
        Search(obj, SPACE, SearchConfiguration(generations=1),
               engine=EngineConfig(name="amber", options={"max_refill_batches_per_generation": 50}))
    with pytest.warns(UserWarning, match="option popsize=3 is not known.*known options: .*mutation_probability"):
        Search(obj, SPACE, SearchConfiguration(generations=1), engine=EngineConfig(options={"popsize": 3}))
    with pytest.raises(pydantic.ValidationError):
        EngineConfig(name="amber", option={"seed": 1})
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # None is amber's "derive it": nothing to say
        Search(obj, SPACE, SearchConfiguration(generations=1), engine=EngineConfig(options={"survivor_count": None}))


def test_register_backend_and_pending_policy_names():
    register_backend("uniform", RandomEngine)
    s = Search(obj, SPACE, SearchConfiguration(generations=2, pool_size=6, seed=1), engine=EngineConfig(name="uniform"),
               worker_type=SequentialWorker, disable_progress_bar=True)
    assert isinstance(s.engine, RandomEngine) and len(s.start()) == 12
    assert [p.value for p in PendingCandidatePolicy] == ["resubmit", "discard"]
    with pytest.raises(Exception, match="not an engine"):
        Search(obj, SPACE, SearchConfiguration(generations=1), engine="pymoo")


# -- results ---------------------------------------------------------------------------------------------
def test_from_dataframe_on_the_csv_as_pandas_reads_it(tmp_path):
    csv = tmp_path / "r.csv"
    Search(obj, SPACE, SearchConfiguration(generations=2, pool_size=6, normalize=False, seed=2),
           worker_type=SequentialWorker, dump_results=csv, disable_progress_bar=True).start()
    raw = pd.read_csv(csv)  # what NVIDIA's users do
    r = SearchResult.from_dataframe(df=raw, problem_type="min")
    assert isinstance(r.df_results["params"][0], dict) and isinstance(r.df_results["metadata"][0], str)
    meta = json.loads(r.df_results["metadata"][0])
    assert {"pid", "param_id", "seed", "space", "problem_type"} <= set(meta)  # our provenance, inside NVIDIA's column
    assert (r.num_scores, r.score_columns, r.norm_score_columns, r.is_normalized) == (1, ["score_1"], [], False)
    assert r.get_best_result()["score_1"] == min(raw["score_1"])
    assert SearchResult.from_dataframe(df=raw, problem_type=ProblemType.MAX).get_best_result()["score_1"] == max(raw["score_1"])
    with pytest.raises(ValueError, match="no score column"):
        SearchResult.from_dataframe(df=raw.drop(columns=["score_1"]), problem_type="min")


def test_search_result_df_keyword_add_result_and_multiscore_scopes():
    r = SearchResult(df=pd.DataFrame(columns=["metadata", "generation", "score_1", "score_2", "params"]),
                     problem_type="min")
    for i, (a, b) in enumerate([(1.0, 9.5), (5.0, 5.1), (9.0, 1.5), (6.0, 6.0), (4.0, 12.0)]):
        r.add_result(Score(score=(a, b), param_id=i, params={"i": i}, num_objectives=2, metadata={"n": i}), 0)
    assert r.num_scores == 2 and len(r) == 5 and json.loads(r[0]["metadata"]) == {"n": 0}
    front = r.get_best_result()  # default: the Pareto front
    assert sorted(row["params"]["i"] for row in front) == [0, 1, 2]
    assert r.get_best_result(multiscore_scope=MultiScoreComparison.PARETO) == front
    assert r.get_best_result(multiscore_scope=MultiScoreComparison.AVERAGE)["params"] == {"i": 1}  # mean 5.05
    assert r.get_best_result(multiscore_scope="stddev")["params"] == {"i": 3}  # 6 and 6: no spread
    with pytest.raises(ValueError, match="multiscore_scope='best'"):
        r.get_best_result(multiscore_scope="best")
    with pytest.raises(ValueError, match="num_objectives=1, the results 2"):
        r.add_result(Score(score=1.0, param_id=9, num_objectives=1), 1)
    n = SearchResult.empty(1, "max", normalized=True)
    n.add_result(Score(score=2.0, param_id=0, params={}, num_objectives=1, norm_score=1.0), 0, normalize=True)
    assert n.is_normalized and n.norm_score_columns == ["norm_score_1"] and n.get_best_result()["norm_score_1"] == 1.0


# -- configuration -----------------------------------------------------------------------------------------
def test_search_configuration_is_a_pydantic_model():
    c = SearchConfiguration(generations=3, num_objectives=2, objective_weights=[0.5, 0.5])
    assert isinstance(c, pydantic.BaseModel) and c.objective_weights == [0.5, 0.5]
    d = c.model_dump()
    assert d["pool_size"] == 32 and SearchConfiguration.model_validate(d).model_dump() == d
    assert "generations" in SearchConfiguration.model_json_schema()["properties"]
    assert c.problem_type == ProblemType.MIN
    with pytest.raises(pydantic.ValidationError, match="objective_weights.*sum to 1"):
        SearchConfiguration(generations=3, num_objectives=2, objective_weights=[0.5, 0.6])
    with pytest.raises(pydantic.ValidationError, match="Extra|unknown field"):
        SearchConfiguration(generations=3, popsize=5)


def test_legacy_config_round_trip(tmp_path):
    p = tmp_path / "main.config"
    p.write_text('(dna_config . "compileiq_configs/dna.config")\n\n; Baselining configuration\n(qualitative . #f)\n'
                 "(pool_size . 12)\n(cull_size . 6)\n(generations . 2)\n(mutate_rate . 0.33)\n"
                 "(num_objectives . 2)\n(objective_weights . ((0.25 0.75)))\n(seek_minimum . #f)\n")
    with pytest.warns(UserWarning, match="'dna_config' is not a SearchConfiguration field; it is ignored"):
        c = SearchConfiguration.from_legacy(p)
    assert (c.pool_size, c.cull_size, c.generations, c.mutate_rate, c.normalize, c.problem_type) == \
        (12, 6, 2, 0.33, True, "max")
    assert c.objective_weights == [0.25, 0.75]
    text = c.to_legacy(tmp_path / "out.config")
    assert "(seek_minimum . #f)" in text and "(qualitative . #f)" in text
    assert (tmp_path / "out.config").read_text() == text
    assert SearchConfiguration.from_legacy(tmp_path / "out.config").model_dump() == c.model_dump()
    internal = InternalSearchConfiguration.from_legacy(p)
    assert internal.dna_config == "compileiq_configs/dna.config" and internal.experience_mode == "solar"
    res = Search(lambda q: (1.0, 1.0) if q == {} else (q["x"] + 1, q["y"]), SPACE, str(tmp_path / "out.config"),
                 worker_type=SequentialWorker,
                 disable_progress_bar=True).start()
    assert res.num_scores == 2 and res.problem_type == "max" and res.is_normalized
