"""The measured threshold table (bench/thresholds.md, written by bench/thresholds.py) is the
source of every engine's compiled defaults: its *in code* column must be what the library
reports, and each default must be the measured value. And the measuring script runs."""
import pathlib
import re
import subprocess
import sys

import pytest

import kwker
from kwker import _runtime

BENCH = pathlib.Path(__file__).resolve().parents[2] / "bench"


def _table(text):
    engines, current = {}, None
    for line in text.splitlines():
        m = re.match(r"## (\S+)$", line)
        if m:
            current = engines.setdefault(m.group(1), {})
        m = re.match(r"\| `(\w+)` \| (\d+) \| (\d+) \| ", line)
        if m and current is not None:
            current[m.group(1)] = (int(m.group(2)), int(m.group(3)))
    return engines


TABLE = _table((BENCH / "thresholds.md").read_text())


def test_the_table_covers_every_knob_of_every_engine():
    assert set(TABLE) == set(kwker.ENGINES)
    for engine, knobs in TABLE.items():
        assert set(knobs) == set(_runtime.TUNING_KNOBS), engine


@pytest.mark.parametrize("engine", kwker.ENGINES)
def test_compiled_defaults_are_the_measured_values(engine):
    if engine not in kwker.available_isas():
        pytest.skip(f"this CPU does not run the {engine} engine")
    with kwker.config(isa=engine):
        for knob, (measured, in_code) in TABLE[engine].items():
            assert _runtime.get_tuning(knob) == in_code, (engine, knob)
            assert in_code == measured, (engine, knob, "re-run bench/thresholds.py and copy "
                                                       "the measured value into core/tuning-inl.h")


def test_the_measuring_script_runs(tmp_path):
    out = tmp_path / "t.md"
    r = subprocess.run([sys.executable, str(BENCH / "thresholds.py"), "--smoke", "--engines",
                        "portable", "--out", str(out)], capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr
    got = _table(out.read_text())
    assert set(got) == {"portable"} and set(got["portable"]) == set(_runtime.TUNING_KNOBS)


def test_merge_replaces_only_the_measured_knobs(tmp_path):
    """--knobs measures some knobs only; --merge writes just their rows into a copy of the
    committed table and keeps every other row as it was. An unknown knob is refused first."""
    table = tmp_path / "t.md"
    table.write_text((BENCH / "thresholds.md").read_text())
    before = _table(table.read_text())
    cmd = [sys.executable, str(BENCH / "thresholds.py"), "--smoke", "--engines", "portable"]
    r = subprocess.run(cmd + ["--knobs", "sort_float_min_64,presorted_min", "--merge",
                              str(table)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    after = _table(table.read_text())
    assert set(after) == set(before)
    for engine, knobs in before.items():
        assert set(after[engine]) == set(knobs), engine
        for knob, row in knobs.items():
            if engine != "portable" or knob not in ("sort_float_min_64", "presorted_min"):
                assert after[engine][knob] == row, (engine, knob)
    assert after["portable"]["sort_float_min_64"] == (0, 0)
    r = subprocess.run(cmd + ["--knobs", "bogus", "--merge", str(table)], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 2 and "unknown knob(s) bogus" in r.stderr
    assert _table(table.read_text()) == after


def test_knob_errors_name_the_knob():
    with pytest.raises(ValueError, match="unknown knob 'bogus'"):
        _runtime.set_tuning("bogus", 1)
    with pytest.raises(ValueError, match="sort_tiny_max must be >= 0, or -1"):
        _runtime.set_tuning("sort_tiny_max", -5)
