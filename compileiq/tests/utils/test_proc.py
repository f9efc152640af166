import subprocess
import time

import pytest

from compileiq.utils.proc import run


def _alive(marker: str) -> bool:
    return subprocess.run(["pgrep", "-f", marker], capture_output=True).returncode == 0


def test_a_timeout_kills_the_whole_tree_not_just_the_shell():
    marker = "sleep 7.4321"
    with pytest.raises(subprocess.TimeoutExpired) as e:
        run(f"{marker}; echo never", shell=True, text=True, timeout=0.5)
    assert e.value.timeout == 0.5
    time.sleep(0.2)
    assert not _alive(marker), "the grandchild survived the timeout"


def test_output_and_returncode_like_subprocess_run():
    p = run(["sh", "-c", "echo out; echo err >&2; exit 3"], text=True, timeout=10)
    assert (p.returncode, p.stdout, p.stderr) == (3, "out\n", "err\n")
