"""Environment variables and import-time behaviour, each in a fresh interpreter."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

import kwker


def run(code, **env):
    full = {k: v for k, v in os.environ.items() if not k.startswith("KWKER_")}
    full.update(env)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=full,
                          capture_output=True, text=True, timeout=120)


WARN_PROBE = """
import warnings, json
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    import kwker
    kwker.sort([3, 1])
print(json.dumps({"warnings": [[c.category.__name__, str(c.message)] for c in w],
                  "info": kwker.runtime_info()}))
"""


def test_unknown_kwker_isa_warns_once():
    r = run(WARN_PROBE, KWKER_ISA="avx9000")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    info = out["info"]
    msg = info["isa_cap"]["warning"]
    assert msg and "avx9000" in msg
    assert out["warnings"] == [["RuntimeWarning", msg]]
    assert info["engines"]["selected"] == info["engines"]["default"]


def test_no_warning_without_kwker_isa():
    r = run(WARN_PROBE)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["warnings"] == []


def test_kwker_isa_caps_and_set_isa_none_overrides():
    code = """
    import json, kwker
    a = kwker.get_isa()
    kwker.set_isa(None)
    print(json.dumps([a, kwker.get_isa(), kwker.runtime_info()["isa_cap"]]))
    """
    r = run(code, KWKER_ISA="portable")
    assert r.returncode == 0, r.stderr
    capped, after, cap = json.loads(r.stdout)
    assert capped == "portable"
    assert after == kwker.available_isas()[-1]


def test_kwker_isa_above_cpu_is_clamped():
    missing = [e for e in kwker.ENGINES if e not in kwker.available_isas()]
    if not missing:
        pytest.skip("this CPU runs every engine, so no cap can be above it")
    r = run("import kwker; print(kwker.get_isa())", KWKER_ISA=missing[-1])
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == kwker.available_isas()[-1]


def test_kwker_isa_each_engine():
    for e in kwker.available_isas():
        r = run("import kwker, json; print(json.dumps([kwker.get_isa(), "
                "kwker.runtime_info()['isa_cap']]))", KWKER_ISA=e)
        assert r.returncode == 0, r.stderr
        isa, cap = json.loads(r.stdout)
        assert isa == e and cap["value"] == e and cap["source"] == "KWKER_ISA"


def test_backend_env():
    code = "import kwker; from kwker import _backend; print(_backend.name, " \
           "kwker.runtime_info()['backend'])"
    assert run(code).stdout.split() == ["fast", "fast"]
    assert run(code, KWKER_BACKEND="ctypes").stdout.split() == ["ctypes", "ctypes"]
    r = run(code, KWKER_BACKEND="turbo")
    assert r.returncode != 0 and "KWKER_BACKEND='turbo'" in r.stderr


def test_ctypes_fallback_when_fast_missing():
    code = """
    import sys
    class Block:
        def find_spec(self, name, path=None, target=None):
            if name == "kwker._fast":
                raise ImportError("blocked for the test")
    sys.meta_path.insert(0, Block())
    import kwker
    from kwker import _backend
    print(_backend.name, kwker.sort([2, 1]).tolist(), bool(_backend.fallback_reason))
    """
    r = run(code)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["ctypes", "[1,", "2]", "True"]


def test_kwker_library_env_missing_file():
    r = run("import kwker", KWKER_BACKEND="ctypes", KWKER_LIBRARY="/nonexistent/libkwker.so")
    assert r.returncode != 0 and "KWKER_LIBRARY" in r.stderr
