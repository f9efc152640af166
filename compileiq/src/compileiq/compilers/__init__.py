"""Compile helpers: run ptxas, nvcc, gcc or clang on a candidate's controls file and read what came out.

    from compileiq.compilers import ptxas
    r = ptxas("kernel.ptx", arch="sm_90", controls="candidate.ctl")
    r.registers, r.spill_stores, r.spill_loads, r.sass_count, r.sass_hash

A failed compile raises CompileError: its ``str`` is one line, the compiler's full output is in
``log_text`` (which the search writes to the run log only). Timing helpers: ``cpu_time`` for CPU
candidates and ``compileiq.compilers.gpu_timing.time_kernel`` for cubins on a GPU.
"""

from __future__ import annotations

from .cpu_timing import TimingResult, cpu_time
from .cuda import nvcc, ptxas
from .discovery import (CompilerNotFoundError, Toolchain, find_clang, find_compiler, find_gcc, find_nvcc,
                        find_ptxas)
from .errors import CompileError
from .host import clang, gcc
from .resources import FunctionResources, ResourceUsage, parse_ptxas_verbose
from .result import CompileResult, CudaCompileResult
from .sass import SassInfo, SassToolError, sass_info


def __getattr__(name: str):
    # compileiq.controls imports compilers.discovery; importing it here at load time would be circular
    if name == "controls_args":
        from ..controls import controls_args
        return controls_args
    if name in ("time_kernel", "GpuUnavailableError"):
        from . import gpu_timing
        return getattr(gpu_timing, name)
    raise AttributeError(f"module 'compileiq.compilers' has no attribute {name!r}")


__all__ = ["ptxas", "nvcc", "gcc", "clang", "controls_args", "CompileResult", "CudaCompileResult", "CompileError",
           "FunctionResources", "ResourceUsage", "parse_ptxas_verbose", "SassInfo", "SassToolError", "sass_info",
           "cpu_time", "TimingResult", "time_kernel", "GpuUnavailableError", "Toolchain", "CompilerNotFoundError",
           "find_compiler", "find_ptxas", "find_nvcc", "find_gcc", "find_clang"]
