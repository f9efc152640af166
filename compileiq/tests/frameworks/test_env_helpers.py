"""Framework helpers set their environment for one candidate and restore it exactly afterwards.

None of these tests imports Triton, Helion or FlashInfer: the helpers must work without them."""

import os
import sys
import types
from pathlib import Path

import pytest

from compileiq.compilers import CompilerNotFoundError, find_ptxas
from compileiq.controls import write_controls
from compileiq.frameworks import (FrameworkCacheWarning, cache_bust_advice, cache_bust_table, flashinfer_candidate,
                                  helion_candidate, nvcc_build_dir, triton_candidate)

TRITON_VARS = ("TRITON_ALWAYS_COMPILE", "TRITON_CACHE_DIR", "PTXAS_OPTIONS", "TRITON_PTXAS_PATH",
               "TRITON_PTXAS_BLACKWELL_PATH")


@pytest.fixture
def ptxas_tool():
    try:
        return find_ptxas()
    except CompilerNotFoundError as exc:
        pytest.skip(f"ptxas not available here: {exc}")


@pytest.fixture
def open_ctl(tmp_path, ptxas_tool):
    return write_controls(tmp_path / "cand.ctl", "ptxas", ptxas_tool.version_str, ["-O1", "--fmad=false"])


@pytest.fixture
def no_triton_compiler(monkeypatch):
    # these tests look at the environment only; pretend Triton's compiler module is not imported yet
    monkeypatch.delitem(sys.modules, "triton.backends.nvidia.compiler", raising=False)


def _snapshot(names):
    return {n: os.environ.get(n) for n in names}


def test_triton_candidate_sets_and_restores(monkeypatch, open_ctl, ptxas_tool, no_triton_compiler):
    monkeypatch.setenv("TRITON_CACHE_DIR", "/users/own/cache")  # restored to this, not removed
    monkeypatch.setenv("PTXAS_OPTIONS", "-O3")  # an earlier setting must not leak into the candidate
    monkeypatch.delenv("TRITON_ALWAYS_COMPILE", raising=False)
    before = _snapshot(TRITON_VARS)
    with triton_candidate(controls=open_ctl, ptxas_options=["-lineinfo"]) as cand:
        assert os.environ["TRITON_ALWAYS_COMPILE"] == "1"
        assert os.environ["TRITON_CACHE_DIR"] == str(cand.cache_dir) and cand.cache_dir.is_dir()
        assert not any(cand.cache_dir.iterdir())
        assert os.environ["TRITON_PTXAS_PATH"] == os.environ["TRITON_PTXAS_BLACKWELL_PATH"] == ptxas_tool.path
        opts = os.environ["PTXAS_OPTIONS"].split(" ")
        assert opts[0] == "-lineinfo" and opts[1] == "--options-file" and opts[2].endswith(".ptxas.args")
        assert cand.ptx_options == os.environ["PTXAS_OPTIONS"] and cand.ptxas_args == opts
        cache = cand.cache_dir
    assert _snapshot(TRITON_VARS) == before
    assert not cache.exists()
    with triton_candidate() as base:  # the baseline: no options at all, and a cache of its own
        assert "PTXAS_OPTIONS" not in os.environ and base.ptx_options is None and base.cache_dir != cache
    assert _snapshot(TRITON_VARS) == before


def test_triton_candidate_restores_after_an_error(open_ctl, no_triton_compiler):
    before = _snapshot(TRITON_VARS)
    with pytest.raises(RuntimeError):
        with triton_candidate(controls=open_ctl):
            raise RuntimeError("evaluation failed")
    assert _snapshot(TRITON_VARS) == before


def test_triton_candidate_warns_when_triton_is_already_imported(monkeypatch, open_ctl):
    monkeypatch.setitem(sys.modules, "triton.backends.nvidia.compiler", types.ModuleType("stand_in"))
    with pytest.warns(FrameworkCacheWarning, match="pass ptx_options=cand.ptx_options"):
        with triton_candidate(controls=open_ctl):
            pass
    with triton_candidate(controls=open_ctl, explicit=True):  # the caller passes ptx_options itself: quiet
        pass


def test_triton_candidate_keeps_cache_on_request(tmp_path, no_triton_compiler):
    with triton_candidate(cache_root=tmp_path / "caches", keep_cache=True) as cand:
        pass
    assert cand.cache_dir.is_dir() and cand.cache_dir.parent == tmp_path / "caches"


def test_options_with_spaces_are_refused(no_triton_compiler):
    with pytest.raises(ValueError, match="splits its options string on spaces"):
        with triton_candidate(ptxas_options=["--options-file", "/a path/x"]):
            pass


def test_helion_candidate_with_open_controls(open_ctl, monkeypatch, no_triton_compiler):
    monkeypatch.delenv("HELION_SKIP_CACHE", raising=False)
    before = _snapshot(TRITON_VARS + ("HELION_SKIP_CACHE",))
    with helion_candidate(open_ctl) as cand:
        assert os.environ["HELION_SKIP_CACHE"] == "1" and os.environ["TRITON_ALWAYS_COMPILE"] == "1"
        assert cand.config == {}  # an open file cannot go through advanced_controls_file (--apply-controls)
        assert "--options-file" in cand.ptx_options and os.environ["PTXAS_OPTIONS"] == cand.ptx_options
    assert _snapshot(TRITON_VARS + ("HELION_SKIP_CACHE",)) == before


def test_helion_candidate_with_a_vendor_acf_checks_it_first(tmp_path, ptxas_tool, no_triton_compiler):
    acf = tmp_path / "pack.acf"
    acf.write_bytes(os.urandom(2304))  # opaque bytes: what a vendor ACF looks like from outside
    before = _snapshot(TRITON_VARS + ("HELION_SKIP_CACHE",))
    if ptxas_tool.version < (13, 3):
        with pytest.raises(Exception, match="13.3"):
            with helion_candidate(acf):
                pass
    else:
        with pytest.raises(Exception, match="(?i)controls"):  # random bytes are no valid ACF for any ptxas
            with helion_candidate(acf):
                pass
    assert _snapshot(TRITON_VARS + ("HELION_SKIP_CACHE",)) == before


def test_flashinfer_candidate_flags_workspace_and_restore(monkeypatch, open_ctl):
    monkeypatch.setenv("FLASHINFER_EXTRA_CUDAFLAGS", "-DCCCL_DISABLE_CTK_COMPATIBILITY_CHECK")
    monkeypatch.delenv("FLASHINFER_WORKSPACE_BASE", raising=False)
    before = _snapshot(("FLASHINFER_EXTRA_CUDAFLAGS", "FLASHINFER_WORKSPACE_BASE"))
    try:
        from compileiq.compilers import find_nvcc
        find_nvcc()
    except CompilerNotFoundError as exc:
        pytest.skip(f"nvcc not available here: {exc}")
    with flashinfer_candidate(open_ctl, extra_cuda_flags=["-lineinfo"]) as cand:
        flags = os.environ["FLASHINFER_EXTRA_CUDAFLAGS"].split()
        assert flags[:2] == ["-DCCCL_DISABLE_CTK_COMPATIBILITY_CHECK", "-lineinfo"]
        assert flags[2] == "--options-file" and flags[2:] == cand.cuda_flags[1:]
        # the ptxas options reach nvcc's ptxas through its own options file
        assert Path(flags[3]).read_text().split() == ["--ptxas-options=-O1", "--ptxas-options=--fmad=false"]
        assert os.environ["FLASHINFER_WORKSPACE_BASE"] == str(cand.cache_dir) and cand.cache_dir.is_dir()
        ws = cand.cache_dir
    assert _snapshot(("FLASHINFER_EXTRA_CUDAFLAGS", "FLASHINFER_WORKSPACE_BASE")) == before and not ws.exists()


def test_flashinfer_candidate_warns_about_prebuilt_packages(tmp_path, monkeypatch):
    fake = tmp_path / "site"
    (fake / "flashinfer_cubin").mkdir(parents=True)
    (fake / "flashinfer_cubin" / "__init__.py").write_text("raise ImportError('must not be imported')\n")
    monkeypatch.syspath_prepend(str(fake))
    with pytest.warns(FrameworkCacheWarning, match="flashinfer_cubin is installed.*pip uninstall"):
        with flashinfer_candidate():
            pass


def test_nvcc_build_dir_is_fresh_and_removed(tmp_path):
    with nvcc_build_dir(root=tmp_path) as a, nvcc_build_dir(root=tmp_path) as b:
        assert a != b and a.is_dir() and not any(a.iterdir())
        (a / "k.o").write_bytes(b"stale")
    assert not a.exists() and not b.exists()
    with nvcc_build_dir(root=tmp_path, keep=True) as kept:
        pass
    assert kept.is_dir()


def test_cache_bust_advice_covers_every_framework():
    advice = cache_bust_advice()
    assert set(advice) == {"Triton", "Helion", "FlashInfer", "raw nvcc"}
    assert "TRITON_ALWAYS_COMPILE=1" in advice["Triton"].how and "HELION_SKIP_CACHE=1" in advice["Helion"].how
    assert "flashinfer-cubin" in advice["FlashInfer"].how
    table = cache_bust_table()
    assert table.splitlines()[0].startswith("| framework |") and table.count("\n") == 5
