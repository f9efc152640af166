"""The built-in open debug packs: O0..O3 for ptxas, nvcc, gcc and clang.

NVIDIA's Debug Pack holds vendor ACFs that only one CUDA minor version accepts. These packs hold
open controls files instead, so they work with any version of the compiler. They exist for the
O0/O3 canary: O0 must make a kernel clearly slower than the default build (the controls reached
the compiler), O3 must leave it as it was (ptxas and nvcc already build device code at O3).

The files are shipped as package data under ``boosters/packs/debug/<compiler>/`` and are
generated from DEBUG_LEVELS by ``write_debug_packs`` (a test checks that the two agree).
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

from ..controls.format import write_controls
from .build import write_pack_manifest

# The versions the files were written and checked with; open controls are not locked to them.
DEBUG_VERSIONS = {"ptxas": ("13.0", "13.0.0"), "nvcc": ("13.0", "13.0.0"), "gcc": ("12.2", "12.2.0"),
                  "clang": ("14.0", "14.0.6")}

# nvcc options are device-side: -O alone sets the host compiler's level, which a kernel never sees.
DEBUG_LEVELS = {
    "ptxas": {f"O{i}": [f"-O{i}"] for i in range(4)},
    "nvcc": {f"O{i}": [f"-Xcicc=-O{i}", f"-Xptxas=-O{i}"] for i in range(4)},
    "gcc": {f"O{i}": [f"-O{i}"] for i in range(4)},
    "clang": {f"O{i}": [f"-O{i}"] for i in range(4)},
}

_DESCRIPTION = ("Diagnostic pack of open controls files: O0 turns the {stage} optimiser off and should make a "
                "kernel much slower; O1 and O2 are in between; O3 is {o3}. Used by the O0/O3 canary to prove "
                "that a candidate's controls reach the compiler.")
_O3_NOTE = {"ptxas": "ptxas's default, so it should time like the baseline",
            "nvcc": "nvcc's default for device code, so it should time like the baseline",
            "gcc": "the usual release level (compare it with a baseline built at -O3; for -O2 builds use O2)",
            "clang": "the usual release level (compare it with a baseline built at -O3; for -O2 builds use O2)"}

EXTENSION = ".ctl"


def pack_id(compiler: str) -> str:
    return f"debug-pack-{compiler}"


def builtin_root() -> Path:
    return Path(str(resources.files("compileiq.boosters") / "packs"))


def _table() -> dict[str, Path]:
    return {pack_id(c): builtin_root() / "debug" / c for c in DEBUG_LEVELS}


def builtin_ids() -> list[str]:
    return list(_table())


def builtin_path(name: str) -> Path | None:
    """The folder of the built-in pack ``name`` (its pack_id, e.g. debug-pack-gcc), or None."""
    hit = _table().get(name)
    return hit if hit is not None and hit.is_dir() else None


def list_packs() -> list:
    """Every built-in pack, loaded and verified."""
    from .pack import load_pack
    return [load_pack(p) for p in builtin_ids()]


def debug_pack(compiler: str = "ptxas"):
    """The built-in open debug pack for ``compiler`` (ptxas, nvcc, gcc or clang)."""
    from .pack import PackError, load_pack
    name = getattr(compiler, "name", compiler)  # a Toolchain works too
    if name not in DEBUG_LEVELS:
        raise PackError(f"no built-in debug pack for {name!r}; there is one for {', '.join(DEBUG_LEVELS)}. "
                        "Fix: pass compiler= one of those, or pack= a pack of your own")
    return load_pack(pack_id(name))


def write_debug_packs(dest: str | os.PathLike) -> list[Path]:
    """Write the debug packs (controls files and manifests) under ``dest/<compiler>/``."""
    out = []
    for compiler, levels in DEBUG_LEVELS.items():
        header_version, version = DEBUG_VERSIONS[compiler]
        folder = Path(dest) / compiler
        folder.mkdir(parents=True, exist_ok=True)
        for level, options in levels.items():
            write_controls(folder / f"{level}{EXTENSION}", compiler, header_version, options)
        out.append(write_pack_manifest(
            folder, pack_id=pack_id(compiler), controls_stage=compiler, version=version, pack_type="diagnostic",
            display_name=f"Open Debug Pack ({compiler})",
            description=_DESCRIPTION.format(stage=compiler, o3=_O3_NOTE[compiler]),
            supported_gpus=["all"] if compiler in ("ptxas", "nvcc") else [],
            evidence="O0 is expected to be more than 5% slower than the default build; O3 within 5% of it "
                     "(see compileiq.boosters.canary)",
            files=[f"{level}{EXTENSION}" for level in levels]))
    return out


__all__ = ["DEBUG_LEVELS", "DEBUG_VERSIONS", "builtin_ids", "builtin_path", "builtin_root", "debug_pack",
           "list_packs", "pack_id", "write_debug_packs"]
