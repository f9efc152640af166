"""Fixtures for the compile-helper tests: the bundled kernel, and skips that name what is missing."""

import pytest

from compileiq.compilers import CompilerNotFoundError, find_compiler
from compileiq.compilers.sass import sass_available
from compileiq.examples.ptxas_spill import bundled_cu, bundled_ptx


def _tool_or_skip(name):
    try:
        return find_compiler(name)
    except CompilerNotFoundError as exc:
        pytest.skip(f"{name} not available here: {exc}")


@pytest.fixture
def ptxas_tool():
    return _tool_or_skip("ptxas")


@pytest.fixture
def nvcc_tool():
    return _tool_or_skip("nvcc")


@pytest.fixture
def gcc_tool():
    return _tool_or_skip("gcc")


@pytest.fixture
def clang_tool():
    return _tool_or_skip("clang")


@pytest.fixture
def needs_sass():
    if not sass_available():
        pytest.skip("cuobjdump/nvdisasm not found: pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm")


@pytest.fixture
def spill_ptx():
    return bundled_ptx()


@pytest.fixture
def spill_cu():
    return bundled_cu()
