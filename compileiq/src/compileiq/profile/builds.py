"""The two builds ``compileiq profile`` compares: a cubin given as is, or one compiled here.

Inputs are told apart by content, not name: an ELF file is a cubin, a fatbin has its own magic
number, PTX is text with ``.version`` and ``.target`` directives, and a ``.cu`` file is CUDA source
(compiled with nvcc). PTX and CUDA sources are compiled with the build's controls file, and
``ptxas -v`` gives exact spill bytes; for a cubin, resource usage comes from ``cuobjdump
-res-usage`` (which reports no spill bytes) and spills show as local-memory instructions.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from ..compilers import CompileError, nvcc, ptxas
from ..compilers.sass import SassToolError, disassemble, find_tool
from ..controls.format import is_open_controls, parse_controls

ELF_MAGIC = b"\x7fELF"
FATBIN_MAGIC = b"\x50\xed\x55\xba"  # 0xBA55ED50, little-endian


class ProfileInputError(ValueError):
    """An input file that is missing or is none of the kinds profile reads."""


def input_kind(path: str | os.PathLike) -> str:
    """'cubin', 'fatbin', 'ptx' or 'cu', from the file's content; ProfileInputError otherwise."""
    p = Path(path)
    if not p.exists():
        raise ProfileInputError(f"{p}: no such file (relative paths are taken from {os.getcwd()})")
    if not p.is_file():
        raise ProfileInputError(f"{p} is a folder; give a cubin, a PTX file or a .cu file")
    with p.open("rb") as fh:
        head = fh.read(8192)
    if head.startswith(ELF_MAGIC):
        return "cubin"
    if head.startswith(FATBIN_MAGIC):
        return "fatbin"
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:
        text = ""
    if re.search(r"^\s*\.version\s+\d", text, re.M) and re.search(r"^\s*\.target\s+\w", text, re.M):
        return "ptx"
    if p.suffix in (".cu", ".cuh") and text:
        return "cu"
    raise ProfileInputError(f"{p} is not a cubin (ELF), a fatbin, PTX (text with .version and .target) or a .cu "
                            "file; give the cubin your build produced, or the PTX and a controls file")


@dataclass
class Build:
    """One side of the comparison: where its cubin came from, its resources and its SASS."""

    label: str
    path: Path               # the input as given
    kind: str                # cubin, fatbin, ptx or cu
    cubin: Path              # what was disassembled and what the run command receives
    controls: Path | None = None
    arch: str | None = None
    compiler: str = ""
    resources: dict[str, int | None] = field(default_factory=dict)
    sass: str | None = None  # cuobjdump -sass text; None when cuobjdump is missing
    notes: list[str] = field(default_factory=list)

    def describe(self) -> str:
        if self.kind in ("cubin", "fatbin"):
            return f"{self.path} ({self.kind} as given)"
        ctl = "no controls"
        if self.controls is not None:
            data = self.controls.read_bytes()
            opts = " ".join(parse_controls(data, str(self.controls)).options) if is_open_controls(data) else "vendor ACF"
            ctl = f"controls {self.controls.name}: {opts or '(no options)'}"
        return f"{self.path} ({self.compiler} {self.arch}, {ctl})"


def _res_usage(binary: Path, kernel: str | None) -> dict[str, int | None]:
    """REG/STACK/SHARED/LOCAL of ``cuobjdump -res-usage``: the worst function, or ``kernel``."""
    tool = find_tool("cuobjdump")
    proc = subprocess.run([str(tool), "-res-usage", str(binary)], capture_output=True, text=True, errors="replace",
                          timeout=120)
    if proc.returncode != 0:
        msg = " ".join((proc.stderr or proc.stdout).split())[:300]
        raise SassToolError(f"cuobjdump -res-usage {binary} failed (exit {proc.returncode}): {msg}")
    funcs: dict[str, dict[str, int]] = {}
    current = None
    for line in proc.stdout.splitlines():
        if m := re.match(r"\s*Function\s+([^:\s]+)\s*:", line):
            current = m.group(1)
        elif current is not None and "REG:" in line:
            funcs[current] = {k: int(v) for k, v in re.findall(r"\b(REG|STACK|SHARED|LOCAL):(\d+)", line)}
            current = None
    if kernel is not None:
        funcs = {k: v for k, v in funcs.items() if k == kernel}
    if not funcs:
        return {}
    pick = lambda key: max(f.get(key, 0) for f in funcs.values())  # noqa: E731
    return {"registers": pick("REG"), "stack": pick("STACK"), "smem": pick("SHARED"), "local": pick("LOCAL"),
            "spill_stores": None, "spill_loads": None}


def _from_ptxas(result, kernel: str | None) -> dict[str, int | None]:
    usage = result.resources
    if kernel is not None:
        try:
            f = usage.kernel(kernel)
        except KeyError as exc:
            raise ProfileInputError(str(exc.args[0])) from None
        return {"registers": f.registers, "stack": f.stack, "smem": f.smem, "local": None,
                "spill_stores": f.spill_stores, "spill_loads": f.spill_loads}
    return {"registers": usage.registers, "stack": usage.stack, "smem": usage.smem, "local": None,
            "spill_stores": usage.spill_stores, "spill_loads": usage.spill_loads}


def make_build(label: str, path: str | os.PathLike, controls: str | os.PathLike | None, *, arch: str,
               out_dir: Path, kernel: str | None = None, timeout: float | None = 300) -> Build:
    """Compile (when needed), read resources and disassemble one side. Raises ProfileInputError for
    bad input, CompileError when the compiler refuses it."""
    p = Path(path)
    kind = input_kind(p)
    ctl = None
    if controls is not None:
        ctl = Path(controls)
        if not ctl.is_file():
            raise ProfileInputError(f"--{label}-controls {ctl}: no such file")
        if kind in ("cubin", "fatbin"):
            raise ProfileInputError(f"--{label}-controls {ctl}: {p} is already compiled ({kind}); controls apply "
                                    "when compiling, so give the PTX (or .cu) instead of the cubin")
    build = Build(label, p, kind, p, controls=ctl)
    if kind in ("ptx", "cu"):
        out = out_dir / f"{label}.cubin"
        compile_fn = ptxas if kind == "ptx" else nvcc
        result = compile_fn(p, arch=arch, controls=ctl, out=out, timeout=timeout)
        build.cubin, build.arch, build.compiler = out, arch, result.compiler
        build.resources = _from_ptxas(result, kernel)
    try:
        build.sass = disassemble(build.cubin)
        if not build.resources:
            build.resources = _res_usage(build.cubin, kernel)
    except SassToolError as exc:
        build.notes.append(f"no SASS comparison: {exc}")
    return build


__all__ = ["Build", "ProfileInputError", "input_kind", "make_build", "CompileError"]
