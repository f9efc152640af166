"""Runtime controls, and proof through the counters that the requested engine and thread
count really ran."""
import numpy as np
import pytest

import kwker
from kwker import _backend

PARALLEL_N = 1_100_000


def _counters():
    return kwker.runtime_info()["counters"]


def test_requested_engine_runs(kw):
    engine = kw.get_isa()
    kw.reset_counters()
    kw.sort(np.arange(1000.0)[::-1])
    kw.argsort(np.arange(1000, dtype=np.int32))
    kw.sort(np.ones((3, 4)), axis=0)
    c = _counters()
    assert c[engine]["calls"] >= 3, c
    for other in kwker.ENGINES:
        if other != engine:
            assert c[other]["calls"] == 0, (engine, c)
    assert kwker.runtime_info()["backend"] == _backend.name
    assert kwker.runtime_info()["engines"]["selected"] == engine


def test_threads_reach_the_engine(kw, rng):
    if kwker.runtime_info()["threads"]["budget"] < 2:
        pytest.skip("this process may use one CPU only (affinity or cgroup), so threads=2 "
                    "is clamped to 1")
    a = rng.standard_normal(PARALLEL_N).astype(np.float32)
    engine = kw.get_isa()
    kw.reset_counters()
    one = kw.sort(a, threads=1)
    assert _counters()[engine]["max_threads"] == 1
    kw.reset_counters()
    two = kw.sort(a, threads=2)
    assert _counters()[engine]["max_threads"] == 2, _counters()
    assert np.array_equal(one.view(np.uint32), two.view(np.uint32))
    i1 = kw.argsort(a, threads=1)
    i2 = kw.argsort(a, threads=2)
    assert np.array_equal(i1, i2)
    s1 = kw.sort_segments(a, [0, 10, 600_000, PARALLEL_N], threads=1)
    s2 = kw.sort_segments(a, [0, 10, 600_000, PARALLEL_N], threads=2)
    assert np.array_equal(s1.view(np.uint32), s2.view(np.uint32))


def test_max_threads_budget(backend):
    with kwker.config(max_threads=1):
        assert kwker.get_max_threads() == 1
        assert kwker.runtime_info()["threads"]["max_threads"] == 1
        kwker.reset_counters()
        kwker.sort(np.random.default_rng(1).standard_normal(PARALLEL_N))
        engine = kwker.get_isa()
        assert _counters()[engine]["max_threads"] == 1
    with pytest.raises(ValueError, match=">= 1"):
        kwker.set_max_threads(0)
    with pytest.raises(TypeError):
        kwker.set_max_threads(1.5)


def test_set_isa_and_available(backend):
    isas = kwker.available_isas()
    assert isas[0] == "portable" and set(isas) <= set(kwker.ENGINES)
    assert list(isas) == [e for e in kwker.ENGINES if e in isas]  # best last
    assert isas == kwker.runtime_info()["engines"]["supported"]
    for e in isas:
        kwker.set_isa(e)
        assert kwker.get_isa() == e
        assert kwker.runtime_info()["isa_cap"]["source"] == "set_isa"
    kwker.set_isa(None)
    assert kwker.get_isa() == kwker.runtime_info()["engines"]["default"] == isas[-1]
    with pytest.raises(ValueError, match="portable"):
        kwker.set_isa("avx9000")
    with pytest.raises(TypeError):
        kwker.set_isa(3)


def test_set_isa_missing_engine_names_cpu_engines(backend):
    missing = [e for e in kwker.ENGINES if e not in kwker.available_isas()]
    if not missing:
        pytest.skip("this CPU runs every engine, so no engine is missing to request")
    with pytest.raises(ValueError) as exc:
        kwker.set_isa(missing[-1])
    for e in kwker.available_isas():
        assert e in str(exc.value)


def test_algorithms(backend, rng):
    got = kwker.get_algorithms()
    assert got["available"] == ["adaptive", "radix", "parallel", "presorted"]
    assert "adaptive" in got["enabled"]
    a = rng.integers(0, 100, 50_000).astype(np.int32)
    want = np.sort(a)
    for enabled in ({"adaptive"}, {"adaptive", "radix"}, {"adaptive", "parallel"},
                    {"adaptive", "presorted"}, {"adaptive", "radix", "parallel", "presorted"}):
        with kwker.config(algorithms=enabled):
            assert set(kwker.get_algorithms()["enabled"]) == enabled
            assert set(kwker.runtime_info()["algorithms"]["enabled"]) == enabled
            np.testing.assert_array_equal(kwker.sort(a), want)
            np.testing.assert_array_equal(kwker.argsort(a), np.argsort(a, kind="stable"))
    assert kwker.get_algorithms() == got
    with pytest.raises(ValueError, match="'adaptive', 'radix', 'parallel', 'presorted'"):
        kwker.set_algorithms({"adaptive", "bogo"})
    with pytest.raises(ValueError, match="always on"):
        kwker.set_algorithms({"radix"})
    with pytest.raises(TypeError):
        kwker.set_algorithms("radix")


def test_scratch_controls(backend, rng):
    a = rng.standard_normal(200_000)
    with kwker.config(scratch_limit=0):
        assert kwker.runtime_info()["scratch"]["limit_bytes"] == 0
        np.testing.assert_array_equal(kwker.sort(a), np.sort(a))
        np.testing.assert_array_equal(kwker.argsort(a), np.argsort(a, kind="stable"))
    with kwker.config(scratch_limit=None):
        assert kwker.runtime_info()["scratch"]["limit_bytes"] == -1
    kwker.set_scratch_policy(cache_bytes=1 << 16)
    assert kwker.runtime_info()["scratch"]["cache_limit_bytes"] == 1 << 16
    kwker.release_scratch()
    assert kwker.runtime_info()["scratch"]["cached_bytes"] == 0
    with pytest.raises(ValueError):
        kwker.set_scratch_limit(-5)
    with pytest.raises(ValueError):
        kwker.set_scratch_policy(cache_bytes=-1)


def test_config_restores_on_error(backend):
    before = kwker.runtime_info()
    with pytest.raises(RuntimeError, match="boom"):
        with kwker.config(isa="portable", max_threads=1, algorithms={"adaptive"},
                          scratch_limit=0):
            assert kwker.get_isa() == "portable"
            raise RuntimeError("boom")
    after = kwker.runtime_info()
    for key in ("engines", "algorithms", "threads", "isa_cap"):
        assert after[key] == before[key], key
    assert after["scratch"]["limit_bytes"] == before["scratch"]["limit_bytes"]


def test_runtime_info_schema(backend):
    info = kwker.runtime_info()
    assert info["schema"] == "kwker.runtime_info" and info["schema_version"] == 1
    assert info["abi_version"] == 1 and info["version"] == kwker.__version__
    assert info["backend"] == backend
    assert info["engines"]["compiled"] == list(kwker.ENGINES)
    for key in ("vendor", "brand", "logical_cpus", "features"):
        assert key in info["cpu"]
    for e in kwker.ENGINES:
        assert set(info["counters"][e]) >= {"calls", "max_threads"}


def test_self_check(backend):
    for e in kwker.available_isas():
        r = kwker.self_check(e)
        assert r["schema"] == "kwker.self_check" and r["engine"] == e
        assert r["ok"] is True and r["cases"] > 0 and r["failures"] == []
    with pytest.raises(ValueError):
        kwker.self_check("nope")
