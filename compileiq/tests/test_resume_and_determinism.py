"""Resume after a killed run, and the same seed giving the same candidates in separate processes."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from compileiq.results import read_csv

SCRIPT = textwrap.dedent("""
    import json, sys, time
    import compileiq.search_spaces.base as ss
    from compileiq import Search, SearchConfiguration
    from compileiq.worker import SequentialWorker
    out, log, delay, resume = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4] if len(sys.argv) > 4 else None

    def objective(c):
        with open(log, "a") as fh:
            fh.write(json.dumps(c, sort_keys=True) + "\\n")
        time.sleep(delay)
        return sum((v - 3) ** 2 for v in c.values())

    space = {f"k{i}": ss.range(0, 7) for i in range(6)}
    Search(objective, space, SearchConfiguration(generations=6, pool_size=10, seed=1234), worker_type=SequentialWorker,
           dump_results=out, disable_progress_bar=True, resume_from=resume).start()
""")


def run(tmp_path, name, *args, wait=True):
    script = tmp_path / "search_script.py"
    script.write_text(SCRIPT)
    cmd = [sys.executable, str(script), *map(str, args)]
    if wait:
        subprocess.run(cmd, check=True, cwd=tmp_path, timeout=120)
        return None
    return subprocess.Popen(cmd, cwd=tmp_path)


def lines(p):
    return [ln for ln in p.read_text().splitlines() if ln] if p.exists() else []


def test_same_seed_same_candidates_across_processes(tmp_path):
    run(tmp_path, "a", tmp_path / "a.csv", tmp_path / "a.log", 0)
    run(tmp_path, "b", tmp_path / "b.csv", tmp_path / "b.log", 0)
    a, b = lines(tmp_path / "a.log"), lines(tmp_path / "b.log")
    assert a == b and len(a) == 60 and len(set(a)) == 60


def test_resume_after_a_killed_run_evaluates_exactly_the_rest(tmp_path):
    full_log = tmp_path / "full.log"
    run(tmp_path, "full", tmp_path / "full.csv", full_log, 0)
    expected = lines(full_log)

    part_csv, part_log = tmp_path / "part.csv", tmp_path / "part.log"
    proc = run(tmp_path, "part", part_csv, part_log, 0.05, wait=False)
    deadline = time.time() + 60
    while time.time() < deadline:  # kill it for real once at least two generations are on disk
        if part_csv.exists() and len(read_csv(part_csv)) >= 20:
            break
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    done = [json.dumps(p, sort_keys=True) for p in read_csv(part_csv)["params"]]
    assert 20 <= len(done) < 60

    resume_log = tmp_path / "resume.log"
    run(tmp_path, "resume", part_csv, resume_log, 0, part_csv)
    resumed = lines(resume_log)
    assert resumed == [c for c in expected if c not in set(done)]
    final = read_csv(part_csv)
    assert sorted(json.dumps(p, sort_keys=True) for p in final["params"]) == sorted(expected)


def test_resume_refuses_a_csv_of_another_shape(tmp_path):
    from compileiq import Search, SearchConfiguration
    from compileiq.errors import ConfigurationError
    import compileiq.search_spaces.base as ss
    p = tmp_path / "r.csv"
    p.write_text('metadata,generation,score_1,score_2,params\n{},0,1,2,"{}"\n')
    with pytest.raises(ConfigurationError, match="2 score column"):
        Search(lambda c: 1, {"a": ss.range(0, 3)}, SearchConfiguration(generations=1), resume_from=p)
