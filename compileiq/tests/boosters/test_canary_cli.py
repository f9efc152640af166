"""``compileiq canary``: exit status by verdict, and bad input answered in one line."""

import json

import pytest

from compileiq.boosters.canary_cli import main

MODULE = '''
from compileiq import BASELINE_CONFIG
from compileiq.controls import parse_controls

def score(config, table):
    key = "base" if config == BASELINE_CONFIG else " ".join(parse_controls(bytes.fromhex(config)).options)
    return table[key]

def good(config):
    return score(config, {"base": 1.0, "-O0": 3.0, "-O3": 1.0})

def stale(config):
    return 1.0

_noisy_base = iter([1.0, 1.3, 0.8])


def noisy(config):
    key = "base" if config == BASELINE_CONFIG else " ".join(parse_controls(bytes.fromhex(config)).options)
    return next(_noisy_base) if key == "base" else {"-O0": 4.0, "-O3": 1.1}[key]

def broken(config):
    raise OSError("the benchmark binary is missing")

NOT_CALLABLE = 3
'''


@pytest.fixture
def module(tmp_path, monkeypatch):
    (tmp_path / "ciq_canary_objectives.py").write_text(MODULE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    return "ciq_canary_objectives"


def test_pass_fail_and_error_exit_codes(module, capsys):
    assert main(["--module", f"{module}:good", "--compiler", "gcc"]) == 0
    assert "PASS" in capsys.readouterr().out
    assert main(["--module", f"{module}:stale", "--compiler", "gcc"]) == 1
    out = capsys.readouterr().out
    assert "FAIL" in out and "stale build folder" in out
    assert main(["--module", f"{module}:noisy", "--compiler", "gcc"]) == 2
    out = capsys.readouterr().out
    assert ": UNDECIDED" in out and "could not decide: the baseline's own runs spread by 50.0%" in out
    assert main(["--module", f"{module}:broken", "--compiler", "gcc"]) == 2
    assert "OSError on baseline: the benchmark binary is missing" in capsys.readouterr().out


def test_json_output(module, capsys):
    assert main(["--module", f"{module}:good", "--compiler", "ptxas", "--json", "--repeats", "2"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["verdict"] == "PASS" and doc["samples"]["baseline"] == [1.0, 1.0]


def test_a_file_path_works_as_module(tmp_path, capsys):
    path = tmp_path / "bench file.py"
    path.write_text(MODULE)
    assert main(["--module", f"{path}:good", "--compiler", "gcc"]) == 0
    capsys.readouterr()


@pytest.mark.parametrize("ref, needle", [
    ("no_such_mod_xyz:objective", "cannot import 'no_such_mod_xyz'"),
    ("ciq_canary_objectives:missing", "has no 'missing' (callables there:"),
    ("ciq_canary_objectives:NOT_CALLABLE", "is not callable (it is a 'int' value)"),
    ("/nowhere/bench.py:objective", "does not exist"),
    (":objective", "give MODULE:FUNCTION"),
])
def test_bad_module_references(module, capsys, ref, needle):
    assert main(["--module", ref]) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err


def test_unknown_configuration_is_a_usage_error(module, capsys):
    assert main(["--module", f"{module}:good", "--same", "O7"]) == 2
    err = capsys.readouterr().err
    assert "no configuration 'O7'" in err and "Traceback" not in err
