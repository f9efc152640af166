"""Triton end to end without a GPU: compile a kernel for an explicit sm_90 target and show that a
candidate's controls change the cubin (and that the same candidate gives the same cubin)."""

import hashlib
import subprocess
import sys
import textwrap

import pytest

from compileiq.compilers import CompilerNotFoundError, find_ptxas
from compileiq.compilers.sass import parse_sass, sass_available
from compileiq.controls import write_controls
from compileiq.frameworks import triton_candidate

triton = pytest.importorskip("triton", reason="triton is not installed (pip install triton==3.9.0)")
tl = pytest.importorskip("triton.language")
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402

KERNEL_SRC = """
import triton
import triton.language as tl


@triton.jit
def scale_add(x, y, out, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    a = tl.load(x + offs, mask=m)
    b = tl.load(y + offs, mask=m)
    tl.store(out + offs, tl.sqrt(a * alpha + b) * a, mask=m)
"""
SIGNATURE = {"x": "*fp32", "y": "*fp32", "out": "*fp32", "n": "i32", "alpha": "fp32", "BLOCK": "constexpr"}
TARGET = GPUTarget("cuda", 90, 32)



@triton.jit
def scale_add(x, y, out, n, alpha, BLOCK: tl.constexpr):  # the same kernel as KERNEL_SRC (Triton reads source files)
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    a = tl.load(x + offs, mask=m)
    b = tl.load(y + offs, mask=m)
    tl.store(out + offs, tl.sqrt(a * alpha + b) * a, mask=m)


@pytest.fixture
def ptxas_tool(monkeypatch):
    monkeypatch.setenv("TRITON_DEFAULT_FP_FUSION", "1")  # Triton 3.9 warns while it is unset
    try:
        return find_ptxas()
    except CompilerNotFoundError as exc:
        pytest.skip(f"ptxas not available here: {exc}")


def _cubin(ptx_options) -> bytes:
    src = ASTSource(scale_add, signature=SIGNATURE, constexprs={"BLOCK": 1024})
    opts = {"ptx_options": ptx_options} if ptx_options else {}
    return triton.compile(src, target=TARGET, options=opts).asm["cubin"]


def _sass_count(cubin: bytes, tmp_path) -> int | None:
    if not sass_available():
        return None
    from compileiq.compilers.sass import disassemble
    f = tmp_path / f"{hashlib.sha256(cubin).hexdigest()[:12]}.cubin"
    f.write_bytes(cubin)
    return parse_sass(disassemble(f)).count


def test_candidate_changes_the_cubin_in_process(ptxas_tool, tmp_path):
    ctl = write_controls(tmp_path / "o0.ctl", "ptxas", ptxas_tool.version_str, ["-O0"])
    with triton_candidate(explicit=True) as base:
        k_base = _cubin(base.ptx_options)
        assert any(base.cache_dir.rglob("*")), "Triton did not write into the candidate's fresh cache"
    with triton_candidate(controls=ctl, explicit=True) as cand:
        k_cand = _cubin(cand.ptx_options)
    with triton_candidate(explicit=True) as again:
        k_again = _cubin(again.ptx_options)
    assert k_base == k_again  # same candidate, fresh cache, same binary
    assert k_cand != k_base
    # built by the ptxas CompileIQ discovered, not the one bundled with Triton
    assert f"release {ptxas_tool.version_str}".encode() in k_base
    counts = _sass_count(k_base, tmp_path), _sass_count(k_cand, tmp_path)
    if counts[0] is not None:
        assert counts[1] > counts[0]  # -O0 keeps every instruction ptxas would have optimised away


CHILD = KERNEL_SRC + textwrap.dedent("""
    import hashlib
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    src = ASTSource(scale_add, signature={sig!r}, constexprs={{"BLOCK": 1024}})
    k = triton.compile(src, target=GPUTarget("cuda", 90, 32))
    print(hashlib.sha256(k.asm["cubin"]).hexdigest(), k.metadata.ptx_options)
""")


def _child(tmp_path, env_note: str) -> tuple[str, str]:
    script = tmp_path / f"child_{env_note}.py"
    script.write_text(CHILD.format(sig=SIGNATURE))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, check=True)
    digest, opts = out.stdout.strip().split(" ", 1)
    return digest, opts


def test_candidate_reaches_a_fresh_process_through_the_environment(ptxas_tool, tmp_path):
    ctl = write_controls(tmp_path / "o1.ctl", "ptxas", ptxas_tool.version_str, ["-O0"])
    with triton_candidate():
        base = _child(tmp_path, "base")
    # explicit: this process imported Triton, but the options go to a child through the environment
    with triton_candidate(controls=ctl, explicit=True) as cand:
        tuned = _child(tmp_path, "cand")
    assert base[1] == "None" and tuned[1] == cand.ptx_options  # Triton took PTXAS_OPTIONS as its default
    assert tuned[0] != base[0]
