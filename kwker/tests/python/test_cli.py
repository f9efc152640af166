"""python -m kwker doctor | sdk | bench."""
import json
import os
import subprocess
import sys

import pytest

import kwker
from kwker import __main__ as cli


def run(*args, **env):
    full = {k: v for k, v in os.environ.items() if not k.startswith("KWKER_")}
    full.update(env)
    return subprocess.run([sys.executable, "-m", "kwker", *args], env=full,
                          capture_output=True, text=True, timeout=300)


def test_doctor_json():
    r = run("doctor", "--json")
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)
    assert rep["ok"] is True
    assert rep["package"]["version"] == kwker.__version__
    assert rep["package"]["backend"] == "fast"
    assert rep["runtime"]["schema"] == "kwker.runtime_info"
    assert sorted(rep["self_check"]) == sorted(kwker.available_isas())


def test_doctor_text(capsys):
    assert cli.main(["doctor"]) == 0
    out = capsys.readouterr().out
    for word in ("version", "backend", "Engines", "selected", "Threads", "Scratch",
                 "Self-check", "Result: ok"):
        assert word in out


def test_doctor_collect_never_raises(monkeypatch):
    from kwker import _doctor

    def broken():
        raise OSError("probe exploded")
    monkeypatch.setitem(_doctor.PROBES, "runtime", broken)
    rep = _doctor.collect()
    assert rep["runtime"] == {"error": "OSError: probe exploded"}
    assert "probe exploded" in _doctor.render_text(rep)


def test_sdk(capsys):
    assert cli.main(["sdk", "--json"]) == 0
    paths = json.loads(capsys.readouterr().out)
    assert os.path.exists(os.path.join(paths["lib_dir"], "libkwker.so.1")) or \
        os.path.exists(os.path.join(paths["lib_dir"], "libkwker.so"))
    assert paths["include_dir"] is None or \
        os.path.exists(os.path.join(paths["include_dir"], "kwker", "kwker.h"))


def test_unknown_command_and_help(capsys):
    assert cli.main(["frobnicate"]) == 2
    assert "unknown command" in capsys.readouterr().err
    assert cli.main(["--help"]) == 0


def test_bench_missing_or_present(capsys):
    import importlib.util
    if importlib.util.find_spec("kwker.bench") is None:
        assert cli.main(["bench"]) == 2
        assert "kwker.bench" in capsys.readouterr().err


@pytest.mark.parametrize("cmd", ["doctor", "sdk", "bench", "audit", "support-bundle"])
def test_unknown_option_is_a_usage_error_with_exit_2(cmd):
    r = subprocess.run([sys.executable, "-m", "kwker", cmd, "--no-such-option"],
                       capture_output=True, text=True)
    assert r.returncode == 2, (cmd, r.stdout, r.stderr)
    assert "--no-such-option" in r.stderr and "usage" in r.stderr.lower(), r.stderr
