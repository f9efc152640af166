"""docs/troubleshooting.md: one entry for every entry of the troubleshooting page users read,
and every code block run as a user would paste it (python blocks as scripts, sh blocks with
bash, `python` being this interpreter)."""
import os
import pathlib
import re
import subprocess
import sys

import pytest

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "troubleshooting.md"
TEXT = DOC.read_text()
BLOCKS = re.findall(r"```(\w+)\n(.*?)```", TEXT, flags=re.S)

# The entries of the published troubleshooting page, in its words.
ENTRIES = [
    "the engine is capped at avx2 / portable ... although this CPU runs avx512",
    "this x86-64 CPU has no AVX2",
    "the compiled PyTorch operators were built for torch X, not Y",
    "these PyTorch overrides differ from this torch's own kernels and stay off",
    "the CPU has AMX but the CPU backend's AMX kernels are off",
    "this process may run on N of M CPUs",
    "the compiled per-call fast path (_fast) is not loaded",
    "free-threaded Python with the GIL enabled",
    "Kwker is slower than NumPy on my tiny arrays.",
    "argsort of a 2-D array returns a flat permutation.",
    "My argsort indices differ from NumPy's.",
    "NaNs come out in a different place than in pandas / Polars.",
    "The first torch.compile(..., backend=\"kwker\") call is slow.",
    "A mode changed my model's outputs.",
    "Memory stays high after a large sort.",
    "Many threads are busy although I passed threads=4.",
    "Ruling Kwker in or out",
    "Reporting a problem",
]


@pytest.mark.parametrize("entry", ENTRIES)
def test_every_published_entry_is_answered(entry):
    assert entry in TEXT


def test_it_says_where_to_send_a_bundle_as_the_command_does():
    from kwker.tools.support_bundle import SEND_TO
    assert "through the support form or to mail@kwker.io" in SEND_TO
    assert "through the support form\nor to mail@kwker.io" in TEXT
    assert "5-10" not in TEXT and "5–10" not in TEXT


def _env():
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    env.pop("KWKER_DISABLE", None)
    return env


@pytest.mark.parametrize("lang,code", BLOCKS, ids=lambda x: x.splitlines()[0][:40])
def test_block_runs(lang, code, tmp_path):
    if lang == "python":
        (tmp_path / "block.py").write_text(code)
        cmd = [sys.executable, "block.py"]
    else:
        assert lang == "sh"
        cmd = ["bash", "-euo", "pipefail", "-c", code]
    r = subprocess.run(cmd, cwd=tmp_path, env=_env(), capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
