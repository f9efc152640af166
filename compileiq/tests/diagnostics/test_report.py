import json

import numpy as np
import pytest

from compileiq.diagnostics import diagnose, selftest


def gen_rows(means, per=10, cv=0.03, seed=0, invalid=None):
    rng = np.random.default_rng(seed)
    rows = []
    for g, m in enumerate(means):
        bad = 0 if invalid is None else invalid[g]
        rows += [[g, "*" if j < bad else m * (1 + cv * rng.standard_normal())] for j in range(per)]
    return rows


@pytest.mark.parametrize("case", range(10))
def test_self_test_cases_each_classified(case, tmp_path):
    from compileiq.results.csv_io import write_csv

    name, df, expected = selftest.cases(np.random.default_rng(7))[case]
    assert set(diagnose(write_csv(df, tmp_path / "r.csv")).codes) == expected, name


def test_table_excludes_the_baseline_and_counts_invalid(results_csv):
    path = results_csv([[0, 10.0], [0, "*"], [0, 2e10], [0, 14.0], [1, 8.0], [1, 9.0]], baseline=1.0)
    rep = diagnose(path)
    t = rep.objectives[0].table
    assert rep.n_baseline == 1 and rep.n_rows == 6
    assert t["count"].tolist() == [4, 2] and t["invalid"].tolist() == [2, 0]
    assert t["best"].tolist() == [10.0, 8.0] and t["mean"].tolist() == [12.0, 8.5]
    assert t["invalid_pct"].tolist() == [50.0, 0.0]
    assert t["cv_pct"].iloc[0] == pytest.approx(100 * np.std([10, 14], ddof=1) / 12)


def test_invalid_rate_rule_threshold(results_csv):
    # 10 rows per generation; first third 0%, last third exactly 10 points higher: not flagged
    assert "INCREASING_INVALID_RATE" not in diagnose(results_csv(gen_rows([100, 90, 80], invalid=[0, 0, 1]))).codes
    assert "INCREASING_INVALID_RATE" in diagnose(results_csv(gen_rows([100, 90, 80], invalid=[0, 0, 2]))).codes
    # two generations are too few to call it a trend
    assert "INCREASING_INVALID_RATE" not in diagnose(results_csv(gen_rows([100, 90], invalid=[0, 9]))).codes


def test_stall_rule_window_and_threshold(results_csv):
    # 4 generations: the window is 2; best 100 -> 99.5 over it is a 0.5% gain
    rows = [[0, 120.0], [0, 130.0], [1, 100.0], [1, 110.0], [2, 99.8], [2, 105.0], [3, 99.5], [3, 104.0]]
    rep = diagnose(results_csv(rows))
    assert rep.codes == ["STALLED_CONVERGENCE"] and "0.50%" in rep.flags[0].details[0]
    rows[-2][1] = 98.9  # a 1.1% gain: moving
    assert diagnose(results_csv(rows)).codes == ["HEALTHY"]
    assert diagnose(results_csv(rows[:6])).codes == ["HEALTHY"]  # 3 generations: too early to say


def test_problem_type_max_reverses_best_and_stall(results_csv):
    path = results_csv(gen_rows([10, 20, 30, 40, 50]))
    assert diagnose(path, "max").codes == ["HEALTHY"]
    assert diagnose(path, "min").codes == ["STALLED_CONVERGENCE"]
    assert diagnose(path, "max").objectives[0].table["best"].iloc[-1] > 50


def test_high_variance_needs_repeated_measurements_of_one_configuration(results_csv):
    # a deterministic objective over a wide space: a 30% CV between candidates is diversity, not noise
    rep = diagnose(results_csv(gen_rows([100, 50, 25, 12], cv=0.30)))
    assert rep.codes == ["HEALTHY"] and "no configuration was measured more than once" in rep.render()
    assert "no configuration was measured more than once" in rep.notes[0]
    # each generation re-measures one configuration: 10% CV is below the threshold, 30% above
    one_config = lambda n: {"x": n // 10}  # noqa: E731
    assert diagnose(results_csv(gen_rows([100, 80, 60, 40], cv=0.10), params=one_config)).codes == ["HEALTHY"]
    rep = diagnose(results_csv(gen_rows([100, 80, 60, 40], cv=0.30), params=one_config))
    flag = next(f for f in rep.flags if f.code == "HIGH_VARIANCE")
    assert any("lock" in a for a in flag.advice) and not rep.notes
    assert "4 configuration(s) measured more than once" in flag.details[0]


def test_high_variance_from_a_baseline_measured_several_times(tmp_path):
    import pandas as pd
    from compileiq.results.csv_io import write_csv
    rows = [{"metadata": {"baseline": True}, "generation": g, "score_1": b, "params": {}}
            for g, b in enumerate((100.0, 60.0, 140.0))]
    rows += [{"metadata": {"param_id": n}, "generation": n % 3, "score_1": 50.0 + n, "params": {"x": n}} for n in range(9)]
    rep = diagnose(write_csv(pd.DataFrame(rows), tmp_path / "r.csv"))
    assert "HIGH_VARIANCE" in rep.codes and "the baseline" in rep.flags[-1].details[0]


def test_compiler_changed_mid_run_is_reported(tmp_path):
    import pandas as pd
    from compileiq.results.csv_io import write_csv
    old, new = "13.0.88 /opt/a/ptxas sha256:1111111111111111", "13.0.88 /opt/a/ptxas sha256:2222222222222222"
    rows = [{"metadata": {"param_id": n, "compilers": {"ptxas": old if n < 6 else new}}, "generation": n // 4,
             "score_1": 100.0 - n, "params": {"x": n}} for n in range(10)]
    rep = diagnose(write_csv(pd.DataFrame(rows), tmp_path / "r.csv"))
    assert rep.codes[0] == "COMPILER_CHANGED" and "6 row(s) with " + old in rep.flags[0].details[0]
    assert "4 row(s) with " + new in rep.flags[0].details[0] and "not comparable" in " ".join(rep.flags[0].advice)


def test_identical_needs_five_valid_rows(results_csv):
    assert diagnose(results_csv([[0, 5.0]] * 4)).codes == ["HEALTHY"]
    rep = diagnose(results_csv([[0, 5.0]] * 3 + [[1, 5.0]] * 2 + [[1, "*"]]))
    assert rep.codes == ["IDENTICAL_SCORES"]
    advice = " ".join(rep.flags[0].advice)
    for needle in ("canary", "TRITON_ALWAYS_COMPILE=1", "TRITON_CACHE_DIR", "HELION_SKIP_CACHE=1",
                   "flashinfer_cubin", "flashinfer_jit_cache", "build folder"):
        assert needle in advice


def test_all_invalid_advice(results_csv):
    rep = diagnose(results_csv([[0, "*"], [1, "*"], [2, 1e12]]))
    assert rep.codes == ["ALL_INVALID"] and rep.pathologies == 1
    advice = " ".join(rep.flags[0].advice)
    assert "sample(1)" in advice and "num_objectives" in advice and "task_timeout" in advice


def test_normalised_column_is_used_when_present(results_csv):
    path = results_csv([[0, 10.0], [0, 11.0]], norm=[0.5, 0.6])
    o = diagnose(path).objectives[0]
    assert (o.name, o.column) == ("score_1", "norm_score_1") and o.table["best"].iloc[0] == 0.5


def test_several_objectives_are_reported_each(results_csv):
    rows = [[g, 100 * 0.9 ** g, 7.0] for g in range(5) for _ in range(3)]
    rep = diagnose(results_csv(rows, k=2))
    assert [o.name for o in rep.objectives] == ["score_1", "score_2"]
    assert rep.codes == ["IDENTICAL_SCORES"] and rep.flags[0].objectives == ["score_2"]


def test_score_alias_is_read_as_score_1(tmp_path):
    p = tmp_path / "old.csv"
    p.write_text("generation,score\n" + "".join(f"{g},{100 - 10 * g + j}\n" for g in range(3) for j in range(3)))
    rep = diagnose(p)
    assert rep.codes == ["HEALTHY"] and rep.objectives[0].name == "score_1"


def test_json_report_round_trips(results_csv):
    rep = diagnose(results_csv([[0, "*"], [0, 3.0], [1, 2.0]]))
    data = json.loads(rep.to_json())
    assert data["codes"] == ["HEALTHY"] and data["objectives"][0]["generations"][0]["invalid"] == 1
    assert data["objectives"][0]["generations"][1]["std"] is None  # NaN becomes null, valid JSON


def test_failure_kinds_from_metadata_explain_invalid_rows(tmp_path):
    import pandas as pd

    from compileiq.results.csv_io import write_csv

    rows = [{"metadata": {"failure": "timeout" if g else "exception"} if j < g * 3 else {}, "generation": g,
             "score_1": "*" if j < g * 3 else 100 - 10 * g + j, "params": {"x": j}} for g in range(3) for j in range(6)]
    rep = diagnose(write_csv(pd.DataFrame(rows), tmp_path / "r.csv"))
    assert rep.codes == ["INCREASING_INVALID_RATE"]
    assert "failures by kind (from metadata): timeout 9" in rep.flags[0].details[0]
