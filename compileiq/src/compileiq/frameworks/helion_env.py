"""Make a Helion kernel really recompile with a candidate's controls.

Helion keeps autotuned configs in its own cache (HELION_SKIP_CACHE=1 skips reading and writing
it) and compiles through Triton, so Triton's cache-busting applies as well. A vendor ACF goes
through the kernel config field ``advanced_controls_file``, which Helion turns into the ptxas
option ``--apply-controls <file>``; an open controls file cannot go that way (ptxas would reject it
as an ACF), so its options travel as Triton ptxas options instead.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Iterator

from ._env import FrameworkCandidate, fresh_dir, patched_environ
from .triton_env import candidate_ptxas, triton_env


def _is_open_controls(path: str | os.PathLike) -> bool:
    from ..controls.format import is_open_controls
    with open(path, "rb") as fh:
        return is_open_controls(fh.read(64))


@contextlib.contextmanager
def helion_candidate(controls: str | os.PathLike | None = None, *, ptxas=None,
                     cache_root: str | os.PathLike | None = None, keep_cache: bool = False) -> Iterator[FrameworkCandidate]:
    """Set HELION_SKIP_CACHE=1 and Triton's cache-busting for one candidate; restore on exit.

    For a vendor ACF, ``cand.config`` is ``{"advanced_controls_file": path}``: pass it to
    ``helion.Config(..., **cand.config)``. For an open controls file ``cand.config`` is empty and
    ``cand.ptx_options`` holds the options (PTXAS_OPTIONS is set too; see triton_candidate).
    """
    vendor = controls is not None and not _is_open_controls(controls)
    if vendor:
        from ..compilers.toolchain import controls_for
        tool, _ = candidate_ptxas(None, (), ptxas)
        controls_for(controls, tool)  # the version gate and dry compile: fail here, not in every launch
        args: list[str] = []
        config = {"advanced_controls_file": str(Path(controls))}
    else:
        tool, args = candidate_ptxas(controls, (), ptxas)
        config = {}
    with fresh_dir("ciq-helion-triton-cache-", cache_root, keep_cache) as cache_dir:
        env = triton_env(tool, args, cache_dir)
        env["HELION_SKIP_CACHE"] = "1"
        with patched_environ(env):
            yield FrameworkCandidate("helion", env=env, cache_dir=cache_dir, ptxas_args=args,
                                     ptx_options=env["PTXAS_OPTIONS"], config=config)


__all__ = ["helion_candidate"]
