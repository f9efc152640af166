"""subprocess.run with a timeout that stops the whole process tree.

subprocess.run(timeout=...) kills only its direct child: with shell=True, or a compiler driver
(gcc -> cc1, nvcc -> cicc -> ptxas), or ncu and the program it profiles, the real work keeps
running and competes with the next measurement. Here, on a timeout, every descendant is killed
before TimeoutExpired is raised (with the output so far). The child stays in the caller's process
group on purpose: a worker killed for task_timeout takes its whole group, compilers included.
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (Linux /proc; empty where that is not available)."""
    out, todo = [], [pid]
    while todo:
        parent = todo.pop()
        for task in Path(f"/proc/{parent}/task").glob("*"):
            try:
                kids = [int(k) for k in (task / "children").read_text().split()]
            except (OSError, ValueError):
                continue
            out.extend(kids)
            todo.extend(kids)
    return out


def kill_tree(pid: int) -> None:
    """SIGKILL ``pid`` and everything below it; never raises."""
    for p in [*descendants(pid), pid]:  # the tree first, read while its parents still exist
        try:
            os.kill(p, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def run(cmd, *, timeout: float | None = None, **kwargs) -> subprocess.CompletedProcess:
    """Like ``subprocess.run(cmd, capture_output=True, ...)``; ``check`` is not supported (read returncode)."""
    kwargs.setdefault("stdout", subprocess.PIPE)
    kwargs.setdefault("stderr", subprocess.PIPE)
    with subprocess.Popen(cmd, **kwargs) as proc:
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_tree(proc.pid)
            out, err = proc.communicate()
            raise subprocess.TimeoutExpired(proc.args, timeout, output=out, stderr=err) from None
        except BaseException:  # KeyboardInterrupt: never leave the tree behind
            kill_tree(proc.pid)
            raise
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


__all__ = ["run", "kill_tree", "descendants"]
