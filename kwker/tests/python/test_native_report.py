"""kwker/bench/native/report.py (the native benchmark's target table) on hand-made results.

The benchmark itself needs Debian's sort libraries and minutes, so `make test` does not run it;
what turns its JSON into PASS / MISS is tested here: ratios are medians of per-round ratios
where the rounds are recorded, ratios of medians otherwise.
"""
import importlib.util
import json
from pathlib import Path

import pytest

REPORT = Path(__file__).resolve().parents[2] / "bench" / "native" / "report.py"


@pytest.fixture(scope="module")
def report():
    spec = importlib.util.spec_from_file_location("native_report", REPORT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def rec(lib, threads, rounds, dtype="float32", inp="reversed", n=10**7):
    s = sorted(rounds)
    return {"dtype": dtype, "input": inp, "n": n, "threads": threads, "lib": lib,
            "ns_median": s[len(s) // 2], "ns_min": s[0], "ns_max": s[-1],
            "rounds": len(rounds), "ns": rounds}


def test_speed_pairs_rounds(report):
    # The host was slow in rounds 4-5 for both runs. Round by round the two-thread run wins
    # three of five (1.11x, 1.05x, 1.05x), while the medians of the columns, taken apart,
    # compare round 1's one-thread time with round 2's two-thread time and say 0.91x.
    one = report.Times(rec("kwker", 1, [1.0, 1.0, 1.0, 2.0, 2.0]))
    two = report.Times(rec("kwker", 2, [1.1, 1.1, 0.9, 1.9, 1.9]))
    assert one.median / two.median == pytest.approx(1 / 1.1)
    assert report.speed(one, two) == pytest.approx(2.0 / 1.9)
    assert report.speed(two, one) == pytest.approx(1.9 / 2.0)  # not 1 / the other way


def test_speed_falls_back_to_medians(report):
    a = report.Times({"ns_median": 3.0})
    b = report.Times({"ns_median": 1.5})
    assert report.speed(a, b) == 2.0
    c = report.Times(rec("kwker", 1, [1.0, 2.0, 3.0]))  # rounds of unequal count: medians
    d = report.Times(rec("kwker", 2, [1.0, 1.0]))
    assert report.speed(c, d) == pytest.approx(2.0 / 1.0)


def test_targets_and_report(report, tmp_path, capsys):
    results = [rec("kwker", 1, [1.0, 1.1, 0.9, 1.0, 1.0, 1.2, 1.0]),
               rec("kwker", 2, [1.0, 1.1, 0.9, 1.0, 1.0, 1.2, 1.0]),
               rec("ips4o", 1, [4.0] * 7), rec("ips4o-par", 2, [2.0] * 7),
               rec("copy", 1, [0.4] * 7),
               rec("kwker", 1, [2.0] * 7, inp="uniform", n=10**6),
               rec("kwker", 2, [3.0] * 7, inp="uniform", n=10**6),  # slower on two threads
               rec("vqsort", 1, [2.5] * 7, inp="uniform", n=10**6),
               rec("kwker-prev", 1, [2.5] * 7, inp="uniform", n=10**6)]
    rows = {(r[0], r[1]): r for r in report.targets(report.index(results), "kwker")}
    assert rows[("2 threads never slower than 1", "float32 reversed 1e7")][4]
    miss = rows[("2 threads never slower than 1", "float32 uniform 1e6")]
    assert miss[2] == pytest.approx(2 / 3) and not miss[4]
    assert rows[("1 thread >= 1.0x vqsort", "float32 uniform 1e6")][4]
    assert not rows[("2 threads >= 1.1x vqsort (1 thread)", "float32 uniform 1e6")][4]
    assert rows[("presorted: at most 2x ips4o's time", "float32 reversed 1e7, 2 thread(s)")][4]
    assert rows[("presorted: at most 3x a copy", "float32 reversed 1e7, 1 thread(s)")][4]
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"results": results, "wall_s": 1, "other_cpu_s": 0,
                                "wrong_results": 0}))
    assert report.main([str(path)]) == 0
    out = capsys.readouterr().out
    assert "**MISS**" in out and "| float32 | uniform | 1e6 | 1 | 2.50 | 2.00 | 1.25x |" in out
