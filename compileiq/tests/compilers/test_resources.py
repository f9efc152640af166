"""Resource usage parsed from real ``ptxas -v`` / ``nvcc -Xptxas -v`` output, and from its documented shape."""

import textwrap

from compileiq.compilers import nvcc, parse_ptxas_verbose, ptxas

SMEM_CU = textwrap.dedent("""
    __device__ __noinline__ float helper(const float* p, int i) {
        float local[64];
        for (int k = 0; k < 64; ++k) local[k] = p[(i + k) & 1023];
        float s = 0.f;
        for (int k = 0; k < 64; ++k) s += local[(k * 7 + i) & 63];
        return s;
    }
    extern "C" __global__ void tiled(const float* in, float* out) {
        __shared__ float tile[1024];
        tile[threadIdx.x] = in[threadIdx.x];
        __syncthreads();
        out[threadIdx.x] = tile[1023 - threadIdx.x] + helper(in, threadIdx.x);
    }
    extern "C" __global__ void small(float* out) { out[threadIdx.x] = 1.0f; }
""")


def test_spill_kernel_default_build_spills(ptxas_tool, spill_ptx, tmp_path):
    r = ptxas(spill_ptx, arch="sm_90", out=tmp_path / "k.cubin")
    assert r.artifact.is_file() and r.artifact.stat().st_size > 0
    (k,) = r.kernels
    assert k.name == "spill_kernel" and k.arch == "sm_90" and k.entry
    assert r.registers == k.registers and 0 < r.registers <= 80  # __launch_bounds__(256, 3) caps it at 80
    assert r.spill_stores > 0 and r.spill_loads > 0, r.stderr
    assert r.stack >= 4 and r.smem == 0
    assert r.spill_bytes == r.spill_stores + r.spill_loads
    assert k.compile_ms is not None and r.compile_ms == k.compile_ms
    assert "Used" in r.stderr  # the compiler's own output is kept on the result


def test_nvcc_reports_smem_device_functions_and_every_kernel(nvcc_tool, tmp_path):
    src = tmp_path / "tiled.cu"
    src.write_text(SMEM_CU)
    r = nvcc(src, arch="sm_90", out=tmp_path / "tiled.cubin")
    names = {k.name for k in r.kernels}
    assert names == {"tiled", "small"}
    assert r.kernel("tiled").smem == 4096 and r.kernel("small").smem == 0
    assert r.smem == 4096
    # the helper's local array lands on a stack frame; the device function gets a record of its own
    assert [f.name for f in r.resources.functions if not f.entry] == ["_Z6helperPKfi"]
    assert r.kernel("tiled").stack > 0 and r.stack == r.kernel("tiled").stack
    assert r.kernel("tiled").barriers == 1


def test_parser_reads_the_documented_format():
    text = textwrap.dedent("""\
        ptxas info    : 0 bytes gmem
        ptxas info    : Compiling entry function 'a' for 'sm_90'
        ptxas info    : Function properties for a
            80 bytes stack frame, 120 bytes spill stores, 100 bytes spill loads
        ptxas info    : Used 32 registers, used 1 barriers, 80 bytes cumulative stack size, 2048 bytes smem, 380 bytes cmem[0]
        ptxas info    : Compile time = 16.5 ms
        ptxas info    : Compiling entry function 'b' for 'sm_90'
        ptxas info    : Function properties for b
            0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
        ptxas info    : Used 64 registers, used 0 barriers, 360 bytes cmem[0]
        ptxas info    : Compile time = 3.5 ms
        """)
    u = parse_ptxas_verbose(text)
    assert [k.name for k in u.kernels] == ["a", "b"]
    a = u.kernel("a")
    assert (a.registers, a.barriers, a.stack, a.spill_stores, a.spill_loads, a.smem) == (32, 1, 80, 120, 100, 2048)
    assert a.cmem == {0: 380} and a.cumulative_stack == 80
    assert u.registers == 64 and u.spill_stores == 120 and u.spill_loads == 100 and u.stack == 80
    assert u.compile_ms == 20.0


def test_parser_on_unrelated_text_reports_nothing():
    u = parse_ptxas_verbose("warning: something\n")
    assert u.kernels == [] and u.registers is None and u.spill_bytes == 0 and u.compile_ms is None
