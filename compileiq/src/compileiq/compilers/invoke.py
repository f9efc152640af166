"""Running one compiler command: capture its output, time it, and turn a failure into CompileError."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Sequence

from .errors import CompileError
from ..utils.proc import run as run_tree


def run_compiler(name: str, command: Sequence[str], source: str | os.PathLike | None = None,
                 timeout: float | None = None, cwd: str | os.PathLike | None = None,
                 env: dict | None = None, scratch: Path | None = None) -> tuple[subprocess.CompletedProcess, float]:
    """Run ``command``; return the finished process and its wall time in ms, or raise CompileError.

    ``scratch``: a temporary output folder made for this call, removed when the compile fails (a
    search with many failing candidates must not leave a folder behind for each)."""
    try:
        return _run(name, command, source, timeout, cwd, env)
    except CompileError:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
        raise


def _run(name, command, source, timeout, cwd, env) -> tuple[subprocess.CompletedProcess, float]:
    cmd = [str(c) for c in command]
    t0 = time.perf_counter()
    try:
        proc = run_tree(cmd, text=True, errors="replace", timeout=timeout, cwd=cwd, env=env,
                        stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        err = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else (exc.stderr or "")
        raise CompileError(name, cmd, None, out, err, source=source, timed_out=True, timeout=timeout) from None
    except FileNotFoundError:
        raise CompileError(name, cmd, None, "", f"error: cannot execute {cmd[0]}: no such file", source=source) from None
    wall_ms = (time.perf_counter() - t0) * 1e3
    if proc.returncode != 0:
        raise CompileError(name, cmd, proc.returncode, proc.stdout, proc.stderr, source=source)
    return proc, wall_ms


def require_input(compiler: str, path: str | os.PathLike) -> Path:
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"{compiler}: input file {p} does not exist (check the path; relative paths are "
                                f"taken from {os.getcwd()})")
    return p


def output_path(out: str | os.PathLike | None, stem: str, suffix: str, compiler: str) -> Path:
    """``out`` made absolute (its folder created), or a file in a fresh temporary folder the caller
    removes. Absolute because the artifact is often run next: a bare "stencil" would be looked up
    on PATH, not in the current folder."""
    if out is not None:
        p = Path(out).absolute()
        p.parent.mkdir(parents=True, exist_ok=True)
        return p
    return Path(tempfile.mkdtemp(prefix=f"ciq-{compiler}-")) / f"{stem}{suffix}"


__all__ = ["run_compiler", "require_input", "output_path"]
