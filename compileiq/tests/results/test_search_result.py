import json

import pandas as pd
import pytest

from compileiq.results import SearchResult, calculate_pareto_front, read_csv, write_csv


def frame(rows, k=1, norm=False):
    cols = ["metadata", "generation"] + [f"score_{i+1}" for i in range(k)] + ["params"]
    if norm:
        cols += [f"norm_score_{i+1}" for i in range(k)]
    return pd.DataFrame(rows, columns=cols)


def test_best_result_min_max_and_invalid_rows():
    df = frame([[{"pid": 1}, 0, 3.0, {"a": 1}], [{"pid": 1}, 0, "*", {"a": 2}], [{"pid": 1}, 1, 1.5, {"a": 3}]])
    assert SearchResult(df, "min").get_best_result()["params"] == {"a": 3}
    assert SearchResult(df, "max").get_best_result()["params"] == {"a": 1}
    with pytest.raises(ValueError, match="no valid score"):
        SearchResult(frame([[{}, 0, "*", {"a": 1}]]), "min").get_best_result()


def test_normalised_columns_rank_and_the_baseline_never_wins():
    df = frame([[{"baseline": True}, 0, 1.0, {}, 1.0], [{}, 0, 2.0, {"a": 1}, 2.0], [{}, 0, 1.5, {"a": 2}, 1.5]], norm=True)
    assert SearchResult(df, "min").get_best_result()["params"] == {"a": 2}


def test_pareto_front_matches_brute_force():
    pts = [(1, 5), (2, 2), (5, 1), (3, 3), (2, 4), (6, 6), ("*", 0)]
    df = frame([[{}, 0, a, b, {"i": i}] for i, (a, b) in enumerate(pts)], k=2)
    front = SearchResult(df).pareto_front()
    assert sorted(r["params"]["i"] for r in front) == [0, 1, 2]
    assert SearchResult(df).get_best_result("avg")["params"]["i"] == 1
    with pytest.raises(ValueError, match="num_objectives >= 2"):
        SearchResult(frame([[{}, 0, 1, {}]])).pareto_front()
    assert list(calculate_pareto_front([[1, 1], [2, 2], [1, 1]])) == [True, False, True]


def test_csv_round_trip_is_atomic_and_keeps_types(tmp_path):
    df = frame([[{"pid": 7}, 0, 1.25, {"x": [1, 2], "s": "a,b"}], [{"pid": 8}, 1, "*", "deadbeef"]])
    p = tmp_path / "r.csv"
    SearchResult(df).save(p)
    assert not [f for f in tmp_path.iterdir() if f.name != "r.csv"]  # no temporary file left behind
    back = read_csv(p)
    assert back.loc[0, "params"] == {"x": [1, 2], "s": "a,b"} and back.loc[0, "metadata"] == '{"pid": 7}'
    assert back.loc[1, "score_1"] == "*" and back.loc[1, "params"] == "deadbeef"
    assert list(back["generation"]) == [0, 1]
    assert SearchResult.from_csv(p).get_best_result()["score_1"] == 1.25


def test_clear_duplicates_and_bad_paths(tmp_path):
    df = frame([[{}, 0, 1.0, {"a": 1}], [{}, 1, 1.0, {"a": 1}], [{}, 1, 2.0, {"a": 1}]])
    assert len(SearchResult(df).clear_duplicates()) == 2
    with pytest.raises(FileNotFoundError, match="does not exist"):
        write_csv(df, tmp_path / "missing" / "r.csv")
    with pytest.raises(IsADirectoryError, match="is a folder"):
        write_csv(df, tmp_path)
    with pytest.raises(FileNotFoundError):
        SearchResult.from_csv(tmp_path / "nope.csv")
    (tmp_path / "other.csv").write_text("a,b\n1,2\n")
    with pytest.raises(ValueError, match="no score_1 column"):
        SearchResult.from_csv(tmp_path / "other.csv")


def test_older_score_column_name_is_accepted(tmp_path):
    p = tmp_path / "old.csv"
    p.write_text('metadata,generation,score,params\n{},0,2.5,"{""a"": 1}"\n')
    assert SearchResult.from_csv(p).get_best_result()["score_1"] == 2.5
    json.dumps(SearchResult.from_csv(p).get_best_result()["params"])
