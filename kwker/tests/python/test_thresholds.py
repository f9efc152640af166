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
        m = re.match(r"## (.+)$", line)
        if m:
            current = engines.setdefault(m.group(1), {})
        m = re.match(r"\| `(\w+)` \| (\d+) \| (\d+) \| ", line)
        if m and current is not None:
            current[m.group(1)] = (int(m.group(2)), int(m.group(3)))
    return engines


TABLE = _table((BENCH / "thresholds.md").read_text())
VENDOR = "Intel" if kwker.runtime_info()["cpu"].get("vendor") == "GenuineIntel" else "AMD"


def _vendor_sections(engine):
    return {s: knobs for s, knobs in TABLE.items() if s.startswith(engine + " on ")}


def test_the_table_covers_every_knob_of_every_engine():
    """Each engine's section plus, where it has them, its per-vendor sections (both vendors,
    the same knobs) name every knob once."""
    assert {s.split(" on ")[0] for s in TABLE} == set(kwker.ENGINES)
    for engine in kwker.ENGINES:
        own = set(TABLE[engine])
        vendors = _vendor_sections(engine)
        if vendors:
            assert set(vendors) == {f"{engine} on Intel", f"{engine} on AMD"}, engine
            split = {frozenset(k) for k in vendors.values()}
            assert len(split) == 1 and not own & set(next(iter(split))), engine
            own |= set(next(iter(split)))
        assert own == set(_runtime.TUNING_KNOBS), engine


@pytest.mark.parametrize("engine", kwker.ENGINES)
def test_compiled_defaults_are_the_measured_values(engine):
    """The library's defaults on this CPU are the engine's rows and, for the per-vendor knobs,
    the rows of this CPU's vendor."""
    if engine not in kwker.available_isas():
        pytest.skip(f"this CPU does not run the {engine} engine")
    rows = dict(TABLE[engine])
    rows.update(TABLE.get(f"{engine} on {VENDOR}", {}))
    with kwker.config(isa=engine):
        for knob, (measured, in_code) in rows.items():
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


def test_tuning_block_with_a_bad_knob_raises_that_error_and_restores_the_rest():
    """The with-block's bad knob is the one error raised (restoring it again used to raise a
    second error over the first), and the knobs set before it come back to their defaults."""
    before = _runtime.get_tuning("sort_tiny_max")
    with pytest.raises(ValueError, match="unknown knob 'bogus'") as err:
        with _runtime.tuning(sort_tiny_max=before + 1, bogus=3):
            pytest.fail("the block must not run")
    assert err.value.__context__ is None
    assert _runtime.get_tuning("sort_tiny_max") == before


def _knob_enum_names():
    """runtime/tuning.h's Knob enumerators (kSortNetwork16, ...) by knob name, in the order the
    library numbers both."""
    src = (BENCH.parent / "runtime" / "tuning.h").read_text()
    body = re.search(r"enum Knob : int \{(.*?)kKnobCount", src, re.S).group(1)
    body = re.sub(r"//[^\n]*", "", body)
    names = re.findall(r"\b(k[A-Z]\w*)", body)
    assert len(names) == len(_runtime.TUNING_KNOBS), names
    return dict(zip(names, _runtime.TUNING_KNOBS))


@pytest.mark.parametrize("engine, guard", [("avx512", "__AVX512F__"), ("avx2", "__AVX2__")])
def test_the_intel_defaults_in_code_are_the_intel_rows(engine, guard):
    """Each engine's kIntelDefaults in core/tuning-inl.h is its 'ENGINE on Intel' section,
    checked from the source so that a machine of either vendor catches a drift (the library
    reports only its own vendor's defaults)."""
    src = (BENCH.parent / "core" / "tuning-inl.h").read_text()
    branch = re.search(r"#(?:el)?if defined\(" + guard + r"\)(.*?)#el", src, re.S).group(1)
    block = re.search(r"kIntelDefaults\[\]\[2\] = \{(.*?)\};", branch, re.S).group(1)
    enum = _knob_enum_names()
    in_code = {enum[name]: int(value)
               for name, value in re.findall(r"\{tune::(k\w+), (\d+)\}", block)}
    assert in_code == {k: row[1] for k, row in TABLE[f"{engine} on Intel"].items()}
    assert {k for k, row in TABLE[f"{engine} on AMD"].items()} == set(in_code)


def test_best_window_picks_the_run_that_gains_most():
    sys.path.insert(0, str(BENCH))
    try:
        import thresholds
    finally:
        sys.path.remove(str(BENCH))
    pts = [(9, 0.8), (16, 1.2), (24, 1.2), (32, 1.3), (64, 0.99), (128, 1.2), (256, 0.7)]
    assert thresholds.best_window(pts) == (16, 128)  # one point at 0.99 does not split it
    assert thresholds.best_window([(9, 1.2), (16, 1.2), (24, 0.5)]) is None  # two points
    assert thresholds.best_window([(n, 1.01) for n in (9, 16, 24, 32)]) is None  # noise-level
    assert thresholds.best_window([(9, 0.9), (16, 1.1), (24, 1.1), (32, 1.1)]) == (16, 32)
