"""gcc and clang compile helpers for CPU-kernel candidates.

Command order: ``extra`` (fixed flags), then the candidate's controls file, then the sources, then
``libs``. gcc and clang keep the last of conflicting flags, so the candidate overrides ``extra``;
libraries come after the sources because the linker resolves symbols left to right.
"""

from __future__ import annotations

import os
from typing import Sequence

from .invoke import output_path, require_input, run_compiler
from .result import CompileResult
from .toolchain import controls_for, resolve

HOST_KINDS = {"exe": ([], ""), "obj": (["-c"], ".o"), "shared": (["-shared", "-fPIC"], ".so"), "asm": (["-S"], ".s")}


def _compile(name: str, sources, out, controls, extra, libs, timeout, kind, compiler) -> CompileResult:
    if kind not in HOST_KINDS:
        raise ValueError(f"{name}(kind={kind!r}): use one of {', '.join(HOST_KINDS)}")
    srcs = [sources] if isinstance(sources, (str, os.PathLike)) else list(sources)
    if not srcs:
        raise ValueError(f"{name}: no source files given")
    paths = [require_input(name, s) for s in srcs]
    if kind in ("obj", "asm") and len(paths) > 1 and out is not None:
        raise ValueError(f"{name}(kind={kind!r}) with several sources writes one output per source; compile them "
                         "one at a time or use kind='exe'/'shared'")
    tool = resolve(name, compiler)
    flags, suffix = HOST_KINDS[kind]
    applied = controls_for(controls, tool)  # before any output folder exists: a refused file leaves nothing behind
    dest = output_path(out, paths[0].stem, suffix, name)
    cmd = [str(tool.path), *flags, *map(str, extra), *applied, *map(str, paths), "-o", str(dest), *map(str, libs)]
    proc, wall_ms = run_compiler(name, cmd, source=paths[0], timeout=timeout, scratch=dest.parent if out is None else None)
    return CompileResult(artifact=dest, compiler=name, command=cmd, stdout=proc.stdout, stderr=proc.stderr,
                         wall_ms=wall_ms, version=tool.version_str)


def gcc(sources: str | os.PathLike | Sequence[str | os.PathLike], out: str | os.PathLike | None = None,
        controls: str | os.PathLike | None = None, extra: Sequence[str] = (), timeout: float | None = None, *,
        libs: Sequence[str] = (), kind: str = "exe", compiler=None) -> CompileResult:
    """Compile ``sources`` with gcc (``kind``: exe, obj, shared, asm) applying the controls file ``controls``.

    ``compiler``: a Toolchain or a path to use instead of the discovered gcc. ``out`` defaults to a
    file in a new temporary folder (``result.artifact.parent``; the caller removes it).
    """
    return _compile("gcc", sources, out, controls, extra, libs, timeout, kind, compiler)


def clang(sources: str | os.PathLike | Sequence[str | os.PathLike], out: str | os.PathLike | None = None,
          controls: str | os.PathLike | None = None, extra: Sequence[str] = (), timeout: float | None = None, *,
          libs: Sequence[str] = (), kind: str = "exe", compiler=None) -> CompileResult:
    """Compile ``sources`` with clang; the same arguments as ``gcc``."""
    return _compile("clang", sources, out, controls, extra, libs, timeout, kind, compiler)


__all__ = ["gcc", "clang", "HOST_KINDS"]
