"""The README's example pasted into a script, without `if __name__ == "__main__":`, runs in every process mode.

Workers start from an entry point of ours and receive the objective by cloudpickle, so they never
import the user's main module (which would start the search again inside each worker).
"""

import os
import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent("""
    import compileiq.search_spaces.base as ss
    from compileiq import Search, SearchConfiguration
    from compileiq.worker import {worker}

    print("top level ran", flush=True)

    def objective(cfg):
        return (cfg["x"] - 3) ** 2 + (0 if "unroll" in cfg else 1)

    space = {{"x": ss.range(0, 200), "unroll": ss.literal("-funroll-loops", knockout_prob=0.5)}}
    result = Search(objective, space, SearchConfiguration(generations=2, pool_size=8, seed=1), worker_type={worker},
                    disable_progress_bar=True).start(num_workers=2)
    print("best", result.get_best_result()["score_1"], flush=True)
""")


def run(script: str, mode: str, tmp_path, stdin: bool = False):
    env = {k: v for k, v in os.environ.items() if not k.startswith("CIQ_")}
    if mode:
        env["CIQ_PROCESS_MODE"] = mode
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    path = tmp_path / "search.py"
    path.write_text(script)
    cmd = [sys.executable, "-"] if stdin else [sys.executable, str(path)]
    return subprocess.run(cmd, input=script if stdin else None, capture_output=True, text=True, env=env, timeout=120,
                          cwd=tmp_path)


@pytest.mark.parametrize("mode", ["", "spawn", "fork"])  # "": the default, forkserver
def test_unguarded_script_runs_once(mode, tmp_path):
    out = run(SCRIPT.format(worker="MultiProcessWorker"), mode, tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.count("top level ran") == 1 and "best " in out.stdout, out.stdout


def test_unguarded_isolated_worker_under_spawn(tmp_path):
    out = run(SCRIPT.format(worker="IsoMultiProcessWorker"), "spawn", tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.count("top level ran") == 1 and "best" in out.stdout


def test_notebook_style_code_from_stdin(tmp_path):
    # a notebook's cells, like `python -`, run in a __main__ without a file: the objective travels by value
    out = run(SCRIPT.format(worker="MultiProcessWorker"), "spawn", tmp_path, stdin=True)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.count("top level ran") == 1 and "best " in out.stdout
