"""Each debug pack's O0 and O3 reach its compiler through the normal compile helpers and change the code."""

import pytest

from compileiq.boosters import debug_pack
from compileiq.compilers import CompileError, CompilerNotFoundError, clang, find_compiler, gcc, nvcc, ptxas
from compileiq.examples.ptxas_spill import bundled_cu, bundled_ptx


def tool_or_skip(name):
    try:
        return find_compiler(name)
    except CompilerNotFoundError as exc:
        pytest.skip(f"{name} not available here: {exc}")


def written(tmp_path, compiler, level):
    return debug_pack(compiler).config(level).write(tmp_path / compiler / level)


def test_ptxas_o0_spills_more_than_o3(tmp_path):
    tool_or_skip("ptxas")
    o0 = ptxas(bundled_ptx(), controls=written(tmp_path, "ptxas", "O0"), out=tmp_path / "o0.cubin")
    o3 = ptxas(bundled_ptx(), controls=written(tmp_path, "ptxas", "O3"), out=tmp_path / "o3.cubin")
    base = ptxas(bundled_ptx(), out=tmp_path / "base.cubin")
    assert o0.spill_bytes > o3.spill_bytes
    assert (o3.registers, o3.spill_bytes) == (base.registers, base.spill_bytes)  # O3 is ptxas's default


def test_nvcc_o0_reaches_device_code(tmp_path):
    tool_or_skip("nvcc")
    try:
        o0 = nvcc(bundled_cu(), controls=written(tmp_path, "nvcc", "O0"), out=tmp_path / "o0.cubin")
    except CompileError as exc:  # the pip wheel's nvcc has no cicc and cannot compile .cu files
        pytest.skip(f"this nvcc cannot compile CUDA sources: {exc}")
    o3 = nvcc(bundled_cu(), controls=written(tmp_path, "nvcc", "O3"), out=tmp_path / "o3.cubin")
    base = nvcc(bundled_cu(), out=tmp_path / "base.cubin")
    assert "--options-file" in o0.command
    assert (o0.registers, o0.stack) != (o3.registers, o3.stack)
    assert (o3.registers, o3.spill_bytes) == (base.registers, base.spill_bytes)


@pytest.mark.parametrize("compiler", ["gcc", "clang"])
def test_host_o0_and_o3_differ(tmp_path, compiler, kernel_file):
    tool_or_skip(compiler)
    src = kernel_file
    fn = gcc if compiler == "gcc" else clang
    o0 = fn(src, out=tmp_path / "o0.s", controls=written(tmp_path, compiler, "O0"), kind="asm")
    o3 = fn(src, out=tmp_path / "o3.s", controls=written(tmp_path, compiler, "O3"), kind="asm")
    assert any(a.startswith("@") for a in o0.command)
    assert o0.artifact.read_text() != o3.artifact.read_text()
