"""Make FlashInfer really JIT-compile its kernels with a candidate's controls.

FlashInfer builds kernels with nvcc on first use and keeps them under
``$FLASHINFER_WORKSPACE_BASE/.cache/flashinfer`` (read when flashinfer is imported); extra nvcc
flags come from FLASHINFER_EXTRA_CUDAFLAGS (split on spaces). Two optional packages ship
prebuilt binaries instead: with ``flashinfer_cubin`` or ``flashinfer_jit_cache`` installed,
FlashInfer loads those and never compiles, so no candidate would ever reach ptxas.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import warnings
from typing import Iterator, Sequence

from ..compilers.discovery import find_nvcc, find_ptxas
from ..compilers.toolchain import controls_for
from ._env import FrameworkCacheWarning, FrameworkCandidate, fresh_dir, join_options, patched_environ

PREBUILT_PACKAGES = ("flashinfer_cubin", "flashinfer_jit_cache")


def prebuilt_packages() -> list[str]:
    """The installed FlashInfer packages that bypass compilation (found without importing them)."""
    found = []
    for name in PREBUILT_PACKAGES:
        try:
            if importlib.util.find_spec(name) is not None:
                found.append(name)
        except (ImportError, ValueError):
            continue
    return found


def _controls_compiler(path) -> str | None:
    """The compiler an open controls file names in its header; None for a vendor ACF."""
    from ..controls.format import is_open_controls, read_controls
    with open(path, "rb") as fh:
        if not is_open_controls(fh.read(64)):
            return None
    return read_controls(path).compiler


def nvcc_flags_for(controls) -> list[str]:
    """nvcc flags applying ``controls``: an open file through nvcc, a vendor ACF to ptxas alone."""
    if controls is None:
        return []
    if _controls_compiler(controls) is None:
        # nvcc --apply-controls would hand the file to cicc as well; a ptxas ACF is for ptxas only
        return [f"-Xptxas={a}" for a in controls_for(controls, find_ptxas())]
    return controls_for(controls, find_nvcc())


@contextlib.contextmanager
def flashinfer_candidate(controls: str | os.PathLike | None = None, extra_cuda_flags: Sequence[str] = (), *,
                         workspace_root: str | os.PathLike | None = None,
                         keep_workspace: bool = False) -> Iterator[FrameworkCandidate]:
    """Point FlashInfer at a fresh JIT workspace and add the candidate's nvcc flags; restore on exit.

    FLASHINFER_EXTRA_CUDAFLAGS becomes whatever it was (e.g. a CCCL compatibility define) followed
    by ``extra_cuda_flags`` and the controls file's flags. FLASHINFER_WORKSPACE_BASE is read when
    flashinfer is imported, so evaluate in a process that imports flashinfer inside the block.
    Warns (FrameworkCacheWarning) when a prebuilt-binary package is installed.
    """
    for pkg in prebuilt_packages():
        warnings.warn(f"flashinfer_candidate: the package {pkg} is installed, so FlashInfer loads its prebuilt "
                      "kernels and never compiles: no candidate reaches ptxas and every score is the baseline's. "
                      "Fix: pip uninstall -y flashinfer-cubin flashinfer-jit-cache", FrameworkCacheWarning, stacklevel=3)
    flags = [str(f) for f in extra_cuda_flags] + nvcc_flags_for(controls)
    before = os.environ.get("FLASHINFER_EXTRA_CUDAFLAGS", "").split()
    with fresh_dir("ciq-flashinfer-ws-", workspace_root, keep_workspace) as ws:
        env = {"FLASHINFER_WORKSPACE_BASE": str(ws),
               "FLASHINFER_EXTRA_CUDAFLAGS": join_options(before + flags, "flashinfer_candidate")}
        with patched_environ(env):
            yield FrameworkCandidate("flashinfer", env=env, cache_dir=ws, cuda_flags=flags)


__all__ = ["flashinfer_candidate", "prebuilt_packages", "nvcc_flags_for", "PREBUILT_PACKAGES"]
