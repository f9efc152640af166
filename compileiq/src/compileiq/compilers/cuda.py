"""ptxas and nvcc compile helpers: apply a candidate's controls file, compile, parse ``-v``.

The candidate's controls come after ``extra`` on the command line, so where both set the same
option the candidate wins (ptxas and nvcc keep the last value of a repeated option).
"""

from __future__ import annotations

import os
from typing import Sequence

from .errors import CompileError
from .invoke import output_path, require_input, run_compiler
from .resources import parse_ptxas_verbose
from .result import CudaCompileResult
from .toolchain import controls_for, resolve

NVCC_KINDS = {"cubin": ("-cubin", ".cubin"), "fatbin": ("-fatbin", ".fatbin"), "obj": ("-c", ".o"),
              "ptx": ("-ptx", ".ptx")}


def ptxas(ptx_path: str | os.PathLike, arch: str = "sm_90", controls: str | os.PathLike | None = None,
          extra: Sequence[str] = (), out: str | os.PathLike | None = None, timeout: float | None = None,
          *, compiler=None) -> CudaCompileResult:
    """Assemble ``ptx_path`` into a cubin for ``arch`` with the controls file ``controls`` (open or vendor).

    ``compiler``: a Toolchain or a path to use instead of the discovered ptxas (CIQ_PTXAS, PATH, the
    nvidia-cuda-nvcc wheel). ``out``: the cubin path; by default a new temporary folder holds it
    (``result.artifact.parent``; the caller removes it). Raises CompileError on failure or timeout.
    """
    src = require_input("ptxas", ptx_path)
    tool = resolve("ptxas", compiler)
    applied = controls_for(controls, tool)  # before any output folder exists: a refused file leaves nothing behind
    dest = output_path(out, src.stem, ".cubin", "ptxas")
    cmd = [str(tool.path), f"-arch={arch}", "-v", *map(str, extra), *applied, str(src), "-o", str(dest)]
    proc, wall_ms = run_compiler("ptxas", cmd, source=src, timeout=timeout, scratch=dest.parent if out is None else None)
    return CudaCompileResult(artifact=dest, compiler="ptxas", command=cmd, stdout=proc.stdout, stderr=proc.stderr,
                             wall_ms=wall_ms, version=tool.version_str, arch=arch,
                             resources=parse_ptxas_verbose(proc.stderr + "\n" + proc.stdout))


def nvcc(cu_path: str | os.PathLike, arch: str = "sm_90", controls: str | os.PathLike | None = None,
         extra: Sequence[str] = (), out: str | os.PathLike | None = None, timeout: float | None = None,
         *, kind: str = "cubin", compiler=None) -> CudaCompileResult:
    """Compile ``cu_path`` with nvcc for ``arch`` (``kind``: cubin, fatbin, obj or ptx).

    ptxas reports its resource usage through ``-Xptxas -v`` (not for kind="ptx", which stops before
    ptxas). ``compiler``: a Toolchain or a path instead of the discovered nvcc.
    """
    if kind not in NVCC_KINDS:
        raise ValueError(f"nvcc(kind={kind!r}): use one of {', '.join(NVCC_KINDS)}")
    src = require_input("nvcc", cu_path)
    tool = resolve("nvcc", compiler)
    flag, suffix = NVCC_KINDS[kind]
    applied = controls_for(controls, tool)
    dest = output_path(out, src.stem, suffix, "nvcc")
    verbose = [] if kind == "ptx" else ["-Xptxas", "-v"]
    cmd = [str(tool.path), f"-arch={arch}", flag, *verbose, *map(str, extra), *applied, str(src), "-o", str(dest)]
    proc, wall_ms = run_compiler("nvcc", cmd, source=src, timeout=timeout, scratch=dest.parent if out is None else None)
    return CudaCompileResult(artifact=dest, compiler="nvcc", command=cmd, stdout=proc.stdout, stderr=proc.stderr,
                             wall_ms=wall_ms, version=tool.version_str, arch=arch,
                             resources=parse_ptxas_verbose(proc.stderr + "\n" + proc.stdout))


__all__ = ["ptxas", "nvcc", "CompileError", "NVCC_KINDS"]
