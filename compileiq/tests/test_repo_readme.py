"""The repository README's CompileIQ sections ("## CompileIQ..."): every code block runs as a
user would paste it (tests/_blockrun.py), Kwker's sections being Kwker's tests' to run. Skipped
where CompileIQ is handed over alone, without the repository around it."""

from __future__ import annotations

import re

import pytest
from _blockrun import PRODUCT_ROOT, check_block, page_runs, parse_blocks, runnable

REPO_README = PRODUCT_ROOT.parent / "README.md"
PAGE = "repository-README.md"
SECTIONS = re.split(r"^(?=## )", REPO_README.read_text(encoding="utf-8"), flags=re.M) if REPO_README.exists() else []
BLOCKS = parse_blocks(PAGE, "".join(s for s in SECTIONS if s.startswith("## CompileIQ")))
RUNNABLE = runnable(BLOCKS)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return page_runs(tmp_path_factory.mktemp("repo-readme"), {PAGE: BLOCKS})


def test_the_repository_readme_shows_a_compiler_flag_search():
    if not REPO_README.exists():
        pytest.skip("no repository README beside compileiq/ (CompileIQ handed over alone)")
    assert any("GccSearchSpace()" in b.code and ".start(" in b.code for b in RUNNABLE), \
        "the repository README's CompileIQ section lost its compiler-flag search"


@pytest.mark.parametrize("block", RUNNABLE, ids=[b.id for b in RUNNABLE])
def test_block_runs(block, runs):
    check_block(block, runs)
