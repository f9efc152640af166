"""SASS facts of a cubin: instruction count and a hash that ignores encodings, addresses and comments.

The hash answers "did this candidate produce the same machine code as another?", so a search can
skip benchmarking a binary it has already timed. ``cuobjdump -sass`` prints one line per
instruction, ``/*0040*/  IADD3 R1, R1, -0x20, RZ ;  /* 0xffffffe001017810 */``, followed by a
line with the rest of the encoding; only the instruction text between the address and the ``;``
takes part in the hash.

cuobjdump is looked up on PATH, then in the CUDA toolkit (CUDA_HOME, CUDA_PATH, /usr/local/cuda),
then in the ``nvidia-cuda-cuobjdump`` wheel. ``cuobjdump -sass`` runs ``nvdisasm``, which is found
the same way (the ``nvidia-cuda-nvdisasm`` wheel).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import CompileIQError

_INSTR = re.compile(r"^\s*/\*([0-9a-fA-F]{4,})\*/\s+(.*?)\s*;")
_FUNC = re.compile(r"^\s*Function\s*:\s*(\S+)")
_CODE_FOR = re.compile(r"^\s*code for (\S+)")

WHEELS = {"cuobjdump": "nvidia-cuda-cuobjdump", "nvdisasm": "nvidia-cuda-nvdisasm"}


class SassToolError(CompileIQError, RuntimeError):
    """cuobjdump/nvdisasm is missing or could not disassemble a file."""


def _cuda_dirs() -> list[Path]:
    dirs = []
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            dirs.append(Path(os.environ[var]) / "bin")
    dirs.append(Path("/usr/local/cuda/bin"))
    return dirs


def _wheel_dirs() -> list[Path]:
    # the NVIDIA wheels install into the namespace package ``nvidia`` (cu13/bin in CUDA 13 wheels,
    # <component>/bin in older ones)
    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        return []
    roots = list(spec.submodule_search_locations or []) if spec else []
    out = []
    for root in roots:
        out.extend(sorted(Path(root).glob("*/bin"), reverse=True))
    return out


@functools.lru_cache(maxsize=None)
def find_tool(name: str) -> Path:
    """The path of ``cuobjdump`` or ``nvdisasm``: PATH, then the CUDA toolkit, then the pip wheel."""
    hit = shutil.which(name)
    if hit:
        return Path(hit)
    for d in _cuda_dirs() + _wheel_dirs():
        cand = d / name
        if cand.is_file() and os.access(cand, os.X_OK):
            return cand
    raise SassToolError(
        f"{name} not found on PATH, in the CUDA toolkit (CUDA_HOME, /usr/local/cuda) or in the "
        f"{WHEELS.get(name, name)} wheel; SASS counts and hashes need it. Fix: "
        f"pip install {' '.join(WHEELS.values())}")


@dataclass(frozen=True)
class SassInfo:
    """Instruction count and normalised-SASS hash of one binary, with per-function counts."""

    count: int
    hash: str
    functions: dict[str, int] = field(default_factory=dict)
    nops: int = 0

    @property
    def count_without_nops(self) -> int:
        return self.count - self.nops


def parse_sass(text: str) -> SassInfo:
    """Count and hash the instructions of ``cuobjdump -sass`` output (pure text processing)."""
    h = hashlib.sha256()
    count = nops = 0
    functions: dict[str, int] = {}
    current = None
    for line in text.splitlines():
        if m := _INSTR.match(line):
            instr = " ".join(m.group(2).split())
            h.update(instr.encode() + b"\n")
            count += 1
            if instr == "NOP":
                nops += 1
            if current is not None:
                functions[current] += 1
        elif m := _FUNC.match(line):
            current = m.group(1)
            functions.setdefault(current, 0)
            h.update(b"function " + current.encode() + b"\n")
        elif m := _CODE_FOR.match(line):
            h.update(b"arch " + m.group(1).encode() + b"\n")
    return SassInfo(count=count, hash=h.hexdigest(), functions=functions, nops=nops)


def disassemble(binary: str | os.PathLike, timeout: float | None = 120) -> str:
    """``cuobjdump -sass`` of a cubin, fatbin or object file, as text."""
    path = Path(binary)
    if not path.is_file():
        raise SassToolError(f"cannot disassemble {path}: no such file")
    cuobjdump = find_tool("cuobjdump")
    env = dict(os.environ)
    try:
        nvdisasm = find_tool("nvdisasm")
        env["PATH"] = f"{nvdisasm.parent}{os.pathsep}{env.get('PATH', '')}"
    except SassToolError:
        pass  # cuobjdump names what it misses in its own error below
    try:
        proc = subprocess.run([str(cuobjdump), "-sass", str(path)], capture_output=True, text=True, env=env,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        raise SassToolError(f"cuobjdump -sass {path.name} did not finish within {timeout} s") from None
    if proc.returncode != 0:
        msg = " ".join((proc.stderr or proc.stdout).split())[:300]
        fix = (f"; install nvdisasm: pip install {WHEELS['nvdisasm']}" if "nvdisasm" in msg else "")
        raise SassToolError(f"cuobjdump -sass {path} failed (exit {proc.returncode}): {msg}{fix}")
    return proc.stdout


def sass_info(binary: str | os.PathLike, timeout: float | None = 120) -> SassInfo:
    """Disassemble ``binary`` and return its instruction count and SASS hash."""
    return parse_sass(disassemble(binary, timeout=timeout))


def sass_available() -> bool:
    try:
        find_tool("cuobjdump")
        find_tool("nvdisasm")
    except SassToolError:
        return False
    return True


__all__ = ["SassInfo", "SassToolError", "disassemble", "find_tool", "parse_sass", "sass_available", "sass_info"]
