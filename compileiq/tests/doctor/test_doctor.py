import json
import os
import subprocess
import sys

from compileiq.doctor import collect
from compileiq.doctor.cli import main


def test_json_report_has_every_section_and_a_live_worker(capsys):
    rc = main(["--json"])
    out = json.loads(capsys.readouterr().out)
    assert {"versions", "compilers", "gpus", "ciq_environment", "worker", "search_spaces", "frameworks", "cache",
            "warnings"} <= set(out)
    assert out["worker"]["ok"] and out["worker"]["process_mode"] == "forkserver"
    assert out["worker"]["start_and_first_evaluation_s"] < out["worker"]["socket_timeout_s"]
    assert out["compilers"]["gcc"]["path"] and out["search_spaces"]["gcc"]["ok"]
    assert out["search_spaces"]["gcc"]["source"] == "shipped"
    assert rc == (1 if any(w["severity"] == "error" for w in out["warnings"]) else 0)


def test_set_ciq_variables_are_listed_and_bad_ones_are_errors(monkeypatch):
    monkeypatch.setenv("CIQ_SOCKET_TIMEOUT", "soon")
    monkeypatch.setenv("CIQ_KEEP_CACHE", "1")
    r = collect(live_worker=False)
    assert r.facts["ciq_environment"]["CIQ_SOCKET_TIMEOUT"] == "soon"
    bad = [p for p in r.problems if p.check == "env:CIQ_SOCKET_TIMEOUT"]
    assert bad and bad[0].severity == "error" and "CIQ_SOCKET_TIMEOUT='soon'" in bad[0].cause


SLOW_SITE = """
import sys, time
if "--multiprocessing-fork" in sys.argv:  # a spawned worker: make its interpreter start-up slow, for real
    time.sleep(30)
"""
SLOW_START = """
import sys
from compileiq.doctor.cli import main
sys.exit(main([]))
"""


def test_a_worker_that_cannot_connect_in_time_is_an_error_naming_the_variable(tmp_path):
    script = tmp_path / "slow_main.py"
    script.write_text(SLOW_START)
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sitecustomize.py").write_text(SLOW_SITE)
    env = {**os.environ, "CIQ_SOCKET_TIMEOUT": "1", "CIQ_PROCESS_MODE": "spawn", "PYTHONPATH": str(tmp_path / "site")}
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "worker: FAILED" in out.stdout and "CIQ_SOCKET_TIMEOUT" in out.stdout and "fix:" in out.stdout


def test_missing_compiler_is_reported_with_the_fix(monkeypatch):
    monkeypatch.setenv("CIQ_CLANG", "/nonexistent/clang")
    r = collect(live_worker=False)
    assert "error" in r.facts["compilers"]["clang"]
    p = [p for p in r.problems if p.check == "compiler:clang"][0]
    assert "CIQ_CLANG" in p.fix or "clang" in p.fix


def test_console_script_and_module_agree():
    out = subprocess.run([sys.executable, "-m", "compileiq", "doctor", "--no-worker"], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode in (0, 1) and "CompileIQ doctor" in out.stdout and "Traceback" not in out.stderr


def test_apply_controls_support_is_probed_from_the_binary(monkeypatch):
    import pathlib
    repo = pathlib.Path(__file__).resolve().parents[3]
    newer = repo / "build" / "toolchains" / "cuda-13.5" / "nvidia" / "cu13" / "bin" / "ptxas"
    r = collect(live_worker=False)
    from compileiq.compilers.discovery import find_ptxas
    assert r.facts["apply_controls"]["accepts_vendor_acf"] is (find_ptxas().version >= (13, 3))
    if newer.is_file():
        monkeypatch.setenv("CIQ_PTXAS", str(newer))
        r = collect(live_worker=False)
        assert r.facts["apply_controls"] == {"ptxas": str(newer), "accepts_vendor_acf": True}
        assert not [p for p in r.problems if p.check == "apply-controls"]
