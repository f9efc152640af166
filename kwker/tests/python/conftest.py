"""Fixtures: every test that takes `kw` runs once per backend (fast | ctypes) x engine.

Reference orders (`ref`) are computed with NumPy only, from order-preserving uint64 keys, so
they state the documented order independently of the library.
"""
import os
import tempfile
import types

import numpy as np
import pytest

# The suite's processes share the CPUs (Kwker's cpu_share table) only among themselves: a test
# that counts threads must not see the native tests, the wheel smokes or another checkout's run
# busy on the same machine. Read at the first parallel call, so setting it here is in time.
_SHARE_DIR = "/dev/shm" if os.access("/dev/shm", os.W_OK) else tempfile.gettempdir()
_SHARE_FILE = os.environ.setdefault(
    "KWKER_CPU_SHARE_FILE", os.path.join(_SHARE_DIR, f"kwker-cpu-share-tests-{os.getpid()}"))

import kwker
from kwker import _backend

BACKENDS = ("fast", "ctypes")
ENGINES = tuple(kwker.available_isas())
COMBOS = [(b, e) for b in BACKENDS for e in ENGINES]


@pytest.fixture(autouse=True)
def _restore_runtime():
    """Whatever a test changes (engine, threads, algorithms, scratch), undo it."""
    before = _backend.name
    with kwker.config():
        yield
    _backend.use(before)


@pytest.fixture(params=COMBOS, ids=[f"{b}-{e}" for b, e in COMBOS])
def kw(request):
    backend, engine = request.param
    _backend.use(backend)
    kwker.set_isa(engine)
    assert kwker.get_isa() == engine
    return kwker


@pytest.fixture(params=BACKENDS)
def backend(request):
    _backend.use(request.param)
    return request.param


# ---- reference order ----

_SIGN = np.uint64(1 << 63)


def nan_mask(a):
    a = np.asarray(a)
    if a.dtype.kind == "f":
        return np.isnan(a)
    if a.dtype.kind in "mM":
        return np.isnat(a)
    return np.zeros(a.shape, bool)


def keys(a, total):
    """uint64 keys whose unsigned order is the value order; total: -0.0 < 0.0."""
    a = np.asarray(a)
    kind = a.dtype.kind
    if kind == "b":
        return a.astype(np.uint64)
    if kind == "u":
        return a.astype(np.uint64)
    if kind in "mM":
        return np.ascontiguousarray(a).view(np.int64).view(np.uint64) ^ _SIGN
    if kind == "i":
        return a.astype(np.int64).view(np.uint64) ^ _SIGN
    f = a.astype(np.float64)
    if not total:
        f = np.where(f == 0, 0.0, f)
    b = f.view(np.uint64)
    return np.where(b >> np.uint64(63) != 0, ~b, b | _SIGN)


def ref_argsort(a, descending=False, nans_first=False, total=False):
    a = np.ascontiguousarray(np.asarray(a).reshape(-1))
    if a.dtype.byteorder not in "=|":
        a = a.astype(a.dtype.newbyteorder("="))
    k = keys(a, total)
    if descending:
        k = ~k
    nan = nan_mask(a)
    cls = np.where(nan, 0 if nans_first else 2, 1)
    k = np.where(nan, np.uint64(0), k)
    return np.lexsort((np.arange(a.size), k, cls)).astype(np.int64)


def ref_sort(a, descending=False, nans_first=False):
    flat = np.asarray(a).reshape(-1)
    return flat[ref_argsort(flat, descending, nans_first, total=True)]


def bits(a):
    """Bit patterns, so comparisons see -0.0 vs 0.0 and NaN payloads."""
    a = np.ascontiguousarray(a)
    if a.dtype.byteorder not in "=|":
        a = a.astype(a.dtype.newbyteorder("="))
    return a.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])


def assert_same_bits(got, want, what="", nan_bits=False):
    """Bit-identical, except that NaNs only need to be NaN in the same places unless nan_bits
    (libkwker's sort writes canonical NaNs; see test_nan_payloads)."""
    assert got.dtype == want.dtype.newbyteorder("="), (what, got.dtype, want.dtype)
    assert got.shape == want.shape, (what, got.shape, want.shape)
    g, w = bits(got), bits(want)
    if not nan_bits and got.dtype.kind == "f":
        gn, wn = np.isnan(got), np.isnan(want)
        assert np.array_equal(gn, wn), f"{what}: NaN positions differ"
        g, w = np.where(gn, 0, g), np.where(wn, 0, w)
    if not np.array_equal(g, w):
        i = int(np.flatnonzero(g.reshape(-1) != w.reshape(-1))[0])
        raise AssertionError(f"{what}: first difference at {i}: got {got.reshape(-1)[i]!r}, "
                             f"want {want.reshape(-1)[i]!r}")


# ---- inputs ----

DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64", "datetime64[ns]", "timedelta64[s]")


def _base(dtype, n, rng):
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.integers(0, 2, n).astype(bool)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
    if dt.kind in "mM":
        return rng.integers(-2**62, 2**62, n).view(dt)
    return (rng.standard_normal(n) * 1000).astype(dt)


def distributions(dtype):
    dt = np.dtype(dtype)
    names = ["uniform", "sorted", "reversed", "few", "equal"]
    if dt.kind == "f":
        names += ["nan_heavy", "inf", "zeros", "subnormal"]
    if dt.kind in "mM":
        names += ["nat_heavy"]
    if dt.kind in "iu":
        names += ["extremes"]
    return names


def make(dtype, dist, n, rng):
    dt = np.dtype(dtype)
    a = _base(dt, n, rng)
    if dist == "sorted":
        a = np.sort(a)
    elif dist == "reversed":
        a = np.sort(a)[::-1].copy()
    elif dist == "few":
        a = a[rng.integers(0, max(1, min(n, 4)), n)] if n else a
    elif dist == "equal":
        a = np.full(n, a[0], dt) if n else a
    elif dist == "nan_heavy":
        a[rng.random(n) < 0.5] = np.nan
        neg = rng.random(n) < 0.2
        a[neg] = -np.abs(np.array(np.nan, dt))  # negative-signed NaN payloads too
    elif dist == "nat_heavy":
        a[rng.random(n) < 0.5] = np.datetime64("NaT") if dt.kind == "M" else np.timedelta64("NaT")
    elif dist == "inf":
        pick = rng.integers(0, 4, n)
        a = np.where(pick == 0, np.inf, np.where(pick == 1, -np.inf, a)).astype(dt)
        a[pick == 3] = np.nan
    elif dist == "zeros":
        a = np.where(rng.random(n) < 0.5, -0.0, 0.0).astype(dt)
        a[rng.random(n) < 0.2] = 1
    elif dist == "subnormal":
        tiny = np.finfo(dt).smallest_subnormal
        a = (rng.integers(-5, 6, n) * tiny).astype(dt)
    elif dist == "extremes":
        info = np.iinfo(dt)
        a = np.array([info.min, info.max, 0, 1, info.min + 1, info.max - 1], dt)[
            rng.integers(0, 6, n)]
    return np.ascontiguousarray(a)


@pytest.fixture
def ref():
    return types.SimpleNamespace(
        argsort=ref_argsort, sort=ref_sort, bits=bits, same=assert_same_bits,
        nan_mask=nan_mask, make=make, distributions=distributions, DTYPES=DTYPES,
        ENGINES=ENGINES, BACKENDS=BACKENDS)


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


# ---- PyTorch integration ----

@pytest.fixture(scope="session")
def kwker_cache_dir(tmp_path_factory):
    """One KWKER_CACHE_DIR for the whole session: each torch self-check runs once per
    implementation, and the compile backend's tests share one Inductor cache (compiles are
    slow on two cores)."""
    return tmp_path_factory.mktemp("kwker-cache")


@pytest.fixture
def compile_env(kwker_cache_dir, monkeypatch, tmp_path):
    """torch.compile(backend="kwker") tests: the session's caches (Inductor's included), a
    fresh Dynamo and fresh backend counters; yields a folder for the choice cache."""
    import torch
    import kwker.dynamo as dyn
    monkeypatch.setenv("KWKER_CACHE_DIR", str(kwker_cache_dir))
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(kwker_cache_dir / "inductor"))
    monkeypatch.delenv("KWKER_DISABLE", raising=False)
    torch._dynamo.reset()
    dyn.reset_stats()
    yield tmp_path / "choices"
    torch._dynamo.reset()


@pytest.fixture
def torch_ops(kwker_cache_dir, monkeypatch):
    """kwker.torch_ops with the session cache, nothing installed before or after the test."""
    monkeypatch.setenv("KWKER_CACHE_DIR", str(kwker_cache_dir))
    for var in ("KWKER_DISABLE", "KWKER_SELF_CHECK", "KWKER_TEST_CORRUPT_TORCH_OP"):
        monkeypatch.delenv(var, raising=False)
    import kwker.torch_ops as ops
    ops.uninstall()
    yield ops
    ops.uninstall()


@pytest.fixture
def no_thresholds(monkeypatch):
    """Every override runs from one element on, so small tensors reach Kwker's kernels."""
    from kwker.torch_ops import _thresholds
    monkeypatch.setattr(_thresholds, "table",
                        lambda kind, ops: {op: [0] * _thresholds.KWKER_DTYPE_COUNT for op in ops})


@pytest.fixture(autouse=True)
def _fresh_disable_notices():
    """KWKER_DISABLE's notice comes once per process and integration: each test starts as a
    fresh process would, so a test that runs under KWKER_DISABLE=1 sees (and must expect) it."""
    from kwker import _integrations
    _integrations._noticed.clear()
    yield
    _integrations._noticed.clear()


def pytest_sessionfinish(session, exitstatus):
    if _SHARE_FILE.endswith(f"-tests-{os.getpid()}"):
        try:
            os.unlink(_SHARE_FILE)
        except OSError:
            pass
