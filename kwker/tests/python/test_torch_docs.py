"""Every code block of docs/torch.md, run as a user would paste it (a fresh interpreter), and
the page's threshold table equal to the thresholds the operators use (thresholds.json)."""
import json
import pathlib
import re
import subprocess
import sys

import pytest

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "torch.md"
TEXT = DOC.read_text()
BLOCKS = re.findall(r"```(\w+)\n(.*?)```", TEXT, flags=re.S)


def test_the_page_is_complete():
    assert "THRESHOLD_TABLE" not in TEXT and "BENCH_TABLE" not in TEXT
    assert "SPEED_TABLE" not in TEXT
    assert [lang for lang, _ in BLOCKS] == ["python"] * 5
    for phrase in ("the compiled PyTorch operators were built for torch X, not Y",
                   "these PyTorch overrides differ from this torch's own kernels and stay off",
                   "KWKER_SELF_CHECK=force", "KWKER_DISABLE=1", "+torch2.M", "kwker.dynamo.operators()",
                   'torch.compile(model, backend="kwker")', "python -m kwker audit"):
        assert phrase in TEXT, phrase


def test_threshold_table_matches_what_the_operators_use():
    from kwker.torch_ops import _thresholds
    measured = _thresholds.load()
    rows = re.findall(r"^\| (python|compiled) \| (\w+) \| (.*) \|$", TEXT, flags=re.M)
    assert rows, "no threshold rows"
    header = re.search(r"^\| implementation \| op \| (.*) \|$", TEXT, flags=re.M).group(1)
    dtypes = [h.strip() for h in header.split("|")]
    seen = set()
    for kind, op, cells in rows:
        for dtype, cell in zip(dtypes, cells.split("|")):
            cell = cell.strip()
            want = measured[kind][op].get(dtype)
            if want is None:
                assert cell == "torch", (kind, op, dtype, cell)
            else:
                shown = "never" if want >= _thresholds.NEVER else f"{want:,}"
                assert cell == shown, (kind, op, dtype, cell, want)
        seen.add((kind, op))
    assert seen == {(k, op) for k in measured for op in measured[k]}


@pytest.mark.parametrize("code", [c for lang, c in BLOCKS if lang == "python"],
                         ids=lambda c: c.splitlines()[0][:40])
def test_python_block_runs(code, tmp_path, kwker_cache_dir, monkeypatch):
    monkeypatch.setenv("KWKER_CACHE_DIR", str(kwker_cache_dir))
    monkeypatch.delenv("KWKER_DISABLE", raising=False)
    path = tmp_path / "block.py"
    path.write_text(code)
    r = subprocess.run([sys.executable, str(path)], cwd=tmp_path, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
