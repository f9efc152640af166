"""Make a Triton kernel really recompile with a candidate's ptxas options.

Triton caches compiled kernels on disk (TRITON_CACHE_DIR) and would serve the cached cubin to
every candidate; TRITON_ALWAYS_COMPILE=1 plus a fresh cache folder per evaluation forces a new
compile. Triton 3.9 passes extra ptxas options from ``ptx_options`` (a compile/launch option) and
takes its default from the PTXAS_OPTIONS variable, which it reads once, when
``triton.backends.nvidia.compiler`` is imported. It runs its own bundled ptxas unless
TRITON_PTXAS_PATH (before sm_90) / TRITON_PTXAS_BLACKWELL_PATH (sm_90 and newer) name another; the
bundled one is older than 13.3 and cannot read vendor controls files.
"""

from __future__ import annotations

import contextlib
import os
import sys
import warnings
from typing import Iterator, Sequence

from ..compilers.discovery import CompilerNotFoundError, find_ptxas
from ..compilers.toolchain import controls_for, resolve
from ._env import FrameworkCacheWarning, FrameworkCandidate, fresh_dir, join_options, patched_environ

TRITON_COMPILER_MODULE = "triton.backends.nvidia.compiler"


def candidate_ptxas(controls, extra: Sequence[str], ptxas) -> tuple[object | None, list[str]]:
    """The ptxas to use and the candidate's ptxas arguments (``extra`` first, the controls last)."""
    tool = None
    if ptxas is not None:
        tool = resolve("ptxas", ptxas)
    else:
        try:
            tool = find_ptxas()
        except CompilerNotFoundError:
            if controls is not None:
                raise
    args = [str(a) for a in extra]
    if controls is not None:
        args += controls_for(controls, tool)
    return tool, args


def triton_env(tool, args: list[str], cache_dir) -> dict[str, str | None]:
    env: dict[str, str | None] = {
        "TRITON_ALWAYS_COMPILE": "1",
        "TRITON_CACHE_DIR": str(cache_dir),
        # removed when the candidate has no options, so no earlier setting leaks into it
        "PTXAS_OPTIONS": join_options(args, "triton_candidate"),
    }
    if tool is not None:
        env["TRITON_PTXAS_PATH"] = str(tool.path)
        env["TRITON_PTXAS_BLACKWELL_PATH"] = str(tool.path)
    return env


@contextlib.contextmanager
def triton_candidate(controls: str | os.PathLike | None = None, ptxas_options: Sequence[str] = (), *, ptxas=None,
                     cache_root: str | os.PathLike | None = None, keep_cache: bool = False,
                     explicit: bool = False) -> Iterator[FrameworkCandidate]:
    """Set up Triton so the kernels compiled inside the block get this candidate's ptxas options.

    Sets TRITON_ALWAYS_COMPILE=1, a new TRITON_CACHE_DIR (removed afterwards unless
    ``keep_cache``), TRITON_PTXAS_PATH and TRITON_PTXAS_BLACKWELL_PATH (the ptxas CompileIQ
    discovered, or ``ptxas``), and PTXAS_OPTIONS (``ptxas_options`` then the controls file's
    arguments). Everything is restored on exit.

    PTXAS_OPTIONS only reaches kernels when Triton is imported inside the block (e.g. the
    evaluation runs in a fresh process). In a process that imported Triton already, pass
    ``ptx_options=cand.ptx_options`` to the kernel launch or to ``triton.compile`` and give
    ``explicit=True``; without it a FrameworkCacheWarning says so. Use a new controls-file path
    per candidate: Triton's in-memory kernel cache keys on the options string, not the file's content.
    """
    tool, args = candidate_ptxas(controls, ptxas_options, ptxas)
    with fresh_dir("ciq-triton-cache-", cache_root, keep_cache) as cache_dir:
        env = triton_env(tool, args, cache_dir)
        if args and not explicit and TRITON_COMPILER_MODULE in sys.modules:
            warnings.warn("triton_candidate: Triton was imported before this candidate, so PTXAS_OPTIONS no longer "
                          "changes its default ptx_options; pass ptx_options=cand.ptx_options to the kernel launch "
                          "or triton.compile (and explicit=True), or evaluate in a fresh process",
                          FrameworkCacheWarning, stacklevel=3)
        with patched_environ(env):
            yield FrameworkCandidate("triton", env=env, cache_dir=cache_dir, ptxas_args=args,
                                     ptx_options=env["PTXAS_OPTIONS"])


__all__ = ["triton_candidate"]
