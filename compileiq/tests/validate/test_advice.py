"""Advice that fits what was measured: the device the benchmark runs on, and the machine's load, measured."""

import subprocess
import sys
import time

import numpy as np
import pytest

from compileiq.controls import format_controls
from compileiq.validate import Candidate, validate, validate_result, welch_decide
from compileiq.validate.advice import noise_advice
from compileiq.validate.device import combine, declared, from_controls_file, from_params
from compileiq.validate.machine import LoadMeter, MachineLoad

QUIET = MachineLoad(30.0, 2, 0.02, 0.98, 0.0, None)
BUSY = MachineLoad(30.0, 2, 1.47, 0.51, 0.04, "powersave")
GPU_WORDS = ("nvidia-smi", "CUDA_VISIBLE_DEVICES", "GPU")


def noisy_pairs():
    rng = np.random.default_rng(0)
    return rng.normal(100, 20, 60), rng.normal(80, 16, 60)


def close_pairs():
    rng = np.random.default_rng(1)
    base = rng.normal(100, 1, 60)
    return base, base / 1.02 * rng.normal(1, 0.03, 60)


def wide_pairs():
    rng = np.random.default_rng(2)
    return rng.permutation(100 + 1.5 * np.linspace(-1.6, 1.6, 100)), rng.permutation(97 + 2.5 * np.linspace(-1.6, 1.6, 100))


@pytest.mark.parametrize("load", [None, QUIET, BUSY])
@pytest.mark.parametrize("case, rule, reason", [
    (noisy_pairs, "cv", "noisy"), (close_pairs, "ratio_ci", "uncertain"), (wide_pairs, "ratio_ci", "wider-spread"),
    (wide_pairs, "cv", "wider-spread"),
])
def test_a_cpu_objectives_advice_never_mentions_nvidia_smi(case, rule, reason, load):
    v = welch_decide(*case(), noise_rule=rule, device="cpu", load=load)
    assert reason in v.reasons and v.advice
    for text in v.advice:
        assert not any(w in text for w in GPU_WORDS), text


def test_cpu_advice_names_the_measured_load_taskset_and_the_governor():
    advice = noise_advice("cpu", BUSY, "ratio_ci")
    assert "other processes kept 1.47 of this machine's 2 CPUs busy (74% of its CPU time" in advice[0]
    assert "Stop them" in advice[0]
    text = "\n".join(advice)
    assert "taskset -c <core>" in text and "governor is 'powersave'" in text and "cpupower frequency-set -g performance" in text
    assert "steal" in text and "--max-trials" in text
    quiet = noise_advice("cpu", QUIET, "cv")
    assert "other jobs are not the main cause" in quiet[0] and "no cpufreq governor is visible" in "\n".join(quiet)
    assert "--trials 200" in quiet[-1]


def test_gpu_advice_is_nvidias_and_unknown_gets_both_labelled():
    gpu = noise_advice("gpu", QUIET, "cv")
    assert "nvidia-smi --lock-gpu-clocks" in gpu[0] and "CUDA_VISIBLE_DEVICES" in gpu[1]
    assert not any("taskset" in a for a in gpu)
    assert any("other processes kept" in a for a in noise_advice("gpu", BUSY, "cv"))  # a busy host slows launches
    unknown = noise_advice(None, BUSY, "ratio_ci")
    assert "nvidia-smi" in unknown[0] and any(a.startswith("CPU benchmarks: pin the benchmark") for a in unknown)
    assert "device='cpu' | 'gpu'" in unknown[-1]


def test_device_comes_from_the_compiler_the_controls_declare(tmp_path):
    gcc = format_controls("gcc", "13.2", ["-O3"])
    ptx = format_controls("ptxas", "13.3", ["-O3"])
    assert from_params(gcc.hex()) == "cpu" and from_params(ptx.hex()) == "gpu"
    assert from_params({"x": 1}) is None and from_params("not hex") is None and from_params("00ff") is None
    (tmp_path / "c.ctl").write_bytes(format_controls("clang", "18.1", ["-O2"]))
    (tmp_path / "vendor.acf").write_bytes(b"\x89ACF opaque bytes")
    assert from_controls_file(str(tmp_path / "c.ctl")) == "cpu"
    assert from_controls_file(str(tmp_path / "vendor.acf")) == "gpu"  # only ptxas / nvcc read a vendor ACF
    assert from_controls_file(str(tmp_path / "missing")) is None


def test_device_declared_on_a_callable_or_candidate():
    def measure():
        return 1.0
    measure.device = "gpu"
    assert declared(measure) == "gpu" and declared(lambda: 1.0) is None
    assert declared(Candidate("c", lambda: 1.0, device="cpu")) == "cpu"
    assert combine(["cpu", None]) == "cpu" and combine(["cpu", "gpu"]) == "gpu" and combine([None]) is None


def test_validate_finds_the_device_and_explicit_wins():
    cpu = iter(np.random.default_rng(3).normal(10, 0.1, 400))

    def base():
        return next(cpu)
    base.device = "cpu"
    d = validate(base, [lambda: next(cpu)], trials=10, warmup=0)[0]
    assert d.verdict.device == "cpu"
    assert validate(base, [lambda: next(cpu)], trials=10, warmup=0, device="gpu")[0].verdict.device == "gpu"
    assert validate(lambda: next(cpu), [lambda: next(cpu)], trials=10, warmup=0)[0].verdict.device is None


def test_validate_result_of_a_gcc_search_knows_it_runs_on_the_cpu():
    import pandas as pd
    from compileiq.results import SearchResult

    fast = format_controls("gcc", "13.2", ["-O3"]).hex()
    df = pd.DataFrame([[{"baseline": True}, 0, 1.0, {}], [{"param_id": "p1"}, 1, 0.5, fast]],
                      columns=["metadata", "generation", "score_1", "params"])
    rng = np.random.default_rng(4)
    ds = validate_result(SearchResult(df), lambda p: rng.normal(2.0 if p == {} else 1.0, 0.02), trials=10, warmup=0)
    assert ds[0].kept and ds[0].verdict.device == "cpu"


def test_the_load_meter_sees_one_busy_process():
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.3)  # let it start
        meter = LoadMeter()
        time.sleep(1.5)
        load = meter.stop()
    finally:
        busy.kill()
        busy.wait()
    assert load is not None and load.cpus >= 1
    assert load.others >= 0.7, load  # the spinning process is one CPU's worth (other jobs may add to it)
    assert load.own < 0.3 and "other processes kept" in load.sentence()


def test_validation_records_the_load_it_measured(tmp_path):
    import csv
    rng = np.random.default_rng(5)
    out = tmp_path / "v.csv"
    d = validate(lambda: rng.normal(2.0, 0.01), [lambda: rng.normal(1.0, 0.01)], trials=10, warmup=0, output=out,
                 device="cpu")[0]
    assert d.verdict.load is not None and d.verdict.load.seconds > 0
    with out.open(newline="") as fh:
        row = next(csv.DictReader(fh))
    assert row["noise_rule"] == "ratio_ci" and row["device"] == "cpu" and row["min_speedup"] == "0.02"
    assert float(row["speedup_low"]) > 1.9 and row["max_trials"] == "40" and row["others_cpu_share"] != ""


def test_the_demo_reports_an_undecided_candidate_with_cpu_advice_and_no_verdict_on_the_baseline():
    from compileiq.demo import no_winner_text
    from compileiq.validate import Decision

    b, c = close_pairs()
    d = Decision("#1", welch_decide(b, c, device="cpu", load=BUSY), list(b), list(c))
    text = no_winner_text([d], "-O2")
    assert "#1: UNDECIDED" in text and "still contains the minimum 1.020x" in text
    assert "as good as" not in text and "no verdict on -O2" in text
    assert "other processes kept 1.47" in text and "nvidia-smi" not in text
