"""python -m kwker audit: real runs of small scripts, with Kwker and with KWKER_DISABLE=1."""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from kwker import audit as record_mod
from kwker.tools import audit


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch):
    monkeypatch.delenv("KWKER_DISABLE", raising=False)
    monkeypatch.delenv(record_mod.ENV, raising=False)


def script(tmp_path, body, name="script.py"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return str(path)


def run_audit(capsys, *argv):
    code = audit.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


AGREE = """
    import numpy as np
    import kwker
    from kwker import audit
    a = np.array([3.0, np.nan, -0.0, 1.0, 0.0])
    print("sorted:", kwker.sort(a))
    audit.record("sorted", kwker.sort(a))
    audit.record("meta", {"n": 5, "name": "x", "scale": float("nan")})
"""


def test_deterministic_script_agrees(tmp_path, capsys):
    code, out, err = run_audit(capsys, "--", script(tmp_path, AGREE))
    assert code == 0, out + err
    assert out.strip().splitlines()[-1] == "outputs agree"
    for word in ("with Kwker", "KWKER_DISABLE=1", "wall s", "cpu s", "peak MiB",
                 "2 recorded name(s)"):
        assert word in out


def test_echo_integration_changes_stdout(tmp_path, capsys):
    s = script(tmp_path, """
        from kwker.testing import echo, greeting
        echo.install()
        print(greeting())
    """)
    code, out, _ = run_audit(capsys, "--", s)
    assert code == 1
    assert out.strip().splitlines()[-1] == "outputs differ: stdout"
    assert "'hello from kwker'" in out and "'hello'" in out


def test_echo_integration_changes_a_recorded_value(tmp_path, capsys):
    s = script(tmp_path, """
        from kwker import audit
        from kwker.testing import echo, greeting
        echo.install()
        audit.record("same", [1, 2, 3])
        audit.record("greeting", greeting())
    """)
    code, out, _ = run_audit(capsys, "--", s)
    assert code == 1
    assert out.strip().splitlines()[-1] == "outputs differ: recorded value 'greeting'"


def test_nan_payload_and_missing_name_are_differences(tmp_path, capsys):
    s = script(tmp_path, """
        import os
        import numpy as np
        from kwker import audit
        a = np.array([1.0, np.nan, 2.0])
        if os.environ.get("KWKER_DISABLE") == "1":
            a.view(np.uint64)[1] |= 1   # another NaN payload: not the same bytes
        else:
            audit.record("only_with", 1)
        audit.record("a", a)
    """)
    code, out, _ = run_audit(capsys, "--json", "--", s)
    assert code == 1
    rep = json.loads(out)
    diffs = {d["name"]: d for d in rep["verdict"]["differences"]}
    assert diffs["a"]["kind"] == "recorded_value" and diffs["a"]["first_index"] == 1
    assert diffs["only_with"]["recorded_only_with"] == "kwker"
    assert rep["verdict"]["summary"] == ("outputs differ: recorded value 'only_with' "
                                         "(recorded only with Kwker)")


def test_failure_in_one_run_is_reported_with_stderr_tails(tmp_path, capsys):
    s = script(tmp_path, """
        import os, sys
        print("starting", file=sys.stderr)
        if os.environ.get("KWKER_DISABLE") == "1":
            print("boom: cannot run without kwker", file=sys.stderr)
            sys.exit(3)
    """)
    code, out, _ = run_audit(capsys, "--", s)
    assert code == 1
    assert "the script failed with KWKER_DISABLE=1 but not with Kwker" in out
    assert "boom: cannot run without kwker" in out
    assert "stderr tail, with Kwker (exited 0)" in out
    assert "stderr tail, KWKER_DISABLE=1 (exited 3)" in out


def test_json_via_the_cli(tmp_path):
    s = script(tmp_path, AGREE)
    env = {k: v for k, v in os.environ.items() if not k.startswith("KWKER_")}
    r = subprocess.run([sys.executable, "-m", "kwker", "audit", "--json", "--timeout", "60",
                        "--", s], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)
    assert rep["schema"] == "kwker.audit" and rep["schema_version"] == 1
    assert rep["verdict"]["agree"] is True and rep["exit_status"] == 0
    assert set(rep["runs"]) == {"kwker", "disabled"}
    assert rep["runs"]["disabled"]["env"] == {"KWKER_DISABLE": "1"}
    assert rep["runs"]["kwker"]["env"] == {"KWKER_DISABLE": None}
    for run in rep["runs"].values():
        assert run["exit_code"] == 0 and run["ok"] is True
        assert run["wall_s"] > 0 and run["cpu_s"] >= 0 and run["peak_mib"] > 0
        assert run["recorded"] == ["sorted", "meta"]


def test_timeout_counts_as_a_failed_run(tmp_path, capsys):
    s = script(tmp_path, """
        import os, time
        if os.environ.get("KWKER_DISABLE") == "1":
            time.sleep(60)
    """)
    code, out, _ = run_audit(capsys, "--timeout", "0.5", "--", s)
    assert code == 1
    assert "timeout" in out
    assert "the script failed with KWKER_DISABLE=1 but not with Kwker" in out


@pytest.mark.parametrize("argv, words", [
    ([], "expected `--`"),
    (["script.py"], "expected `--`"),
    (["--json"], "expected `--`"),
    (["--"], "no script"),
    (["--json", "--"], "no script"),
    (["--bogus", "--", "x.py"], "unknown option '--bogus'"),
    (["--timeout", "--", "x.py"], "needs a number"),
    (["--timeout", "abc", "--", "x.py"], "not a number"),
    (["--timeout", "-1", "--", "x.py"], "positive"),
])
def test_usage_errors(capsys, argv, words):
    code, out, err = run_audit(capsys, *argv)
    assert code == 2
    assert out == ""
    assert words in err and "usage: python -m kwker audit" in err


def test_missing_script_is_named_and_not_run(tmp_path, capsys):
    missing = str(tmp_path / "no_such_script.py")
    code, out, err = run_audit(capsys, "--", missing)
    assert code == 2 and out == ""
    assert "script not found" in err and missing in err
    assert list(tmp_path.iterdir()) == []


def test_record_outside_audit_is_a_no_op(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert not record_mod.enabled()
    record_mod.record("x", np.arange(3))
    record_mod.record("y", {"a": 1})
    assert list(tmp_path.iterdir()) == []


def test_record_writes_an_index_and_the_parent_reads_it_back(tmp_path, monkeypatch):
    monkeypatch.setenv(record_mod.ENV, str(tmp_path))
    nan = np.array([np.nan, 1.0])
    nan.view(np.uint64)[0] |= 7
    record_mod.record("a", nan)
    record_mod.record("a", np.array([1, 2], np.int8))
    record_mod.record("s", "text")
    with pytest.raises(TypeError, match="non-empty str"):
        record_mod.record(3, 1)
    got = audit._load(str(tmp_path))
    assert list(got) == ["a", "s"] and got["s"] == ["text"]
    assert got["a"][0].tobytes() == nan.tobytes() and got["a"][1].dtype == np.int8
    assert not any(p.name.endswith(".tmp") for p in tmp_path.iterdir())


def test_same_is_exact():
    same = audit._same
    a = np.array([np.nan, 0.0])
    b = a.copy()
    assert same(a, b)
    b.view(np.uint64)[0] |= 1
    assert not same(a, b)                                   # NaN payload
    assert not same(a, a.astype(np.float32))                # dtype
    assert not same(a, a.reshape(2, 1))                     # shape
    assert not same(np.array([0.0]), np.array([-0.0]))      # sign of zero
    assert same(float("nan"), float("nan")) and not same(0.0, -0.0)
    assert same([1, "a", (2.5,)], [1, "a", (2.5,)]) and not same([1], [1, 2])
    assert not same(1, 1.0)
    assert same({"k": np.arange(3)}, {"k": np.arange(3)})
