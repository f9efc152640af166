"""Every code block of every shipped SKILL.md runs, and the skills name only what exists.

How blocks run:

* Each skill gets its own temporary working folder. Its blocks run there in document order, so a
  block may use files an earlier block of the same skill wrote (a results CSV, a kernel source).
  Running one block alone (``-k``) first runs the blocks before it in that skill.
* ```python blocks: each in a fresh process of this test's Python (the project venv). A python
  block is self-contained: it shares nothing with earlier blocks except the files in the folder.
* ```bash / ```sh blocks: ``bash -euo pipefail``, with the venv's bin first on PATH (so ``python``
  is the venv's Python) and a ``scripts`` link to the product root's scripts/ folder in the working
  folder, so ``python scripts/diagnose_csv.py ...`` runs as it does from the product root.
* Every block runs with CIQ_* variables cleared and XDG_CACHE_HOME inside the working folder, so
  nothing touches ~/.cache/compileiq.
* Info-string tags after the language:
    - ``file=NAME``: the block is written to NAME in the working folder instead of being run
      (python files are compiled to check their syntax; json files are parsed);
    - ``requires=a,b``: run only when every requirement holds, otherwise skip with the reason.
      Requirements: gpu (cuda-python, a driver and a device), nvidia-smi, ncu, ptxas, nvcc, gcc,
      clang, cuobjdump, triton, clock-lock (changes GPU clocks: runs only with
      CIQ_TEST_ALLOW_CLOCK_LOCK=1) and install (installs packages into the environment: runs only
      with CIQ_TEST_ALLOW_INSTALL=1, from the repository root, where ``compileiq/`` is).
* ```text blocks are example output and never run; ```json blocks must parse.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from compileiq import skills

PRODUCT_ROOT = Path(__file__).resolve().parents[2]
SKILLS_DIR = PRODUCT_ROOT / "src" / "compileiq" / "skills"
EXPECTED = ["compileiq-author-objective", "compileiq-booster-pack", "compileiq-bootstrap", "compileiq-debug",
            "compileiq-run-search", "compileiq-search-space", "compileiq-validate-result"]
RUN_LANGS = {"python", "bash", "sh"}
KNOWN_LANGS = RUN_LANGS | {"text", "json", "c"}
BLOCK_TIMEOUT = 180

FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,})(?P<info>[^`]*)$")


@dataclass
class Block:
    skill: str
    index: int
    line: int
    lang: str
    tags: dict = field(default_factory=dict)
    code: str = ""

    @property
    def id(self) -> str:
        return f"{self.skill}:L{self.line}:{self.lang}"


def parse_blocks(skill: str, text: str) -> list[Block]:
    blocks, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, info = m.group("indent"), m.group("fence"), m.group("info").strip()
        lang, *rest = info.split() if info else [""]
        tags = dict(t.split("=", 1) if "=" in t else (t, "") for t in rest)
        body, j = [], i + 1
        while j < len(lines) and not (lines[j].strip().startswith(fence) and lines[j].strip().strip("`") == ""):
            body.append(lines[j][len(indent):] if lines[j].startswith(indent) else lines[j].lstrip())
            j += 1
        if j >= len(lines):
            raise AssertionError(f"{skill}/SKILL.md:{i + 1}: code fence never closed")
        blocks.append(Block(skill, len(blocks), i + 1, lang, tags, "\n".join(body) + "\n"))
        i = j + 1
    return blocks


def all_skills() -> dict[str, str]:
    return {p.parent.name: p.read_text(encoding="utf-8") for p in sorted(SKILLS_DIR.glob("*/SKILL.md"))}


SKILLS = all_skills()
BLOCKS = {name: parse_blocks(name, text) for name, text in SKILLS.items()}
RUNNABLE = [b for bs in BLOCKS.values() for b in bs if b.lang in RUN_LANGS or "file" in b.tags]


# -- requirements ---------------------------------------------------------------------------------------
def _compiler(name: str) -> str | None:
    from compileiq.compilers import find_compiler
    try:
        find_compiler(name)
        return None
    except Exception as exc:  # CompilerNotFoundError or an unreadable version
        return f"needs {name}: {str(exc).splitlines()[0][:160]}"


def _gpu() -> str | None:
    try:
        from compileiq.compilers.gpu_timing import gpu_available
        return None if gpu_available() else "needs a GPU (cuda-python, an NVIDIA driver and a device)"
    except Exception as exc:
        return f"needs a GPU ({type(exc).__name__}: {exc})"


def _nvidia_smi() -> str | None:
    if shutil.which("nvidia-smi") is None:
        return "needs nvidia-smi (an NVIDIA driver)"
    r = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30)
    return None if r.returncode == 0 and "GPU" in r.stdout else "needs nvidia-smi to list a GPU"


def _ncu() -> str | None:
    from compileiq.profile.ncu import find_ncu
    return None if find_ncu() else "needs Nsight Compute (ncu)"


def _cuobjdump() -> str | None:
    from compileiq.compilers.sass import find_tool
    try:
        find_tool("cuobjdump")
        find_tool("nvdisasm")
        return None
    except Exception as exc:
        return f"needs cuobjdump and nvdisasm: {str(exc).splitlines()[0][:160]}"


def _triton() -> str | None:
    import importlib.util
    return None if importlib.util.find_spec("triton") else "needs triton (pip install triton)"


def _clock_lock() -> str | None:
    if os.environ.get("CIQ_TEST_ALLOW_CLOCK_LOCK") != "1":
        return "changes GPU clock settings; runs only with CIQ_TEST_ALLOW_CLOCK_LOCK=1"
    return _nvidia_smi()


def _install() -> str | None:
    if os.environ.get("CIQ_TEST_ALLOW_INSTALL") != "1":
        return "installs packages into the environment; runs only with CIQ_TEST_ALLOW_INSTALL=1"
    return None


REQUIREMENTS = {"install": _install, "gpu": _gpu, "nvidia-smi": _nvidia_smi, "ncu": _ncu, "ptxas": lambda: _compiler("ptxas"),
                "nvcc": lambda: _compiler("nvcc"), "gcc": lambda: _compiler("gcc"), "clang": lambda: _compiler("clang"),
                "cuobjdump": _cuobjdump, "triton": _triton, "clock-lock": _clock_lock}
_req_cache: dict[str, str | None] = {}


def missing_requirement(block: Block) -> str | None:
    for req in filter(None, block.tags.get("requires", "").split(",")):
        if req not in REQUIREMENTS:
            raise AssertionError(f"{block.id}: unknown requirement {req!r}; known: {', '.join(REQUIREMENTS)}")
        if req not in _req_cache:
            _req_cache[req] = REQUIREMENTS[req]()
        if _req_cache[req]:
            return f"{block.id}: {_req_cache[req]}"
    return None


# -- running ----------------------------------------------------------------------------------------------
def block_env(workdir: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CIQ_")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["XDG_CACHE_HOME"] = str(workdir / ".cache")
    env["PYTHONUNBUFFERED"] = "1"
    env["MPLBACKEND"] = "Agg"
    env.pop("PYTHONPATH", None)
    return env


class SkillRun:
    """The working folder of one skill and the outcome of each of its blocks run so far."""

    def __init__(self, skill: str, root: Path):
        self.skill = skill
        self.dir = root / skill
        self.dir.mkdir(parents=True)
        (self.dir / "scripts").symlink_to(PRODUCT_ROOT / "scripts", target_is_directory=True)
        self.outcome: dict[int, tuple[str, str]] = {}  # index -> ("ok" | "skip" | "fail", detail)

    def run(self, block: Block) -> tuple[str, str]:
        for earlier in BLOCKS[self.skill][: block.index]:
            if earlier.index not in self.outcome and (earlier.lang in RUN_LANGS or "file" in earlier.tags):
                self.outcome[earlier.index] = self._execute(earlier)
        if block.index not in self.outcome:
            self.outcome[block.index] = self._execute(block)
        failed = [BLOCKS[self.skill][i].id for i, (s, _) in self.outcome.items() if s == "fail" and i < block.index]
        state, detail = self.outcome[block.index]
        if state == "fail" and failed:
            detail += f"\n(earlier blocks of this skill failed too: {', '.join(failed)})"
        return state, detail

    def _execute(self, block: Block) -> tuple[str, str]:
        why = missing_requirement(block)
        if why:
            return "skip", why
        if "file" in block.tags:
            target = self.dir / block.tags["file"]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(block.code, encoding="utf-8")
            try:
                if block.lang == "python":
                    compile(block.code, str(target), "exec")
                elif block.lang == "json":
                    json.loads(block.code)
            except (SyntaxError, ValueError) as exc:
                return "fail", f"{block.id}: file={target.name} does not parse: {exc}"
            return "ok", ""
        script = self.dir / f".block-L{block.line}.{'py' if block.lang == 'python' else 'sh'}"
        script.write_text(block.code, encoding="utf-8")
        cmd = [sys.executable, script.name] if block.lang == "python" else ["bash", "-euo", "pipefail", script.name]
        cwd = self.dir
        if "install" in block.tags.get("requires", "").split(","):
            cwd = PRODUCT_ROOT.parent          # install commands name the product folder, compileiq/
            cmd[-1] = str(script)
        try:
            proc = subprocess.run(cmd, cwd=cwd, env=block_env(self.dir), capture_output=True, text=True,
                                  timeout=BLOCK_TIMEOUT, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired as exc:
            out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
            return "fail", f"{block.id}: still running after {BLOCK_TIMEOUT} s\n{out[-3000:]}"
        if proc.returncode != 0:
            return "fail", (f"{block.id}: exit status {proc.returncode}\n--- block ---\n{block.code}"
                            f"--- stdout ---\n{proc.stdout[-4000:]}\n--- stderr ---\n{proc.stderr[-4000:]}")
        return "ok", proc.stdout


@pytest.fixture(scope="session")
def skill_runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("skill-blocks")
    runs: dict[str, SkillRun] = {}

    def get(skill: str) -> SkillRun:
        if skill not in runs:
            runs[skill] = SkillRun(skill, root)
        return runs[skill]
    return get


@pytest.mark.parametrize("block", RUNNABLE, ids=[b.id for b in RUNNABLE])
def test_block_runs(block, skill_runs):
    state, detail = skill_runs(block.skill).run(block)
    if state == "skip":
        pytest.skip(detail)
    assert state == "ok", detail


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
        assert set(b.tags) <= {"file", "requires"}, f"{b.id}: unknown info-string tags {sorted(b.tags)}"
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
