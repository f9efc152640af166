import os
import time

import pytest


def _exists(pid: int) -> bool:
    """True while the process exists at all, zombies included (an unreaped child is a leak too)."""
    return os.path.exists(f"/proc/{pid}")


def _children_from_proc() -> set:
    me, out = os.getpid(), set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == me:
                out.add(int(entry))
    return out


@pytest.fixture
def gone():
    """gone(pids) -> the pids still present after waiting up to 3 s for them to disappear."""
    def wait(pids, within: float = 3.0):
        deadline = time.monotonic() + within
        left = {p for p in pids if _exists(p)}
        while left and time.monotonic() < deadline:
            time.sleep(0.02)
            left = {p for p in left if _exists(p)}
        return left
    return wait


@pytest.fixture
def children():
    """children() -> pids whose parent is this test process, minus multiprocessing's long-lived helpers."""
    import multiprocessing.forkserver
    import multiprocessing.resource_tracker

    def list_children():
        try:
            import psutil
            out = {c.pid for c in psutil.Process().children()}
        except ImportError:
            out = _children_from_proc()
        helpers = {getattr(multiprocessing.forkserver._forkserver, "_forkserver_pid", None),
                   getattr(multiprocessing.resource_tracker._resource_tracker, "_pid", None)}
        return out - helpers
    return list_children
