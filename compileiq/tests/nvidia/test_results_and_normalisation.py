"""SearchResult as 1.1 scripts use it (add_result, save and reload, errors), Pareto fronts of
minimisation and maximisation problems, and Worker.normalize_scores."""

import numpy as np
import pandas as pd
import pytest

from compileiq.errors import BaselineMissingError
from compileiq.results import SearchResult, calculate_pareto_front
from compileiq.types import ProblemType, Worker
from compileiq.utils.validation import INVALID_SCORE, Score


def two_objective_rows(problem_type="max"):
    r = SearchResult.empty(2, problem_type, normalized=True)
    rows = [((4.0, 2.0), (1.0, 1.0), "1234", {"baseline": True}),   # the baseline: a hex-looking string
            ((3, INVALID_SCORE), (0.75, INVALID_SCORE), {"a": [1, 2], "b": "x,y"}, {"pid": 7}),
            ((5.0, 1.0), (1.25, 0.5), "true", '{"pid": 8}'),       # metadata as JSON text (NVIDIA's type)
            ((2.0, 4.0), (0.5, 2.0), ["0a", {"x": 1}], {}),
            ((6.0, 0.5), (1.5, 0.25), "e5", {})]
    for i, (score, norm, params, meta) in enumerate(rows):
        r.add_result(Score(score=score, param_id=i, params=params, num_objectives=2, norm_score=norm, metadata=meta),
                     generation_num=i // 2, normalize=True)
    return r


def test_add_result_then_save_then_reload_keeps_every_attribute(tmp_path):
    r = two_objective_rows()
    assert (len(r), r.num_scores, r.problem_type, r.is_normalized) == (5, 2, "max", True)
    path = r.save(tmp_path / "results.csv")
    back = SearchResult.from_csv(path, problem_type=ProblemType.MAX)
    assert (len(back), back.num_scores, back.problem_type, back.is_normalized) == (5, 2, "max", True)
    assert list(back.df_results.columns) == list(r.df_results.columns) == [
        "metadata", "generation", "score_1", "score_2", "params", "norm_score_1", "norm_score_2"]
    assert (back.score_columns, back.norm_score_columns) == (r.score_columns, r.norm_score_columns)
    for col in r.df_results.columns:
        assert list(back.df_results[col]) == list(r.df_results[col]), col
    assert [type(p) for p in back.df_results["params"]] == [str, dict, str, list, str]  # "1234" stays a string
    assert back.get_best_result("avg") == r.get_best_result("avg")
    assert back.pareto_front() == r.pareto_front()
    again = SearchResult.from_csv(back.save(tmp_path / "again.csv"), "max")
    assert (tmp_path / "again.csv").read_text() == (tmp_path / "results.csv").read_text()
    assert again.df_results.equals(back.df_results)


def test_add_result_refuses_rows_that_do_not_fit():
    r = SearchResult.empty(2, "min", normalized=True)
    with pytest.raises(TypeError, match="add_result takes a compileiq.utils.validation.Score, not dict"):
        r.add_result({"score": (1.0, 2.0)}, 0)
    with pytest.raises(ValueError, match="the Score has num_objectives=1, the results 2"):
        r.add_result(Score(score=1.0, param_id=0, num_objectives=1), 0)
    with pytest.raises(ValueError, match="normalize=True\\): the Score has no norm_score"):
        r.add_result(Score(score=(1.0, 2.0), param_id=0, num_objectives=2), 0, normalize=True)
    with pytest.raises(ValueError, match="these results hold norm_score columns: .*normalize=True"):
        r.add_result(Score(score=(1.0, 2.0), param_id=0, num_objectives=2, norm_score=(1.0, 1.0)), 0)
    plain = SearchResult.empty(1, "min")
    with pytest.raises(ValueError, match="normalize=True\\), but these results have no norm_score columns"):
        plain.add_result(Score(score=1.0, param_id=0, num_objectives=1, norm_score=0.5), 0, normalize=True)
    for gen in ("1", 1.5, True, None):
        with pytest.raises(TypeError, match=f"generation_num={gen!r} must be an int"):
            plain.add_result(Score(score=1.0, param_id=0, num_objectives=1), gen)
    plain.add_result(Score(score=1.0, param_id=0, params={}, num_objectives=1), np.int64(3))
    assert len(r) == 0 and plain[0]["generation"] == 3


@pytest.mark.parametrize("k, scope", [(1, "pareto_front"), (2, "pareto_front"), (2, "avg"), (2, "stddev")])
def test_every_candidate_failed_is_an_error_naming_what_to_do(k, scope):
    r = SearchResult.empty(k, "min")
    r.add_result(Score(score=(1.0,) * k if k > 1 else 1.0, param_id="baseline", params={}, num_objectives=k,
                       metadata={"baseline": True}), 0)  # the baseline never counts as a candidate
    for i in range(3):
        r.add_result(Score(score=INVALID_SCORE, param_id=i, params={"i": i}, num_objectives=k), 0)
    with pytest.raises(ValueError, match="no valid score among 3 candidate row\\(s\\).*compileiq diagnose"):
        r.get_best_result(multiscore_scope=scope)
    if k > 1:
        assert r.pareto_front() == []  # as 1.1: an empty front, not an error


def test_pareto_front_of_a_maximisation_problem():
    pts = [(5.0, 1.0), (1.0, 5.0), (3.0, 3.0), (2.0, 2.0), (5.0, 0.5), (INVALID_SCORE, 9.0)]
    r = SearchResult.empty(2, "max")
    for i, p in enumerate(pts):
        r.add_result(Score(score=p, param_id=i, params={"i": i}, num_objectives=2), 0)
    assert sorted(row["params"]["i"] for row in r.pareto_front()) == [0, 1, 2]  # (2, 2) is beaten by (3, 3)
    assert r.get_best_result() == r.pareto_front()
    m = SearchResult.empty(2, "min")
    for i, p in enumerate(pts):
        m.add_result(Score(score=p, param_id=i, params={"i": i}, num_objectives=2), 0)
    assert sorted(row["params"]["i"] for row in m.pareto_front()) == [1, 3, 4]


def test_calculate_pareto_front_takes_the_problem_type():
    pts = np.array([[5.0, 1.0], [1.0, 5.0], [3.0, 3.0], [2.0, 2.0], [np.nan, 9.0]])
    lo, hi = [True, True, False, True, False], [True, True, True, False, False]
    assert list(calculate_pareto_front(pts)) == lo  # minimisation unless told otherwise
    assert list(calculate_pareto_front(pts, problem_type="max")) == hi
    assert list(calculate_pareto_front(pts, ProblemType.MAX)) == hi
    assert list(SearchResult.calculate_pareto_front(pts, problem_type="min")) == lo
    # called on a result, as 1.1 scripts do, it reads that result's problem_type
    assert list(SearchResult.empty(2, "max").calculate_pareto_front(pts)) == hi
    assert list(SearchResult.empty(2, "min").calculate_pareto_front(pts)) == lo
    assert list(SearchResult.empty(2, "max").calculate_pareto_front(pts, problem_type="min")) == lo
    with pytest.raises(ValueError, match="problem_type='best' must be 'min' or 'max'"):
        calculate_pareto_front(pts, problem_type="best")


@pytest.mark.parametrize("problem_type, sign", [("min", 1.0), ("max", -1.0)])
def test_points_equal_in_one_objective(problem_type, sign):
    # equal in one objective and worse in the other: dominated, off the front (1.1 keeps such a point)
    pts = sign * np.array([[1.0, 1.0], [1.0, 2.0], [2.0, 1.0]])
    assert list(calculate_pareto_front(pts, problem_type)) == [True, False, False]
    # equal in one objective and better in the other: neither dominates, both on the front
    pts = sign * np.array([[1.0, 2.0], [2.0, 1.0], [1.0, 3.0]])
    assert list(calculate_pareto_front(pts, problem_type)) == [True, True, False]
    # equal in every objective: neither is better anywhere, both stay
    pts = sign * np.array([[1.0, 2.0], [1.0, 2.0], [3.0, 3.0]])
    assert list(calculate_pareto_front(pts, problem_type)) == [True, True, False]


# -- normalisation ---------------------------------------------------------------------------------------------
def test_normalize_scores_single_and_multi_objective():
    assert Worker.normalize_scores(3.0, 2.0) == 1.5
    assert Worker.normalize_scores(3, 4) == 0.75
    assert Worker.normalize_scores((3.0, 8.0), (2.0, 4.0)) == (1.5, 2.0)
    assert Worker.normalize_scores([3.0, 8.0], [2.0, 4.0]) == [1.5, 2.0]  # NVIDIA's workers pass lists
    assert Worker.normalize_scores((3.0, 8.0), [2.0, 4.0]) == (1.5, 2.0)
    assert Worker.normalize_scores((INVALID_SCORE, 8.0), (2.0, 4.0)) == (INVALID_SCORE, 2.0)
    assert Worker.normalize_scores(INVALID_SCORE, 2.0) == INVALID_SCORE
    with pytest.raises(ValueError, match="3 score\\(s\\) but 2 baseline score\\(s\\)"):
        Worker.normalize_scores((1.0, 2.0, 3.0), (1.0, 2.0))


def test_a_zero_or_failed_baseline_gives_invalid_score_not_an_exception():
    assert Worker.normalize_scores(3.0, 0) == INVALID_SCORE
    assert Worker.normalize_scores(3.0, 0.0) == INVALID_SCORE
    assert Worker.normalize_scores((3.0, 8.0), (0.0, 4.0)) == (INVALID_SCORE, 2.0)  # per objective
    assert Worker.normalize_scores([3.0, 8.0], [2.0, 0]) == [1.5, INVALID_SCORE]
    assert Worker.normalize_scores(3.0, INVALID_SCORE) == INVALID_SCORE


def test_normalising_without_a_baseline_raises():
    with pytest.raises(BaselineMissingError, match="no baseline score.*BASELINE_CONFIG.*self.baseline_score"):
        Worker.normalize_scores(3.0, None)
    with pytest.raises(RuntimeError):  # NVIDIA's exception type, for scripts that catch it
        Worker.normalize_scores((3.0, 1.0), None)


def test_a_normalised_search_records_both_scores_per_objective():
    import compileiq.search_spaces.base as ss
    from compileiq import Search, SearchConfiguration
    from compileiq.worker import SequentialWorker

    def objective(p):
        return (10.0, 4.0) if p == {} else (10.0 + p["x"], 4.0 - p["x"] / 10)

    res = Search(objective, {"x": ss.range(0, 20)}, SearchConfiguration(generations=1, pool_size=6, num_objectives=2,
                                                                      normalize=True, seed=2),
                 worker_type=SequentialWorker, disable_progress_bar=True).start()
    df = res.df_results
    assert res.is_normalized and list(df["norm_score_1"])[0] == 1.0
    for a, b, na, nb in zip(df["score_1"], df["score_2"], df["norm_score_1"], df["norm_score_2"]):
        assert (na, nb) == pytest.approx((a / 10.0, b / 4.0))
    assert isinstance(pd.DataFrame(res.pareto_front()), pd.DataFrame)
