"""What a compile helper returns: the artifact, the compiler's own output and the facts parsed from it."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path

from .errors import format_log
from .resources import FunctionResources, ResourceUsage
from .sass import SassInfo, sass_info

_CUDA_ONLY = {"registers", "spill_stores", "spill_loads", "spill_bytes", "stack", "smem", "sass", "sass_count",
              "sass_hash", "kernels", "resources"}


@dataclass
class CompileResult:
    """One successful compile.

    ``artifact`` is the file the compiler wrote; ``command``, ``stdout`` and ``stderr`` are the
    compiler's invocation and own output (kept for the run log: ``log_text``); ``compile_ms`` is
    the compiler's reported compile time when it reports one (ptxas -v), else the wall time of the
    call, which is always in ``wall_ms``.
    """

    artifact: Path
    compiler: str
    command: list[str]
    stdout: str = ""
    stderr: str = ""
    returncode: int = 0
    wall_ms: float = 0.0
    version: str | None = None

    @property
    def compile_ms(self) -> float:
        return self.wall_ms

    @property
    def log_text(self) -> str:
        return format_log(self.command, self.returncode, self.stdout, self.stderr)

    def __getattr__(self, name: str):
        # only reached for missing attributes: say why a CUDA fact is absent on a host result
        if name in _CUDA_ONLY:
            raise AttributeError(f"{name} applies to ptxas/nvcc results; this is a {self.compiler} result")
        raise AttributeError(f"{type(self).__name__!s} has no attribute {name!r}")


@dataclass
class CudaCompileResult(CompileResult):
    """A ptxas/nvcc compile: resource usage from ``-v`` plus SASS facts (computed on first access).

    Totals over all kernels of the file: ``registers`` and ``stack`` and ``smem`` are the largest
    of any kernel (the per-thread/per-block limits that matter), ``spill_stores``/``spill_loads``
    the sum over every function. ``kernels`` lists each kernel's own numbers.
    """

    resources: ResourceUsage = field(default_factory=ResourceUsage)
    arch: str | None = None

    @property
    def compile_ms(self) -> float:
        reported = self.resources.compile_ms
        return reported if reported is not None else self.wall_ms

    @property
    def kernels(self) -> list[FunctionResources]:
        return self.resources.kernels

    def kernel(self, name: str) -> FunctionResources:
        return self.resources.kernel(name)

    @property
    def registers(self) -> int | None:
        return self.resources.registers

    @property
    def spill_stores(self) -> int:
        return self.resources.spill_stores

    @property
    def spill_loads(self) -> int:
        return self.resources.spill_loads

    @property
    def spill_bytes(self) -> int:
        return self.resources.spill_bytes

    @property
    def stack(self) -> int:
        return self.resources.stack

    @property
    def smem(self) -> int:
        return self.resources.smem

    # SASS needs a disassembler run (~0.3 s), so it happens only when asked for, once.
    @functools.cached_property
    def sass(self) -> SassInfo:
        return sass_info(self.artifact)

    @property
    def sass_count(self) -> int:
        return self.sass.count

    @property
    def sass_hash(self) -> str:
        return self.sass.hash

    def summary(self) -> str:
        return (f"{self.compiler} {self.arch or ''}: {self.registers} registers, {self.spill_stores} B spill stores, "
                f"{self.spill_loads} B spill loads, {self.stack} B stack, {self.smem} B smem, "
                f"{self.compile_ms:.1f} ms").replace("  ", " ")


__all__ = ["CompileResult", "CudaCompileResult"]
