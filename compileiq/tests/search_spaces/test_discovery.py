"""Which compiler CompileIQ uses: CIQ_<NAME>, then PATH, then (ptxas, nvcc) the nvidia-cuda-nvcc wheel."""

import os
import stat

import pytest

from compileiq.compilers.discovery import (CompilerNotFoundError, compiler_version, find_clang, find_compiler,
                                          find_gcc, find_nvcc, find_ptxas, wheel_binary)


def fake_cuda_tool(folder, name, release):
    """A real executable that answers --version like a CUDA tool of that release."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(f"#!/bin/sh\necho 'Cuda compilation tools, release {release}, V{release}.99'\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


def test_the_installed_compilers_and_their_versions():
    assert find_ptxas().version >= (12, 0) and find_ptxas().name == "ptxas"
    assert find_nvcc().version == find_ptxas().version
    gcc = find_gcc()
    assert gcc.version[0] >= 10 and gcc.release.count(".") == 2 and compiler_version(gcc.path) == gcc.version
    try:
        clang = find_clang()
    except CompilerNotFoundError as exc:
        pytest.skip(f"clang is not installed here: {exc}")
    assert clang.version[0] >= 11


def test_CIQ_PTXAS_comes_before_PATH(tmp_path, monkeypatch):
    fake = fake_cuda_tool(tmp_path / "cuda-13.5", "ptxas", "13.5")
    monkeypatch.setenv("CIQ_PTXAS", str(fake))
    tc = find_ptxas()
    assert (tc.path, tc.version, tc.release) == (str(fake), (13, 5), "13.5.99")


def test_a_CIQ_variable_naming_nothing_is_an_error_not_a_fall_through(monkeypatch):
    monkeypatch.setenv("CIQ_PTXAS", "/no/such/ptxas")
    with pytest.raises(CompilerNotFoundError, match=r"CIQ_PTXAS='/no/such/ptxas' does not name an executable ptxas; "
                                                    r"fix the path or unset CIQ_PTXAS"):
        find_ptxas()


def test_PATH_comes_before_the_wheel(tmp_path, monkeypatch):
    on_path = fake_cuda_tool(tmp_path / "bin", "ptxas", "13.4")
    fake_cuda_tool(tmp_path / "site" / "nvidia" / "cu13" / "bin", "ptxas", "13.5")
    monkeypatch.delenv("CIQ_PTXAS", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    assert find_ptxas().path == str(on_path)


def test_the_wheel_is_the_last_resort(tmp_path, monkeypatch):
    wheel = fake_cuda_tool(tmp_path / "site" / "nvidia" / "cu13" / "bin", "ptxas", "13.5")
    monkeypatch.delenv("CIQ_PTXAS", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    assert find_ptxas().path == str(wheel) and find_ptxas().version == (13, 5)


def test_nothing_found_names_every_place_and_the_fix(tmp_path, monkeypatch):
    monkeypatch.delenv("CIQ_PTXAS", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    if wheel_binary("ptxas"):
        pytest.skip(f"an nvidia-cuda-nvcc wheel is installed in this environment ({wheel_binary('ptxas')})")
    with pytest.raises(CompilerNotFoundError) as info:
        find_ptxas()
    msg = str(info.value)
    assert "looked in CIQ_PTXAS (unset), PATH, the nvidia-cuda-nvcc wheel" in msg and "pip install nvidia-cuda-nvcc" in msg
    monkeypatch.delenv("CIQ_GCC", raising=False)
    with pytest.raises(CompilerNotFoundError, match=r"no gcc found \(looked in CIQ_GCC \(unset\), PATH\); install gcc"):
        find_gcc()


def test_unknown_compiler_names_are_refused():
    with pytest.raises(ValueError, match="unknown compiler 'icc'"):
        find_compiler("icc")


def test_the_real_wheel_toolchains_when_installed():
    root = os.environ.get("CIQ_TEST_TOOLCHAINS") or os.path.join(os.path.dirname(__file__), "..", "..", "..", "build", "toolchains")
    for minor in ("13.3", "13.5"):
        path = os.path.join(root, f"cuda-{minor}", "nvidia", "cu13", "bin", "ptxas")
        if not os.path.isfile(path):
            pytest.skip(f"{path} is missing: run compileiq/scripts/install_toolchains.sh {os.path.abspath(root)}")
        assert compiler_version(path) == tuple(int(p) for p in minor.split("."))
