import json
import subprocess
import sys
from pathlib import Path

from compileiq.diagnostics.cli import main

ROOT = Path(__file__).resolve().parents[2]


def test_exit_status_is_the_number_of_pathologies(results_csv, capsys):
    healthy = results_csv([[g, 100 - 10 * g + j] for g in range(4) for j in range(3)])
    assert main([str(healthy)]) == 0
    out = capsys.readouterr().out
    assert "HEALTHY" in out and "invalid%" in out and "compileiq validate" in out
    # each generation measures one configuration three times: 50, 100 and 150 (noise), and never improves
    stalled_noisy = results_csv([[g, v] for g in range(5) for v in (50.0, 100.0, 150.0)], params=lambda n: {"x": n // 3})
    assert main([str(stalled_noisy)]) == 2
    out = capsys.readouterr().out
    assert "STALLED_CONVERGENCE" in out and "HIGH_VARIANCE" in out and "exit status 2" in out


def test_json_output(results_csv, capsys):
    path = results_csv([[0, "*"]] * 6)
    assert main([str(path), "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["codes"] == ["ALL_INVALID"] and data["flags"][0]["advice"]


def test_problem_type_option(results_csv, capsys):
    path = results_csv([[g, 10.0 * (g + 1) + j] for g in range(5) for j in range(2)])
    assert main([str(path), "--problem-type", "max"]) == 0
    assert main([str(path)]) == 1


def test_self_test(capsys):
    assert main(["--self-test"]) == 0
    out = capsys.readouterr().out
    for name in ("healthy", "rising invalid rate", "stalled", "noisy", "identical scores", "all invalid",
                 "missing generation column", "missing score column"):
        assert f"PASS  {name}" in out


def test_script_from_the_product_root(results_csv):
    path = results_csv([[0, 5.0]] * 6)
    p = subprocess.run([sys.executable, "scripts/diagnose_csv.py", str(path)], capture_output=True, text=True,
                       cwd=ROOT, timeout=60)
    assert p.returncode == 1 and "IDENTICAL_SCORES" in p.stdout and not p.stderr
    p = subprocess.run([sys.executable, "scripts/diagnose_csv.py", "--self-test"], capture_output=True, text=True,
                       cwd=ROOT, timeout=60)
    assert p.returncode == 0, p.stdout
