"""Which compiler binary CompileIQ uses, and its version.

One place decides this, so a search space, a controls-file check and a compile helper never
disagree about the compiler. The order for ptxas and nvcc is: the ``CIQ_PTXAS`` / ``CIQ_NVCC``
variable, then the name on PATH, then the binary inside the ``nvidia-cuda-nvcc`` wheel (CUDA 13
wheels put it in ``nvidia/cu13/bin``, CUDA 12 wheels in ``nvidia/cuda_nvcc/bin``). gcc and clang:
``CIQ_GCC`` / ``CIQ_CLANG``, then PATH. A variable that is set but names no usable binary is an
error rather than a silent fall-through: the user asked for that binary.

    from compileiq.compilers.discovery import find_ptxas
    tc = find_ptxas()          # Toolchain(name='ptxas', path='/usr/local/bin/ptxas', version=(13, 0), release='13.0.88')
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from .. import _env
from ..errors import CompileIQError

COMPILERS = ("ptxas", "nvcc", "gcc", "clang")
_WHEEL_DIRS = ("cu13/bin", "cuda_nvcc/bin", "cu12/bin")  # newest layout first
_INSTALL_HINT = {
    "ptxas": "install the CUDA toolkit (13.3 or newer for vendor ACFs) or `pip install nvidia-cuda-nvcc`, "
             "or point CIQ_PTXAS at a ptxas binary",
    "nvcc": "install the CUDA toolkit or `pip install nvidia-cuda-nvcc` (the wheel's nvcc compiles .ptx but "
            "not .cu), or point CIQ_NVCC at an nvcc binary",
    "gcc": "install gcc (Debian/Ubuntu: apt-get install gcc) or point CIQ_GCC at a gcc binary",
    "clang": "install clang (Debian/Ubuntu: apt-get install clang) or point CIQ_CLANG at a clang binary",
}


class CompilerNotFoundError(CompileIQError, FileNotFoundError):
    """No usable binary for a compiler CompileIQ needs; the message names where it looked and the fix."""


@dataclass(frozen=True)
class Toolchain:
    """A compiler binary: ``version`` is (major, minor), or the raw text when it could not be parsed."""

    name: str
    path: str
    version: tuple[int, int] | str
    release: str = ""  # the full version, e.g. "13.0.88" or "12.2.0"

    @property
    def version_str(self) -> str:
        return ".".join(map(str, self.version)) if isinstance(self.version, tuple) else self.version


_CUDA_RE = re.compile(r"release (\d+)\.(\d+), V(\d+(?:\.\d+)*)")
_CLANG_RE = re.compile(r"clang version (\d+)\.(\d+)(?:\.(\d+))?")
_GCC_RE = re.compile(r"^(\d+)(?:\.(\d+))?(?:\.(\d+))?$")


def _run(args: list[str]) -> str:
    try:
        proc = subprocess.run(args, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise CompilerNotFoundError(f"{args[0]} could not be run ({exc}); check that it is an executable "
                                    "compiler binary for this machine") from None
    return (proc.stdout or "") + (proc.stderr or "")


@lru_cache(maxsize=64)
def _version_of(path: str, _stamp: tuple) -> tuple[tuple[int, int] | str, str]:
    text = _run([path, "--version"])
    m = _CUDA_RE.search(text)
    if m:
        return (int(m.group(1)), int(m.group(2))), m.group(3)
    m = _CLANG_RE.search(text)
    if m:
        return (int(m.group(1)), int(m.group(2))), ".".join(g for g in m.groups() if g)
    if "gcc" in Path(path).name or "Free Software Foundation" in text:
        full = _run([path, "-dumpfullversion"]).strip()
        m = _GCC_RE.match(full)
        if m:
            return (int(m.group(1)), int(m.group(2) or 0)), full
    first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "unknown")
    return first, first


def compiler_version(path: str | os.PathLike) -> tuple[int, int] | str:
    """(major, minor) of the compiler at ``path`` from its ``--version`` output (cached per file)."""
    return _probe(path)[0]


def _probe(path) -> tuple[tuple[int, int] | str, str]:
    p = str(path)
    st = os.stat(p)
    return _version_of(p, (st.st_mtime_ns, st.st_size, st.st_ino))


def _usable(path: str | os.PathLike | None) -> str | None:
    if not path:
        return None
    p = Path(path).expanduser()
    return str(p) if p.is_file() and os.access(p, os.X_OK) else None


def wheel_binary(name: str) -> str | None:
    """The ``name`` binary inside an installed nvidia-cuda-nvcc wheel, or None."""
    roots: list[str] = []
    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.submodule_search_locations:
        roots.extend(spec.submodule_search_locations)
    roots.extend(str(Path(p) / "nvidia") for p in sys.path if p)
    for root in dict.fromkeys(roots):
        for sub in _WHEEL_DIRS:
            found = _usable(Path(root) / sub / name)
            if found:
                return found
    return None


def toolchain_at(name: str, path: str | os.PathLike) -> Toolchain:
    """A Toolchain for an explicit binary (no search)."""
    found = _usable(path)
    if found is None:
        raise CompilerNotFoundError(f"{name}: {path} is not an executable file; {_INSTALL_HINT.get(name, 'fix the path')}")
    version, release = _probe(found)
    return Toolchain(name, found, version, release)


def find_compiler(name: str) -> Toolchain:
    """The binary CompileIQ uses for ``name`` (ptxas, nvcc, gcc, clang), by the documented order."""
    if name not in COMPILERS:
        raise ValueError(f"unknown compiler {name!r}; CompileIQ knows {', '.join(COMPILERS)}")
    var = _env.compiler_variable(name)
    override = _env.compiler_override(name)
    if override is not None:
        found = _usable(override) or _usable(shutil.which(override))
        if found is None:
            raise CompilerNotFoundError(
                f"{var}={override!r} does not name an executable {name}; fix the path or unset {var} "
                f"to search PATH{' and the nvidia-cuda-nvcc wheel' if name in ('ptxas', 'nvcc') else ''}")
        return toolchain_at(name, found)
    found = _usable(shutil.which(name))
    if found is None and name in ("ptxas", "nvcc"):
        found = wheel_binary(name)
    if found is None:
        where = f"{var} (unset), PATH" + (", the nvidia-cuda-nvcc wheel" if name in ("ptxas", "nvcc") else "")
        raise CompilerNotFoundError(f"no {name} found (looked in {where}); {_INSTALL_HINT[name]}")
    return toolchain_at(name, found)


def find_ptxas() -> Toolchain:
    return find_compiler("ptxas")


def find_nvcc() -> Toolchain:
    return find_compiler("nvcc")


def find_gcc() -> Toolchain:
    return find_compiler("gcc")


def find_clang() -> Toolchain:
    return find_compiler("clang")


__all__ = ["Toolchain", "CompilerNotFoundError", "COMPILERS", "find_compiler", "find_ptxas", "find_nvcc",
           "find_gcc", "find_clang", "compiler_version", "toolchain_at", "wheel_binary"]
