"""SASS instruction count and hash: stable for identical builds, different for a different -O level."""

import pytest

from compileiq.compilers import gcc, ptxas
from compileiq.compilers.sass import SassToolError, find_tool, parse_sass

LISTING = """
	code for sm_90
		Function : k
	.headerflags	@"EF_CUDA_SM90 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)"
        /*{a0}*/                   MOV R1, c[0x0][0x28] ;                  /* 0x00000a0000017a02 */
                                                                             /* 0x000fe40000000f00 */
        /*{a1}*/                   EXIT ;                                  /* 0x000000000000794d */
        /*{a2}*/                   NOP;                                    /* 0x0000000000007918 */
"""


def test_hash_ignores_addresses_encodings_and_spacing():
    one = parse_sass(LISTING.format(a0="0000", a1="0010", a2="0020"))
    two = parse_sass(LISTING.format(a0="0100", a1="0110", a2="0120").replace("/* 0x0000", "/* 0xffff"))
    assert one.count == 3 and one.nops == 1 and one.count_without_nops == 2 and one.functions == {"k": 3}
    assert one.hash == two.hash
    assert parse_sass(LISTING.format(a0="0000", a1="0010", a2="0020").replace("MOV R1", "MOV R2")).hash != one.hash


def test_identical_builds_share_count_and_hash_and_O0_differs(ptxas_tool, needs_sass, spill_ptx, tmp_path):
    a = ptxas(spill_ptx, out=tmp_path / "a.cubin")
    b = ptxas(spill_ptx, out=tmp_path / "b.cubin")
    o0 = ptxas(spill_ptx, extra=["-O0"], out=tmp_path / "o0.cubin")
    assert a.sass_count == b.sass_count > 50
    assert a.sass_hash == b.sass_hash
    assert o0.sass_hash != a.sass_hash and o0.sass_count != a.sass_count
    assert a.sass.functions == {"spill_kernel": a.sass_count}


def test_cuda_facts_are_absent_on_host_results(gcc_tool, tmp_path):
    src = tmp_path / "m.c"
    src.write_text("int main(void) { return 0; }\n")
    r = gcc(src, out=tmp_path / "m")
    with pytest.raises(AttributeError, match="sass_count applies to ptxas/nvcc results; this is a gcc result"):
        r.sass_count


def test_missing_disassembler_names_the_wheel(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("CUDA_HOME", str(tmp_path))
    monkeypatch.setattr("compileiq.compilers.sass._cuda_dirs", lambda: [tmp_path])
    monkeypatch.setattr("compileiq.compilers.sass._wheel_dirs", lambda: [])
    find_tool.cache_clear()
    try:
        with pytest.raises(SassToolError, match="pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm"):
            find_tool("cuobjdump")
    finally:
        find_tool.cache_clear()
