"""docs/boosters.md states what the code does: thresholds, the debug packs' options, every cache row."""

from pathlib import Path

from compileiq.boosters import DEBUG_LEVELS
from compileiq.boosters.canary import MIN_SLOWDOWN, TOLERANCE
from compileiq.frameworks.advice import cache_bust_advice

DOC = (Path(__file__).resolve().parents[2] / "docs" / "boosters.md").read_text()


def test_thresholds_and_defaults():
    assert f"by more than **{MIN_SLOWDOWN:.0%}**" in DOC and f"**±{TOLERANCE:.0%}**" in DOC
    assert "100 trials after 50 warm-up runs" in DOC


def test_debug_pack_table_matches_the_packs():
    for compiler, levels in DEBUG_LEVELS.items():
        line = next(ln for ln in DOC.splitlines() if ln.startswith(f"| `debug-pack-{compiler}`"))
        for options in levels.values():
            assert f"`{' '.join(options)}" in line, (compiler, options)


def test_every_framework_of_the_advice_is_in_the_table():
    for framework, row in cache_bust_advice().items():
        line = next(ln for ln in DOC.splitlines() if ln.startswith(f"| {framework} |"))
        assert row.helper in line
    assert "| gcc / clang |" in DOC
