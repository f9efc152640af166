import itertools

import numpy as np
import pytest

from compileiq.diagnostics import read_results
from compileiq.diagnostics.plot_data import front_points, generation_series


def test_generation_series(results_csv):
    path = results_csv([[0, 10.0], [0, 14.0], [0, "*"], [0, "*"], [1, 12.0], [1, 11.0], [2, 9.0], [2, 13.0]])
    s = generation_series(read_results(path))
    assert s["generation"].tolist() == [0, 1, 2]
    assert s["best"].tolist() == [10.0, 11.0, 9.0]
    assert s["best_so_far"].tolist() == [10.0, 10.0, 9.0]
    assert s["median"].tolist() == [12.0, 11.5, 11.0]
    assert s["invalid_pct"].tolist() == [50.0, 0.0, 0.0]
    assert generation_series(read_results(path), problem_type="max")["best_so_far"].tolist() == [14.0, 14.0, 14.0]


def test_generation_series_needs_generations(tmp_path):
    p = tmp_path / "r.csv"
    p.write_text("score_1\n1\n2\n")
    with pytest.raises(ValueError, match="no generation column"):
        generation_series(read_results(p))


def brute_front(pts):
    return [not any(np.all(q <= p) and np.any(q < p) for q in pts) for p in pts]


@pytest.mark.parametrize("problem_type", ["min", "max"])
def test_front_points_match_brute_force(results_csv, problem_type):
    rng = np.random.default_rng(5)
    vals = rng.integers(0, 10, (40, 2)).astype(float)
    rows = [[0, a, b] for a, b in vals] + [[0, "*", 1.0]]
    fp = front_points(read_results(results_csv(rows, k=2, baseline=5.0)), problem_type)
    assert fp.points.shape == (40, 2) and fp.baseline == (5.0, 5.0)
    oriented = -fp.points if problem_type == "max" else fp.points
    assert fp.on_front.tolist() == brute_front(oriented)
    assert all(a <= b for a, b in itertools.pairwise(fp.front[:, 0]))


def test_front_needs_two_objectives(results_csv):
    with pytest.raises(ValueError, match="at least two score columns"):
        front_points(read_results(results_csv([[0, 1.0]])))
