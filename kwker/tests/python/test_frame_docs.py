"""Every code block of docs/frame.md, run as a user would paste it: ```python blocks as
scripts in a fresh interpreter. The ```sh install line is what `make` does (the frame extra)."""
import pathlib
import re
import subprocess
import sys

import pytest

pytest.importorskip("pandas")
pytest.importorskip("polars")
pytest.importorskip("distributed")

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "frame.md"
BLOCKS = re.findall(r"```(\w+)\n(.*?)```", DOC.read_text(), flags=re.S)


def test_the_page_has_its_blocks_and_tables():
    langs = [lang for lang, _ in BLOCKS]
    assert langs.count("python") >= 4 and set(langs) <= {"python", "sh"}
    text = DOC.read_text()
    assert "STRATEGY_TABLE" not in text and "BENCH_TABLE" not in text
    for word in ("| NaN (float) |", "| None / null |", "| NaT |", "| pd.NA"):
        assert word in text


def test_install_line_names_the_extra_make_installs():
    sh = [code for lang, code in BLOCKS if lang == "sh"]
    assert sh == ['pip install "kwker[frame]"      # pandas 3, pyarrow, Polars, Dask with '
                  'distributed\n']
    pyproject = (DOC.parents[1] / "pyproject.toml").read_text()
    assert re.search(r'^frame = \[.*"pandas>=3', pyproject, flags=re.M)


@pytest.mark.parametrize("code", [c for lang, c in BLOCKS if lang == "python"],
                         ids=lambda c: c.splitlines()[0][:40])
def test_python_block_runs(code, tmp_path):
    path = tmp_path / "block.py"
    path.write_text(code)
    r = subprocess.run([sys.executable, str(path)], cwd=tmp_path, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr


def test_strategy_script_runs_and_every_strategy_agrees():
    script = DOC.parents[1] / "bench" / "frame_strategies.py"
    r = subprocess.run([sys.executable, str(script), "--n", "3000", "--repeats", "1"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr      # it asserts equal permutations itself
    rows = [line for line in r.stdout.splitlines() if line.startswith("| ") and "---" not in line]
    assert rows[0].startswith("| keys | auto | lsd | per-key | packed | np.lexsort |")
    assert len(rows) == 5


def test_before_after_script_compares_two_versions_of_kwker_frame():
    root = DOC.parents[2]
    if not (root / ".git").exists():
        pytest.skip("kwker/bench/frame_before_after.py reads the before side from git history")
    script = DOC.parents[1] / "bench" / "frame_before_after.py"
    r = subprocess.run([sys.executable, str(script), "--before", "HEAD", "--n", "3000",
                        "--repeats", "1"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    rows = [line for line in r.stdout.splitlines() if line.startswith("| `frame/")]
    from kwker.bench import frame_cases
    want = len([c for c in frame_cases.cases() if "dask" not in c.id])  # every row but Dask's
    assert len(rows) == want and all(line.count("|") == 10 for line in rows), r.stdout
