"""A real CPU objective: build examples/stencil.c with the candidate's GCC controls, run it, return ns per sweep.

The candidate comes from the shipped GCC search space (``GccSearchSpace()``): a hex string of an
open controls file, applied with ``compileiq.compilers.gcc(..., controls=path)``. Every build
starts from ``-O2`` (the baseline) and the candidate's options come after it, so they win. A build
whose checksum differs from the ``-O0`` reference is wrong code and scores INVALID_SCORE: the
correctness gate every objective needs.
"""

from __future__ import annotations

import os
import tempfile
from importlib import resources
from pathlib import Path

from compileiq import BASELINE_CONFIG, INVALID_SCORE
from compileiq.compilers import cpu_time, gcc
from compileiq.utils.helpers import save_compiler_config

SOURCE = resources.files("compileiq.examples") / "stencil.c"
BASELINE_FLAGS = ["-O2"]
REPS = 15  # sweeps timed inside the binary per run; it reports the best, free of process start-up


def _parse_ns(stdout: str) -> float:
    return float(stdout.split()[0])


def build(config, folder: str | os.PathLike, extra=()) -> tuple[Path, str]:
    """Build the kernel for ``config`` (hex controls, or BASELINE_CONFIG) in ``folder``; (binary, checksum)."""
    folder = Path(folder)
    src = folder / "stencil.c"
    src.write_text(SOURCE.read_text())  # a fresh copy per build: no build cache can hide the controls
    controls = None
    if config != BASELINE_CONFIG:
        controls = save_compiler_config(folder / "candidate.controls", config)
    exe = gcc(src, out=folder / "stencil", controls=controls, extra=[*BASELINE_FLAGS, *extra], timeout=120).artifact
    checksum = cpu_time([exe, "1"], warmup=0, repeats=1, pin=False, timeout=60).outputs[0].split()[1]
    return Path(exe), checksum


_reference: str | None = None


def reference_checksum() -> str:
    global _reference
    if _reference is None:
        with tempfile.TemporaryDirectory(prefix="ciq-ref-") as d:
            _reference = build(BASELINE_CONFIG, d, extra=["-O0"])[1]
    return _reference


def time_binary(exe, repeats: int = 5) -> float:
    """Median ns per sweep of a built binary (each run times REPS sweeps and reports the best)."""
    return cpu_time([exe, str(REPS)], warmup=1, repeats=repeats, parse=_parse_ns, timeout=120).median


def objective(config):
    with tempfile.TemporaryDirectory(prefix="ciq-gcc-") as d:
        exe, checksum = build(config, d)
        if checksum != reference_checksum():
            return INVALID_SCORE  # wrong result: never a winner, however fast
        return time_binary(exe)
