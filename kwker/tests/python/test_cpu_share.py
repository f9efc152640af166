"""Kwker processes sharing the CPUs (runtime/cpu_share.cc): while another Kwker process is busy in a
parallel call on the same CPUs, a parallel call takes its fair share of the thread budget; a
process killed inside a call stops counting; KWKER_CPU_SHARE=0 turns it off; results never change.

Real processes, each with a table file of its own test (KWKER_CPU_SHARE_FILE), so nothing else
on the machine takes part.
"""
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import kwker

pytestmark = pytest.mark.skipif(kwker.get_max_threads() < 2,
                                reason="sharing changes only calls that have two threads or more")

# A sort big enough for the parallel path (from 2**20 keys on two threads), short enough to loop.
CHILD = r"""
import json, os, sys, time
import numpy as np
import kwker
a = np.random.default_rng(int(sys.argv[2])).random(3_000_000).astype(np.float32)
expect = np.sort(a)
ok = bool(np.array_equal(kwker.sort(a), expect))
print("running", flush=True)
end = time.time() + float(sys.argv[1])
calls = 0
while time.time() < end:   # back to back: a gap of over 10 ms would read as idle
    out = kwker.sort(a)
    calls += 1
ok = ok and bool(np.array_equal(out, expect))
th = kwker.runtime_info()["threads"]
print(json.dumps({"ok": ok, "calls": calls, "state": th["cpu_share"],
                  "shared_calls": th["shared_calls"], "shared_with": th["shared_with"]}))
"""


def _env(table, **extra):
    env = dict(os.environ, KWKER_CPU_SHARE_FILE=str(table))
    env.pop("KWKER_CPU_SHARE", None)
    env.update(extra)
    return env


def _start(table, seconds, seed=0, **extra):
    p = subprocess.Popen([sys.executable, "-c", CHILD, str(seconds), str(seed)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=_env(table, **extra))
    line = p.stdout.readline()
    assert line.strip() == "running", p.stderr.read()
    return p


def _result(p):
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


def test_second_process_takes_its_share(tmp_path):
    table = tmp_path / "share"
    first = _start(table, 4.0)          # busy before and after the second one's calls
    second = _start(table, 1.0, seed=1)
    b, a = _result(second), _result(first)
    assert a["ok"] and b["ok"]
    assert b["state"] == "on"
    # Every call of the second process ran while the first was busy: each took half the budget.
    assert b["shared_calls"] == b["calls"] + 1 and b["shared_with"] == 1, b
    assert a["shared_calls"] >= 1, a    # and the first gave up its half while the second ran


def test_alone_keeps_every_thread(tmp_path):
    b = _result(_start(tmp_path / "share", 0.5))
    assert b["ok"] and b["state"] == "on" and b["shared_calls"] == 0, b


def test_turned_off(tmp_path):
    table = tmp_path / "share"
    first = _start(table, 3.0)
    second = _start(table, 0.5, seed=1, KWKER_CPU_SHARE="0")
    b, a = _result(second), _result(first)
    assert b["ok"] and b["state"] == "off (KWKER_CPU_SHARE=0)" and b["shared_calls"] == 0, b
    # A process with the sharing off takes no part: the first one never saw it.
    assert a["shared_calls"] == 0, a


def test_process_killed_inside_a_call_stops_counting(tmp_path):
    table = tmp_path / "share"
    first = _start(table, 30.0)
    time.sleep(0.3)
    first.send_signal(signal.SIGKILL)   # most likely inside a sort: its slot stays busy
    first.communicate()
    # The next process checks a busy slot older than 100 ms for a live process: it is gone.
    time.sleep(0.2)
    b = _result(_start(table, 0.5, seed=1))
    assert b["ok"] and b["shared_calls"] == 0, b


def test_unusable_table_turns_sharing_off_with_the_reason(tmp_path):
    bad = tmp_path / "share"
    bad.write_bytes(b"not a table" + bytes(4096))
    b = _result(_start(bad, 0.2))
    assert b["ok"] and b["shared_calls"] == 0
    assert b["state"] == f"unavailable: {bad} holds something else (remove it)", b
    rel = _result(_start("relative/name", 0.2))
    assert rel["state"] == ("unavailable: KWKER_CPU_SHARE_FILE must be an absolute path "
                            "(got 'relative/name')"), rel
    odd = _result(_start(tmp_path / "s2", 0.2, KWKER_CPU_SHARE="maybe"))
    assert odd["state"].startswith("on (KWKER_CPU_SHARE='maybe' not understood"), odd


def test_runtime_info_reports_the_sharing():
    th = kwker.runtime_info()["threads"]
    assert th["cpu_share"] in ("on",) or th["cpu_share"].startswith(("off", "unavailable"))
    assert isinstance(th["shared_calls"], int) and isinstance(th["shared_with"], int)


FORK = r"""
import json, os, sys, time
import numpy as np
import kwker
a = np.random.default_rng(0).random(3_000_000).astype(np.float32)
kwker.sort(a)                       # the parent takes its slot before the fork
r, w = os.pipe()
pid = os.fork()
end = time.time() + (1.0 if pid == 0 else 1.5)
while time.time() < end:
    kwker.sort(a)
th = kwker.runtime_info()["threads"]
mine = {"shared_calls": th["shared_calls"], "shared_with": th["shared_with"]}
if pid == 0:
    os.write(w, json.dumps(mine).encode())
    os._exit(0)
os.close(w)
child = json.loads(os.read(r, 4096).decode())
os.waitpid(pid, 0)
print(json.dumps({"parent": mine, "child": child}))
"""


def test_forked_child_takes_a_slot_of_its_own(tmp_path):
    # Had the child kept the parent's slot, neither would see the other busy.
    out = subprocess.run([sys.executable, "-c", FORK], capture_output=True, text=True,
                         env=_env(tmp_path / "share"), timeout=120)
    assert out.returncode == 0, out.stderr
    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert res["child"]["shared_calls"] >= 1 and res["child"]["shared_with"] == 1, res
    assert res["parent"]["shared_calls"] >= 1 and res["parent"]["shared_with"] == 1, res
