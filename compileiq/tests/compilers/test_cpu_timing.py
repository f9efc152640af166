"""The CPU timing helper: warm-up, repeats, one pinned core, median and spread."""

import os
import subprocess
import sys

import pytest

from compileiq.compilers import cpu_time
from compileiq.compilers.cpu_timing import percentile


def test_callable_runs_warmup_plus_repeats_and_reports_spread():
    calls = []
    r = cpu_time(lambda x: calls.append(x), args=(7,), warmup=2, repeats=5)
    assert calls == [7] * 7 and len(r.samples) == 5
    assert r.p5 <= r.median <= r.p95 and r.min <= r.median and r.cv >= 0
    assert "median" in r.summary()


def test_pinned_to_one_allowed_core_and_restored():
    if not hasattr(os, "sched_getaffinity"):
        pytest.skip("os.sched_setaffinity is not available on this platform")
    before = os.sched_getaffinity(0)
    seen = []
    r = cpu_time(lambda: seen.append(os.sched_getaffinity(0)), warmup=0, repeats=2)
    assert r.cpu in before and all(s == {r.cpu} for s in seen)
    assert os.sched_getaffinity(0) == before
    free = cpu_time(lambda: seen.append(os.sched_getaffinity(0)), warmup=0, repeats=1, pin=False)
    assert free.cpu is None and seen[-1] == before


def test_program_wall_time_and_parsed_time(tmp_path):
    prog = [sys.executable, "-c", "print(0.25)"]
    wall = cpu_time(prog, warmup=1, repeats=3)
    assert all(0 < s < 30 for s in wall.samples) and wall.outputs[0].strip() == "0.25"
    parsed = cpu_time(prog, warmup=0, repeats=3, parse=float)
    assert parsed.samples == (0.25, 0.25, 0.25) and parsed.cv == 0


def test_failing_program_raises():
    with pytest.raises(subprocess.CalledProcessError):
        cpu_time([sys.executable, "-c", "raise SystemExit(3)"], warmup=0, repeats=1)


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="repeats=0"):
        cpu_time(lambda: None, repeats=0)
    with pytest.raises(ValueError, match="warmup=-1"):
        cpu_time(lambda: None, warmup=-1)


def test_percentile_interpolates_like_numpy():
    import numpy as np
    xs = [5.0, 1.0, 4.0, 2.0, 3.0, 10.0]
    for q in (0, 5, 50, 95, 100):
        assert percentile(xs, q) == pytest.approx(float(np.percentile(xs, q)))
