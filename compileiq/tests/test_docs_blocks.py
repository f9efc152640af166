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
