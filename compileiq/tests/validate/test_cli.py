import csv
import subprocess
import sys
from pathlib import Path

import pytest

from compileiq.validate.cli import main

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "welch_validate.py"
PY = sys.executable


def bench(value, spread=0.0):
    """A command printing "time: <value> ms" with a little deterministic jitter."""
    code = (f"import random; print('time: %.4f ms' % ({value} + random.uniform(-{spread}, {spread})))")
    return f"{PY} -c \"{code}\""


def test_self_test_passes(capsys):
    assert main(["--self-test"]) == 0
    out = capsys.readouterr().out
    assert "all checks passed" in out and "REJECTED:noisy" in out and "REJECTED:wider-spread" in out


def test_commands_kept_and_logged(tmp_path, capsys):
    log = tmp_path / "v.csv"
    rc = main(["--baseline-cmd", bench(2.0, 0.02), "--candidate-cmd", bench(1.0, 0.01), "--trials", "12",
               "--warmup", "1", "--score-regex", r"time: ([0-9.]+)", "--output", str(log), "--input-shape", "8x8",
               "--quiet"])
    assert rc == 0, capsys.readouterr()
    row = next(csv.DictReader(log.read_text().splitlines()))
    assert row["decision"] == "KEPT" and row["input_shape"] == "8x8" and "time: %.4f" in row["command"]
    assert "candidate-1: KEPT" in capsys.readouterr().out


def test_all_rejected_exits_1(capsys):
    rc = main(["--baseline-cmd", bench(1.0, 0.01), "--candidate-cmd", bench(1.5, 0.01), "--trials", "6",
               "--warmup", "0", "--quiet", "--json"])
    assert rc == 1
    assert '"decision": "REJECTED:mean-not-better"' in capsys.readouterr().out


def test_controls_with_a_template(tmp_path, capsys):
    fast = tmp_path / "fast.acf"
    fast.write_text("1.0")
    log = tmp_path / "v.csv"
    # the controls file holds the time to print; the baseline runs with {controls} empty and prints 2.0;
    # the noise scales with the time, so the faster candidate never has the wider spread (the spread rule)
    template = f"{PY} -c \"import sys,random; v=float(open(sys.argv[1]).read()) if len(sys.argv)>1 else 2.0; " \
               "print('t=%.4f' % (v + random.uniform(-0.005, 0.005) * v))\" {controls}"
    rc = main(["--acf", str(fast), "--cmd-template", template, "--trials", "10", "--warmup", "0",
               "--output", str(log), "--quiet"])
    assert rc == 0, capsys.readouterr()
    row = next(csv.DictReader(log.read_text().splitlines()))
    import hashlib
    assert row["candidate"] == "fast.acf" and row["controls"] == str(fast)
    assert row["config_hash"] == hashlib.sha256(b"1.0").hexdigest()


@pytest.mark.parametrize("argv, message", [
    (["--candidate-cmd", "echo 1"], "no baseline"),
    (["--baseline-cmd", "echo 1"], "nothing to validate"),
    (["--acf", "x.acf"], "needs --cmd-template"),
    (["--acf", "missing.acf", "--cmd-template", "run {controls}"], "missing.acf does not exist"),
    (["--acf", "missing.acf", "--cmd-template", "run"], "no {controls} placeholder"),
    (["--baseline-cmd", "echo 1", "--candidate-cmd", "echo 2", "--score-regex", "(oops"], "not a valid Python regular"),
    (["--baseline-cmd", "echo 1", "--candidate-cmd", "echo 2", "--trials", "1"], "at least 2 trials"),
])
def test_bad_arguments_exit_2_with_a_message(argv, message, capsys):
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_regex_matching_nothing_is_refused_with_a_sample_of_the_output(capsys):
    rc = main(["--baseline-cmd", "echo 'elapsed: 3.0 ms'", "--candidate-cmd", "echo 'elapsed: 2.0 ms'",
               "--score-regex", r"time: ([0-9.]+)", "--trials", "10", "--warmup", "4", "--quiet"])
    err = capsys.readouterr().err
    assert rc == 2
    assert "refusing to decide" in err and "echo 'elapsed: 3.0 ms'" in err and "| elapsed: 3.0 ms" in err
    assert "first capture group" in err


def test_failing_command_is_refused(capsys):
    rc = main(["--baseline-cmd", "echo 1", "--candidate-cmd", "echo boom >&2; exit 7", "--trials", "4",
               "--warmup", "0", "--quiet"])
    err = capsys.readouterr().err
    assert rc == 2 and "exited with status 7" in err and "| boom" in err


@pytest.mark.parametrize("args", [
    ["--baseline-cmd", "echo nothing", "--candidate-cmd", "echo nothing", "--score-regex", "t=([0-9]+)",
     "--trials", "3", "--warmup", "0"],
    ["--baseline-cmd", "exit 1", "--candidate-cmd", "echo 1", "--trials", "3", "--warmup", "0"],
    ["--acf", "/does/not/exist", "--cmd-template", "x {controls}"],
    ["--baseline-cmd", "echo 1", "--candidate-cmd", "echo 2", "--trials", "3", "--warmup", "0",
     "--output", "/does/not/exist/log.csv"],
])
def test_script_never_shows_a_traceback(args, tmp_path):
    p = subprocess.run([PY, str(SCRIPT), *args], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert p.returncode == 2, p.stderr
    assert "Traceback" not in p.stderr and "welch_validate.py: error:" in p.stderr


def test_script_self_test_from_the_product_root():
    p = subprocess.run([PY, "scripts/welch_validate.py", "--self-test"], capture_output=True, text=True, cwd=ROOT,
                       timeout=60)
    assert p.returncode == 0 and "all checks passed" in p.stdout, p.stdout + p.stderr


def test_noise_rule_min_speedup_and_device_flags(tmp_path, capsys):
    fixed = ["--baseline-cmd", "echo 10", "--candidate-cmd", "echo 9", "--warmup", "0", "--quiet"]
    assert main([*fixed, "--trials", "8"]) == 0  # 1.111x in every pair: surely above 1.02
    assert "paired 1.111x [1.111, 1.111]" in capsys.readouterr().out
    assert main([*fixed, "--trials", "8", "--min-speedup", "0.2"]) == 1
    assert "REJECTED:below-min-speedup" in capsys.readouterr().out
    log = tmp_path / "v.csv"
    assert main([*fixed, "--trials", "8", "--noise-rule", "cv", "--output", str(log)]) == 0
    row = next(csv.DictReader(log.read_text().splitlines()))
    assert row["noise_rule"] == "cv" and row["decision"] == "KEPT"


def test_undecided_exits_2_with_advice_for_the_declared_device(capsys):
    rc = main(["--baseline-cmd", "echo 10", "--candidate-cmd", "echo 9", "--trials", "3", "--max-trials", "3",
               "--warmup", "0", "--device", "cpu", "--quiet"])
    out = capsys.readouterr().out
    assert rc == 2 and "candidate-1: UNDECIDED" in out and "3 pairs are too few for a 95% interval" in out
    assert "too noisy to decide; fixes, in order:" in out and "taskset" in out and "nvidia-smi" not in out


def test_json_reports_the_interval_and_the_rule(capsys):
    rc = main(["--baseline-cmd", "echo 10", "--candidate-cmd", "echo 5", "--trials", "8", "--warmup", "0",
               "--quiet", "--json"])
    import json
    out = json.loads(capsys.readouterr().out)[0]
    assert rc == 0 and out["noise_rule"] == "ratio_ci" and out["paired_speedup"]["median"] == 2.0
    assert out["paired_speedup"]["pairs"] == 8 and out["others_cpu_share"] is not None


@pytest.mark.parametrize("argv, message", [
    (["--baseline-cmd", "echo 1", "--candidate-cmd", "echo 2", "--trials", "10", "--max-trials", "5"],
     "--max-trials 5 must be at least --trials (10)"),
    (["--baseline-cmd", "echo 1", "--candidate-cmd", "echo 2", "--min-speedup", "-0.5"], "--min-speedup -0.5"),
])
def test_bad_rule_flags_exit_2(argv, message, capsys):
    assert main(argv) == 2
    assert message in capsys.readouterr().err
