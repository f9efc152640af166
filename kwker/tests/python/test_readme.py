"""Every python block of kwker/README.md, and of the repository README's Kwker sections, run as a
user would paste it (a fresh interpreter)."""
import os
import pathlib
import re
import subprocess
import sys

import pytest

HERE = pathlib.Path(__file__).resolve()
README = HERE.parents[2] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
# The repository README (absent where Kwker is handed over alone): its "## Kwker..." sections are
# Kwker's; CompileIQ's tests run the "## CompileIQ..." ones.
REPO_README = HERE.parents[3] / "README.md"
REPO_SECTIONS = re.split(r"^## ", REPO_README.read_text(), flags=re.M) if REPO_README.exists() else []
REPO_BLOCKS = [code for section in REPO_SECTIONS if section.startswith("Kwker")
               for code in re.findall(r"```python\n(.*?)```", section, flags=re.S)]


def test_the_readme_has_an_example():
    assert BLOCKS, "kwker/README.md lost its usage example"


def test_the_repository_readme_shows_kwker_s_main_jobs():
    if not REPO_README.exists():
        pytest.skip("no repository README beside kwker/ (Kwker handed over alone)")
    text = "\n".join(REPO_BLOCKS)
    for job in ("kwker.sort(", "kf.sort_values(", "kwker.torch_ops.install()", "cb.optimize("):
        assert job in text, f"the repository README's Kwker sections lost the {job} example"
    # Only the quick start's make commands are not run here (they are what runs this test).
    sh = re.findall(r"```(?:sh|bash)\n(.*?)```", REPO_README.read_text(), flags=re.S)
    assert sh == ["make demo   # sets everything up, then runs both products' main jobs\n"
                  "make test   # sets everything up, then runs every test\n"], sh


def _run(code, tmp_path):
    for module in ("torch", "pandas", "transformers"):
        if re.search(rf"\b{module}\b", code.split("\n\n")[0]):
            pytest.importorskip(module)
    script = tmp_path / "example.py"
    script.write_text(code)
    # Decoder packages (cpu_backend) go to this test's folder, not the user's cache.
    env = {k: v for k, v in os.environ.items() if not k.startswith("KWKER_")}
    env["KWKER_CACHE_DIR"] = str(tmp_path / "cache")
    r = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True,
                       text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("code", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_readme_block_runs(code, tmp_path):
    _run(code, tmp_path)


@pytest.mark.parametrize("code", REPO_BLOCKS, ids=[f"repo{i}" for i in range(len(REPO_BLOCKS))])
def test_repository_readme_block_runs(code, tmp_path):
    _run(code, tmp_path)
