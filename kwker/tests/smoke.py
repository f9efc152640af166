"""Smoke test against a non-editable wheel install: python kwker/tests/smoke.py (run from /tmp)."""
import os
import sys

import numpy as np

import kwker
from kwker import _backend, _locate

assert _backend.name == "fast", f"expected the fast backend, got {_backend.name} " \
    f"({_backend.fallback_reason})"
assert kwker.runtime_info()["backend"] == "fast"
assert "site-packages" in kwker.__file__ or "dist-packages" in kwker.__file__, kwker.__file__

rng = np.random.default_rng(0)
for engine in kwker.available_isas():
    with kwker.config(isa=engine):
        kwker.reset_counters()
        for dtype in ("int8", "int32", "uint64", "float16", "float32", "float64"):
            a = (rng.standard_normal(5000) * 100).astype(dtype)
            assert np.array_equal(kwker.sort(a), np.sort(a)), (engine, dtype)
            assert np.array_equal(kwker.argsort(a), np.argsort(a, kind="stable")), (engine, dtype)
        m = rng.standard_normal((30, 40))
        assert np.array_equal(kwker.sort(m, axis=0), np.sort(m, axis=0)), engine
        v, i = kwker.topk(m, 3)
        assert np.array_equal(i, np.argsort(-m, axis=-1, kind="stable")[:, :3]), engine
        assert kwker.runtime_info()["counters"][engine]["calls"] >= 14, engine
        assert kwker.self_check(engine)["ok"], engine

# kwker.frame ships in the wheel and imports no dataframe library; in this environment (the
# wheel alone, no extras) a call says how to install what it needs.
import kwker.frame  # noqa: E402
assert "pandas" not in sys.modules and "polars" not in sys.modules
try:
    import pandas  # noqa: F401
except ImportError:
    try:
        kwker.frame.sort_values(None)
    except ImportError as exc:
        assert 'pip install "kwker[frame]"' in str(exc), exc
    else:
        raise AssertionError("kwker.frame.sort_values ran without pandas")

paths = _locate.sdk_paths()
for key in ("include_dir", "lib_dir", "cmake_dir", "doctor"):
    assert paths[key] and os.path.exists(paths[key]), (key, paths)
for header in ("kwker.h", "kwker.hpp"):
    assert os.path.exists(os.path.join(paths["include_dir"], "kwker", header)), header
assert os.path.exists(os.path.join(paths["lib_dir"], "pkgconfig", "kwker.pc"))
# The CPU backend's decode step: the generic library and the source of decoder packages ship
# in the wheel, and a package compiles against the installed headers and libkwker (no torch).
import tempfile  # noqa: E402

from kwker.cpu_backend import _package  # noqa: E402

assert _package.generic().kwd_build_info() == b"generic"
shapes = dict(layers=1, hidden=32, heads=2, kv_heads=1, head_dim=16, inter=48, vocab=20,
              mode=0, group=32, lm_mode=2, lm_group=32)
lib, info = _package.load(shapes, kwker.get_isa(), cache_dir=tempfile.mkdtemp())
assert info["kind"] == "package", info
assert b"hidden=32" in lib.kwd_build_info(), lib.kwd_build_info()
print(f"smoke ok (kwker {kwker.__version__}, engines {', '.join(kwker.available_isas())}, "
      f"python {sys.version.split()[0]})")
