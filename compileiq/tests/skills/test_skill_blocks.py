"""Every code block of every shipped SKILL.md runs, and the skills name only what exists.

How blocks run, and the info-string tags they may carry: tests/_blockrun.py.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from _blockrun import KNOWN_LANGS, block_env, check_block, page_runs, parse_blocks, runnable

from compileiq import skills

PRODUCT_ROOT = Path(__file__).resolve().parents[2]
SKILLS_DIR = PRODUCT_ROOT / "src" / "compileiq" / "skills"
EXPECTED = ["compileiq-author-objective", "compileiq-booster-pack", "compileiq-bootstrap", "compileiq-debug",
            "compileiq-run-search", "compileiq-search-space", "compileiq-validate-result"]


def all_skills() -> dict[str, str]:
    return {p.parent.name: p.read_text(encoding="utf-8") for p in sorted(SKILLS_DIR.glob("*/SKILL.md"))}


SKILLS = all_skills()
BLOCKS = {name: parse_blocks(name, text) for name, text in SKILLS.items()}
RUNNABLE = runnable([b for bs in BLOCKS.values() for b in bs])


@pytest.fixture(scope="session")
def skill_runs(tmp_path_factory):
    return page_runs(tmp_path_factory.mktemp("skill-blocks"), BLOCKS)


@pytest.mark.parametrize("block", RUNNABLE, ids=[b.id for b in RUNNABLE])
def test_block_runs(block, skill_runs):
    check_block(block, skill_runs)


# -- the skills themselves ------------------------------------------------------------------------------
def test_every_skill_is_shipped():
    assert sorted(SKILLS) == EXPECTED
    assert skills.skill_names() == EXPECTED


@pytest.mark.parametrize("name", EXPECTED)
def test_front_matter(name):
    fm = skills.front_matter(name)
    assert fm.name == name
    assert len(fm.description) > 80 and "Use when" in fm.description, fm.description
    assert any(item.startswith("Don't use") for item in fm.when_to_use), fm.when_to_use
    siblings = [s for s in EXPECTED if s != name and s in " ".join(fm.when_to_use)]
    assert siblings, f"{name}: when_to_use should point to a sibling skill for the cases it does not cover"
    try:
        import yaml
    except ImportError:
        return
    text = SKILLS[name]
    data = yaml.safe_load(text.split("---\n")[1])
    assert data == {"name": fm.name, "description": fm.description, "when_to_use": list(fm.when_to_use)}


@pytest.mark.parametrize("name", EXPECTED)
def test_blocks_are_labelled(name):
    for b in BLOCKS[name]:
        assert b.lang in KNOWN_LANGS, f"{b.id}: a code block needs one of {sorted(KNOWN_LANGS)} as its language"
        assert set(b.tags) <= {"file", "requires", "timing"}, f"{b.id}: unknown info-string tags {sorted(b.tags)}"
        if b.lang in ("text",):
            assert not b.tags, f"{b.id}: text blocks never run; tags make no sense there"


# One keyword group per row of the seed's symptom table; each alternative is a lower-case substring.
SEED_ROWS = {
    "hang / socket timeout": [("hang",), ("socket timeout", "ciq_socket_timeout")],
    "every eval INVALID_SCORE": [("invalid_score",), ("every",)],
    "every eval the same score": [("same score", "identical")],
    "TypeError fromhex": [("fromhex",)],
    "not in expected format": [("not in expected format",)],
    "convergence stalled": [("stall",)],
    "increasing invalid rate": [("invalid rate",)],
    "high CV%": [("cv",)],
    "ptxas errors fill the log": [("ptxas error",)],
    "spills / NCU profiling of a winner": [("spill",), ("ncu", "profile")],
}
CHECKS = ("doctor", "diagnose", "canary", "first-generation diagnosis", "validate", "profile")


def _first_table(text: str) -> list[list[str]]:
    body = text.split("---\n", 2)[2]
    rows = []
    for line in body.splitlines():
        if line.startswith("|"):
            rows.append([c.strip() for c in line.strip().strip("|").split("|")])
        elif rows:
            break
        elif line.startswith("#") and "symptom" not in line.lower():
            raise AssertionError(f"compileiq-debug: the symptom table must come first, before {line!r}")
    return rows


def test_debug_skill_starts_with_the_symptom_table():
    rows = _first_table(SKILLS["compileiq-debug"])
    header, body = rows[0], rows[2:]
    assert [h.lower() for h in header][:1] == ["symptom"] and any("check" in h.lower() for h in header), header
    for label, groups in SEED_ROWS.items():
        hits = [r for r in body if all(any(k in r[0].lower() for k in alts) for alts in groups)]
        assert hits, f"no row of the debug skill's symptom table covers the seed row {label!r}"
        check_cell = hits[0][-1].lower()
        assert any(c in check_cell for c in CHECKS), f"row {label!r} names no CompileIQ check: {hits[0][-1]!r}"
    text = SKILLS["compileiq-debug"].lower()
    assert "libblas" not in text or "do not" in text  # the obsolete BLAS advice is never given as a fix


# -- every command and script the skills name exists ------------------------------------------------------
def _shell_text(text: str) -> str:
    """Inline code spans and bash blocks: where a shell command can be named."""
    spans = re.findall(r"`([^`\n]+)`", text)
    blocks = [b.code for b in parse_blocks("x", text) if b.lang in ("bash", "sh")]
    return "\n".join(spans + blocks)


def named_commands() -> list[tuple[str, ...]]:
    found: set[tuple[str, ...]] = set()
    for text in SKILLS.values():
        code = _shell_text(text)
        for m in re.finditer(r"python -m (compileiq(?:\.[\w.]+)?)(?: ([a-z][a-z-]*))?", code):
            module, sub = m.group(1), m.group(2)
            if module != "compileiq":
                found.add(("-m", module))
            elif sub:
                found.add(("-m", "compileiq", sub))
        for m in re.finditer(r"(?:^|[;&|(]\s*)compileiq ([a-z][a-z-]*)", code, re.M):
            found.add(("-m", "compileiq", m.group(1)))
        for m in re.finditer(r"scripts/([\w-]+\.py)", code):
            found.add(("script", m.group(1)))
    return sorted(found)


COMMANDS = named_commands()


def test_skills_name_the_main_commands():
    subs = {c[2] for c in COMMANDS if c[:2] == ("-m", "compileiq") and len(c) == 3}
    assert {"doctor", "diagnose", "validate", "canary", "profile", "skills"} <= subs, subs
    assert ("script", "diagnose_csv.py") in COMMANDS and ("script", "welch_validate.py") in COMMANDS


@pytest.mark.parametrize("command", COMMANDS, ids=[" ".join(c) for c in COMMANDS])
def test_named_command_exists(command, tmp_path):
    if command[0] == "script":
        argv = [sys.executable, str(PRODUCT_ROOT / "scripts" / command[1]), "--help"]
        assert (PRODUCT_ROOT / "scripts" / command[1]).is_file(), f"scripts/{command[1]} does not exist"
    else:
        argv = [sys.executable, *command, "--help"]
    proc = subprocess.run(argv, cwd=tmp_path, env=block_env(tmp_path), capture_output=True, text=True, timeout=60)
    shown = shlex.join(argv[1:])
    assert proc.returncode == 0, f"`python {shown}` exits {proc.returncode}:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}"
    assert "usage" in (proc.stdout + proc.stderr).lower(), f"`python {shown}` printed no usage"


# -- installation -----------------------------------------------------------------------------------------
def test_install_copies_every_skill(tmp_path):
    written = skills.install(tmp_path / "agent-skills")
    assert sorted(p.parent.name for p in written) == EXPECTED
    for p in written:
        assert p.read_text(encoding="utf-8") == skills.skill_text(p.parent.name)
    edited = tmp_path / "agent-skills" / "compileiq-debug" / "SKILL.md"
    edited.write_text("my own notes\n")
    with pytest.raises(skills.SkillError, match="left alone") as info:
        skills.install(tmp_path / "agent-skills")
    assert edited.read_text() == "my own notes\n" and len(info.value.written) == len(EXPECTED) - 1
    skills.install(tmp_path / "agent-skills", ["compileiq-debug"], overwrite=True)
    assert edited.read_text(encoding="utf-8") == skills.skill_text("compileiq-debug")


def test_skills_cli(tmp_path, capsys):
    from compileiq.skills.cli import main
    assert main(["list"]) == 0
    listing = capsys.readouterr().out
    assert all(n in listing for n in EXPECTED)
    assert main(["install", str(tmp_path / "s"), "compileiq-debug"]) == 0
    assert (tmp_path / "s" / "compileiq-debug" / "SKILL.md").is_file()
    (tmp_path / "s" / "compileiq-debug" / "SKILL.md").write_text("edited\n")
    assert main(["install", str(tmp_path / "s"), "compileiq-debug"]) == 1
    assert "--force" in capsys.readouterr().err
    assert main(["install", str(tmp_path / "s"), "--force", "compileiq-debug"]) == 0
    assert main(["show", "no-such-skill"]) == 2
    assert "no skill named" in capsys.readouterr().err
    assert main(["path", "compileiq-debug"]) == 0
    assert capsys.readouterr().out.strip().endswith("compileiq-debug")


# -- references from the package's own messages -------------------------------------------------------------
def test_skills_and_sections_named_by_messages_exist():
    """Error messages point users at skills (and sections): those must exist."""
    src = PRODUCT_ROOT / "src" / "compileiq"
    for path in src.rglob("*.py"):
        if SKILLS_DIR in path.parents:
            continue
        text = path.read_text(encoding="utf-8")
        for m in re.finditer(r"(compileiq-[a-z]+(?:-[a-z]+)*) skill(?:, '([^']+)')?", text):
            skill, section = m.group(1), m.group(2)
            assert skill in SKILLS, f"{path.relative_to(PRODUCT_ROOT)} names a skill that does not exist: {skill}"
            if section:
                headings = [ln.lstrip("#").strip() for ln in SKILLS[skill].splitlines() if ln.startswith("#")]
                assert section in headings, f"{path.relative_to(PRODUCT_ROOT)} points to {skill}, '{section}': no such section"
