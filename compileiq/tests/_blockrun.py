"""Running the code blocks of a Markdown page as a user would paste them (skills, READMEs, docs).

How blocks run:

* Each page gets its own temporary working folder. Its blocks run there in document order, so a
  block may use files an earlier block of the same page wrote (a results CSV, a kernel source).
  Running one block alone (``-k``) first runs the blocks before it on that page.
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
    - ``timing=N``: the block times something on this shared machine (the canary); a failed run
      is repeated up to N runs in all, as a user would re-run a measurement. If the last run exits
      with status 2 and the canary's own UNDECIDED report (the baseline's runs spread too much to
      tell), the block passes: the product said the host was too noisy, and reached no verdict.
      Any other failure, a wrong verdict included, fails;
    - ``requires=a,b``: run only when every requirement holds, otherwise skip with the reason.
      Requirements: gpu (cuda-python, a driver and a device), nvidia-smi, ncu, ptxas, nvcc, gcc,
      clang, cuobjdump, triton, ray, clock-lock (changes GPU clocks: runs only with
      CIQ_TEST_ALLOW_CLOCK_LOCK=1) and install (installs packages into the environment: runs only
      with CIQ_TEST_ALLOW_INSTALL=1, from the repository root, where ``compileiq/`` is).
* ```text blocks are example output and never run; ```json blocks must parse.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

PRODUCT_ROOT = Path(__file__).resolve().parents[1]

RUN_LANGS = {"python", "bash", "sh"}
KNOWN_LANGS = RUN_LANGS | {"text", "json", "c"}
BLOCK_TIMEOUT = 180

FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,})(?P<info>[^`]*)$")


@dataclass
class Block:
    page: str
    index: int
    line: int
    lang: str
    tags: dict = field(default_factory=dict)
    code: str = ""

    @property
    def id(self) -> str:
        return f"{self.page}:L{self.line}:{self.lang}"


def parse_blocks(page: str, text: str) -> list[Block]:
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
            raise AssertionError(f"{page}:{i + 1}: code fence never closed")
        blocks.append(Block(page, len(blocks), i + 1, lang, tags, "\n".join(body) + "\n"))
        i = j + 1
    return blocks


def runnable(blocks: list[Block]) -> list[Block]:
    return [b for b in blocks if b.lang in RUN_LANGS or "file" in b.tags]


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


def _ray() -> str | None:
    import importlib.util
    return None if importlib.util.find_spec("ray") else "needs ray (pip install ray)"


REQUIREMENTS = {"install": _install, "ray": _ray, "gpu": _gpu, "nvidia-smi": _nvidia_smi, "ncu": _ncu, "ptxas": lambda: _compiler("ptxas"),
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


class PageRun:
    """The working folder of one page and the outcome of each of its blocks run so far."""

    def __init__(self, page: str, blocks: list, root: Path):
        self.page = page
        self.blocks = blocks
        self.dir = root / re.sub(r"[^\w.-]", "_", page)
        self.dir.mkdir(parents=True)
        (self.dir / "scripts").symlink_to(PRODUCT_ROOT / "scripts", target_is_directory=True)
        self.outcome: dict[int, tuple[str, str]] = {}  # index -> ("ok" | "skip" | "fail", detail)

    def run(self, block: Block) -> tuple[str, str]:
        for earlier in self.blocks[: block.index]:
            if earlier.index not in self.outcome and (earlier.lang in RUN_LANGS or "file" in earlier.tags):
                self.outcome[earlier.index] = self._execute(earlier)
        if block.index not in self.outcome:
            self.outcome[block.index] = self._execute(block)
        failed = [self.blocks[i].id for i, (s, _) in self.outcome.items() if s == "fail" and i < block.index]
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
        for _attempt in range(max(1, int(block.tags.get("timing") or 1))):
            try:
                proc = subprocess.run(cmd, cwd=cwd, env=block_env(self.dir), capture_output=True, text=True,
                                      timeout=BLOCK_TIMEOUT, stdin=subprocess.DEVNULL)
            except subprocess.TimeoutExpired as exc:
                out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
                return "fail", f"{block.id}: still running after {BLOCK_TIMEOUT} s\n{out[-3000:]}"
            if proc.returncode == 0:
                break
        if proc.returncode == 2 and "timing" in block.tags and undecided_for_noise(proc.stdout):
            return "ok", proc.stdout
        if proc.returncode != 0:
            return "fail", (f"{block.id}: exit status {proc.returncode}\n--- block ---\n{block.code}"
                            f"--- stdout ---\n{proc.stdout[-4000:]}\n--- stderr ---\n{proc.stderr[-4000:]}")
        return "ok", proc.stdout


def undecided_for_noise(stdout: str) -> bool:
    """The canary's report says it could not decide because the baseline's (or the same
    configuration's) own runs spread too much."""
    return bool(re.search(r"^O0/O3 canary \(.*\): UNDECIDED$", stdout, re.M)) and \
        bool(re.search(r"could not decide: (the baseline|\S+)'s own runs spread by", stdout))


def page_runs(root: Path, blocks_by_page: dict[str, list[Block]]):
    """A getter page -> PageRun, each page's folder made on first use under ``root``."""
    runs: dict[str, PageRun] = {}

    def get(page: str) -> PageRun:
        if page not in runs:
            runs[page] = PageRun(page, blocks_by_page[page], root)
        return runs[page]
    return get


def check_block(block: Block, runs) -> None:
    """Run ``block`` (after the earlier blocks of its page): pass, skip with the reason, or fail with the output."""
    import pytest
    state, detail = runs(block.page).run(block)
    if state == "skip":
        pytest.skip(detail)
    assert state == "ok", detail
