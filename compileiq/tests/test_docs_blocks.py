"""Every code block of the README and of docs/*.md runs as a user would paste it.

Blocks run page by page in a fresh folder, in document order (tests/_blockrun.py says how, and
which info-string tags a block may carry: ``requires=gpu`` blocks are skipped here with the
reason, ``file=NAME`` blocks are written and syntax-checked, ``text`` blocks are output).
"""

from __future__ import annotations

import pytest
from _blockrun import KNOWN_LANGS, PRODUCT_ROOT, check_block, page_runs, parse_blocks, runnable

PAGES = {p.relative_to(PRODUCT_ROOT).as_posix(): p.read_text(encoding="utf-8")
         for p in [PRODUCT_ROOT / "README.md", *sorted((PRODUCT_ROOT / "docs").glob("*.md"))]}
BLOCKS = {name: parse_blocks(name, text) for name, text in PAGES.items()}
RUNNABLE = runnable([b for bs in BLOCKS.values() for b in bs])


@pytest.fixture(scope="session")
def doc_runs(tmp_path_factory):
    return page_runs(tmp_path_factory.mktemp("doc-blocks"), BLOCKS)


@pytest.mark.parametrize("block", RUNNABLE, ids=[b.id for b in RUNNABLE])
def test_block_runs(block, doc_runs):
    check_block(block, doc_runs)


@pytest.mark.parametrize("page", sorted(PAGES))
def test_blocks_are_labelled(page):
    for b in BLOCKS[page]:
        assert b.lang in KNOWN_LANGS, f"{b.id}: a code block needs one of {sorted(KNOWN_LANGS)} as its language"
        assert set(b.tags) <= {"file", "requires", "timing"}, f"{b.id}: unknown info-string tags {sorted(b.tags)}"


def test_the_readme_example_is_runnable_as_pasted():
    first = next(b for b in BLOCKS["README.md"] if b.lang == "python")
    assert "requires" not in first.tags and "file" not in first.tags, "the README's first example must run as is"


NOISY_CANARY = '''
import sys
from compileiq import BASELINE_CONFIG
from compileiq.boosters import canary
from compileiq.controls import parse_controls

base = iter([10.0, 13.0, 8.0])   # the baseline's own runs spread by 50%

def objective(config):
    if config == BASELINE_CONFIG:
        return next(base)
    return {"-O0": 40.0, "-O3": 11.0}[" ".join(parse_controls(bytes.fromhex(config)).options)]

result = canary(objective, "ptxas")
print(result.report())
raise SystemExit({"PASS": 0, "FAIL": 1}.get(result.verdict, 2))
'''


@pytest.mark.parametrize("code, tags, state", [
    (NOISY_CANARY, {"timing": "2"}, "ok"),           # the product itself said: too noisy to decide
    (NOISY_CANARY, {}, "fail"),                       # only a timing block may end undecided
    (NOISY_CANARY.replace("13.0, 8.0", "10.1, 9.9").replace('"-O3": 11.0', '"-O3": 13.0'),
     {"timing": "2"}, "fail"),                        # a quiet baseline: a real FAIL stays a failure
    ("print('O0/O3 canary (gcc): UNDECIDED')\nraise SystemExit(2)\n", {"timing": "2"}, "fail"),
], ids=["undecided-timing", "undecided-untagged", "fail-verdict", "exit-2-without-the-report"])
def test_a_timing_block_passes_undecided_only_on_the_canary_s_own_word(code, tags, state, tmp_path):
    from _blockrun import Block, PageRun
    block = Block("noise.md", 0, 1, "python", tags, code)
    got, detail = PageRun("noise.md", [block], tmp_path).run(block)
    assert got == state, detail
    if state == "ok":
        assert "could not decide: the baseline's own runs spread by 50.0%" in detail
