"""NVIDIA 1.1's Score, validate_scores, ask / evaluate / tell, WorkerTypes and ManualWorker."""

import json
import math

import pytest

import compileiq.search_spaces.base as ss
from compileiq import Search, SearchConfiguration
from compileiq.errors import ConfigurationError, IdenticalScoresWarning
from compileiq.types import WorkerTypes
from compileiq.utils.validation import INVALID_SCORE, Score, validate_scores
from compileiq.worker import ManualWorker, MultiProcessWorker, SequentialWorker

SPACE = {"a": ss.range(0, 30), "b": ss.choice(choice_list=[1, 2, 3, 4]), "c": ss.literal("-x", knockout_prob=0.5)}


def objective(p):
    return (p["a"] - 17) ** 2 + p["b"] + (0 if "c" in p else 3)


def test_score_keywords_failed_norm_score_metadata():
    s = Score(score=3.5, param_id=7, num_objectives=1)  # params optional, as NVIDIA documents
    assert (s.score, s.param_id, s.params, s.failed, s.norm_score) == (3.5, 7, None, False, None)
    s.norm_score = INVALID_SCORE
    assert s.failed and not s.invalid  # NVIDIA: failed covers the normalised score too
    assert Score(score=(1, INVALID_SCORE), param_id=1, num_objectives=2).failed
    assert Score(score=float("nan"), param_id=1, num_objectives=1).score == INVALID_SCORE
    m = Score(score=1, param_id=1, num_objectives=1, metadata='{"gpu": 3}')
    assert m.metadata == '{"gpu": 3}' and m.metadata_dict() == {"gpu": 3}
    assert json.loads(m.model_dump()["metadata"]) == {"gpu": 3}


@pytest.mark.parametrize("value, k", [((1.0,), 1), ([1.0], 1), (True, 1), ("fast", 1), (1.0, 2), ((1, 2, 3), 2),
                                      ((1, "x"), 2), (None, 1)])
def test_validate_scores_and_score_raise_on_a_wrong_type_or_length(value, k):
    with pytest.raises(ValueError, match="not in expected format"):
        validate_scores(value, k)
    with pytest.raises(ValueError, match="not in expected format"):
        Score(score=value, param_id=0, num_objectives=k)


def test_validate_scores_accepts_what_nvidia_accepts():
    assert validate_scores(2, 1) == 2 and validate_scores(2.5, 1) == 2.5
    assert validate_scores(math.inf, 1) == INVALID_SCORE and validate_scores("*", 1) == INVALID_SCORE
    assert validate_scores("*", 3) == ("*", "*", "*")
    assert validate_scores([1, float("nan")], 2) == (1, "*")
    with pytest.raises(ValueError, match="num_objectives"):
        validate_scores(1.0, 0)


def test_worker_types_members_and_manual_worker():
    assert WorkerTypes.DEFAULT is WorkerTypes.NATIVE and str(WorkerTypes.MANUAL) == "manual"
    assert {"NATIVE", "ISOLATED", "RAY", "ASYNC", "MANUAL", "DEFAULT"} <= set(WorkerTypes.__members__)
    assert WorkerTypes.MANUAL.worker_type() is ManualWorker and WorkerTypes.DEFAULT.worker_type() is MultiProcessWorker
    assert WorkerTypes("manual") is WorkerTypes.MANUAL
    with pytest.raises(ConfigurationError, match="ask\\(\\) and tell\\(\\)"):
        Search(objective, SPACE, SearchConfiguration(generations=1), worker_type=WorkerTypes.MANUAL).start()


@pytest.mark.parametrize("worker", [None, WorkerTypes.MANUAL])
def test_documented_ask_tell_loop(worker):
    search = Search(objective, SPACE, SearchConfiguration(generations=4, pool_size=8, seed=3), worker_type=worker)
    for _ in range(4):
        candidates = search.ask()
        assert len(candidates) == 8 and search.pending_candidates == candidates
        scores = [Score(score=objective(c.params), param_id=c.param_id, num_objectives=1) for c in candidates]
        search.tell(scores[5:])            # any order, any subset
        search.tell(list(reversed(scores[:5])))
        assert search.pending_candidates == []
    res = search.result
    assert len(res) == 32 and res.get_best_result()["score_1"] <= 4
    assert search.best_result == res.get_best_result()


def test_tell_refuses_what_it_cannot_record():
    search = Search(objective, SPACE, SearchConfiguration(generations=2, pool_size=6, seed=1), worker_type="manual")
    c = search.ask(num_samples=3)
    assert len(c) == 3
    good = Score(score=1.0, param_id=c[0].param_id, num_objectives=1)
    with pytest.raises(ValueError, match="given twice"):
        search.tell([good, good])
    with pytest.raises(ValueError, match="never asked or were already told"):
        search.tell([Score(score=1.0, param_id=999, num_objectives=1)])
    with pytest.raises(ValueError, match="num_objectives=2 but this search has num_objectives=1"):
        search.tell([Score(score=(1, 2), param_id=c[0].param_id, num_objectives=2)])
    with pytest.raises(ValueError, match="not in expected format"):
        search.tell({c[0].param_id: (1.0,)})   # a 1-tuple for one objective: NVIDIA's rule
    assert len(search.pending_candidates) == 3  # nothing half-recorded
    search.tell([good])
    with pytest.raises(ValueError, match="already told"):
        search.tell([good])
    with pytest.raises(ValueError, match="num_samples"):
        search.ask(num_samples=0)


def test_ask_raises_when_the_space_is_used_up():
    from compileiq.backends import SearchSpaceExhaustedError
    search = Search(objective, {"a": ss.range(0, 4)}, SearchConfiguration(generations=3, pool_size=6), worker_type="manual")
    first = search.ask()
    assert len(first) == 5  # the whole space
    with pytest.raises(SearchSpaceExhaustedError, match="all handed out"):
        search.ask()


def test_evaluate_returns_scores_for_tell_and_teaches_the_engine_nothing():
    search = Search(objective, SPACE, SearchConfiguration(generations=2, pool_size=8, seed=5),
                    worker_type=SequentialWorker)
    cands = search.ask()
    scores = search.evaluate(cands)
    assert [s.param_id for s in scores] == [c.param_id for c in cands]
    assert [s.score for s in scores] == [objective(c.params) for c in cands]
    assert len(search.pending_candidates) == 8 and search.engine.generation == 0
    search.tell(scores)
    assert search.engine.generation == 1 and len(search.result) == 8


def test_evaluate_with_the_default_worker_keeps_its_processes_between_calls():
    search = Search(objective, SPACE, SearchConfiguration(generations=2, pool_size=6, seed=5))
    try:
        first = search.evaluate(search.ask(), num_workers=2)
        worker = search._eval_worker
        assert isinstance(worker, MultiProcessWorker)
        procs = {p.pid for p in worker._pool.procs}
        assert {s.metadata_dict()["pid"] for s in first} <= procs and len(procs) == 2
        search.tell(first)
        second = search.evaluate(search.ask(), num_workers=2)
        assert search._eval_worker is worker and {p.pid for p in worker._pool.procs} == procs  # no new processes
        assert {s.metadata_dict()["pid"] for s in second} <= procs
        search.tell(second)
    finally:
        search.close()
    assert len(search.result) == 12


def test_normalised_ask_hands_out_the_baseline_first():
    def obj(p):
        return 50.0 if p == {} else 10.0 + p["a"]
    search = Search(obj, {"a": ss.range(0, 40)}, SearchConfiguration(generations=2, pool_size=6, normalize=True, seed=2),
                    worker_type="manual")
    cands = search.ask()
    assert cands[0].param_id == "baseline" and cands[0].params == {} and len(cands) == 7
    scores = search.evaluate(cands)
    search.tell(scores[3:])  # candidates before the baseline: normalised once it arrives
    search.tell(scores[:3])
    df = search.result.df_results
    assert df["norm_score_1"].tolist() == [pytest.approx(s.score / 50.0) for s in scores[3:]] + [1.0] + \
        [pytest.approx(s.score / 50.0) for s in scores[1:3]]


def test_identical_scores_warn_right_after_the_first_generation():
    search = Search(lambda p: 7.0, SPACE, SearchConfiguration(generations=3, pool_size=8, seed=1), worker_type="manual")
    cands = search.ask()
    with pytest.warns(IdenticalScoresWarning, match="all 8 valid candidates of the first generation scored 7.0.*canary"):
        search.tell([Score(score=7.0, param_id=c.param_id, num_objectives=1) for c in cands])
    cands = search.ask()
    search.tell([Score(score=7.0, param_id=c.param_id, num_objectives=1) for c in cands])  # said once, not again
    with pytest.warns(IdenticalScoresWarning, match="first generation"):
        Search(lambda p: 1.0, SPACE, SearchConfiguration(generations=1, pool_size=6, seed=1),
               worker_type=SequentialWorker, disable_progress_bar=True).start()
