"""A categorical search over vendor ACF files the user already has (a folder, or a booster-pack zip).

CompileIQ cannot make ACFs (they are encrypted; only NVIDIA's library writes them), but it can
choose among existing ones. The choice always includes "no-acf", which decodes to an open
controls file with no options: ``controls_args`` turns it into no arguments at all, so the
objective compiles with the compiler's defaults. Every ACF is checked before the search starts:
the compiler must be CUDA 13.3 or newer, of the pack's CUDA minor version, and accept each file in
a dry compile (``compileiq.controls.vendor``).

Packs follow NVIDIA's booster-pack-manifest.json schema; ``packs.read_pack_manifest`` reads and
verifies them (re-exported here for the booster-pack tooling).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Sequence

from .. import _env
from ..controls.format import format_controls, is_open_controls
from ..controls.vendor import VendorAcfError, check_vendor_acf, resolve_toolchain
from ..space.params import make_choice
from ..space.space import Component, Gene
from ..utils.fs import atomic_write
from .packs import (PACK_MANIFEST, PackError, PackFile, PackManifest, PackSource, parse_pack_manifest,
                    read_pack_manifest, verified_files)

NO_ACF = "no-acf"


class AcfCatalogComponent(Component):
    """One categorical gene: which file (or "no-acf"); decodes to the file's bytes as hex."""

    def __init__(self, names: list[str], blobs: list[bytes], describe: dict):
        self.names, self.blobs, self._describe = names, blobs, describe
        param = make_choice(names)
        self.genes = [Gene("acf", len(param.values), False)]

    def decode(self, values: Sequence[int]) -> str:
        return self.blobs[values[0]].hex()

    def describe(self) -> dict:
        return dict(self._describe)

    def diagnose(self, failed_scores) -> list[str]:
        text = " ".join(str(getattr(s, "error", "") or "") for s in failed_scores)
        if "Input file '#'" in text or "compileiq-controls" in text or "not in expected format" in text:
            return ["the 'no-acf' candidate is an open controls file (no options); apply every candidate with "
                    "compileiq.compilers.controls_args(path, compiler), which passes ACFs to --apply-controls and "
                    "turns 'no-acf' into no arguments"]
        if "Invalid compiler controls file" in text:
            return ["the compiler refused the ACFs: they were made for another CUDA version than the compiler the "
                    "objective runs; make the objective use the ptxas that AcfCatalogSpace checked (CIQ_PTXAS)"]
        return []


class AcfCatalogSpace:
    """Search over the ACFs in ``source`` (a folder of ``*.acf`` files, or a booster-pack zip/folder), plus "no-acf"."""

    def __init__(self, source: str | os.PathLike, compiler="ptxas", *, check_compiler: bool = True,
                 pattern: str = "*.acf"):
        self.source = Path(source).expanduser()
        self.compiler = compiler
        # the name goes into the "no-acf" controls header and is matched against the pack's controls_stage
        self.compiler_name = compiler if compiler in ("ptxas", "nvcc") else resolve_toolchain(compiler).name
        if self.compiler_name not in ("ptxas", "nvcc"):
            raise VendorAcfError(f"AcfCatalogSpace(compiler={compiler!r}): only ptxas and nvcc apply ACFs")
        self.check_compiler = bool(check_compiler)
        src = PackSource(self.source)
        self.pack: PackManifest | None = None
        if src.read(PACK_MANIFEST) is not None:
            self.pack = read_pack_manifest(self.source, verify=False)
            self.files = verified_files(src, self.pack)
            if self.pack.controls_stage != self.compiler_name:
                raise PackError(f"{self.source}: the pack's ACFs are for {self.pack.controls_stage} "
                                f"(controls_stage), not {self.compiler_name}; use AcfCatalogSpace(..., "
                                f"compiler={self.pack.controls_stage!r})", path=str(self.source))
        else:
            if src.zip is not None:
                raise PackError(f"{self.source}: a zip needs a {PACK_MANIFEST}; unpack plain .acf files into a "
                                "folder and pass the folder instead", path=str(self.source))
            names = sorted(p.name for p in self.source.glob(pattern) if p.is_file())
            if not names:
                raise PackError(f"{self.source}: no {pattern} files here; put the ACFs you have in this folder "
                                "(CompileIQ cannot create ACFs)", path=str(self.source))
            self.files = {n: (self.source / n).read_bytes() for n in names}
        self.toolchain = None
        if self.check_compiler:
            self._check()

    def _cuda_label(self) -> str:
        if self.pack is not None:
            return "%d.%d" % self.pack.cuda_minor
        tc = self.toolchain
        if tc is None:  # check_compiler=False: label with the local compiler when there is one
            from ..compilers.discovery import CompilerNotFoundError
            try:
                tc = resolve_toolchain(self.compiler)
            except CompilerNotFoundError:
                tc = None
        return tc.version_str if tc is not None and isinstance(tc.version, tuple) else "0"

    def _check(self) -> None:
        tc = resolve_toolchain(self.compiler)
        self.toolchain = tc
        if self.pack is not None and isinstance(tc.version, tuple) and tc.version != self.pack.cuda_minor:
            raise VendorAcfError(
                f"{self.source}: the pack's ACFs are for CUDA {self.pack.cuda_version}, but {tc.name} at {tc.path} is "
                f"CUDA {tc.version_str}; ACFs only work with the CUDA minor version that made them. Point CIQ_PTXAS "
                f"at a ptxas {'%d.%d' % self.pack.cuda_minor} (e.g. pip install nvidia-cuda-nvcc=="
                f"{'%d.%d' % self.pack.cuda_minor}.*), or use a pack made for {tc.version_str}")
        staged = _env.cache_root() / "acf-catalog"
        for name, data in self.files.items():
            if is_open_controls(data):
                continue  # an open controls file needs no vendor check
            path = self.source / name
            if self.pack is not None and not self.source.is_dir():  # a zip member needs a real file to probe
                path = staged / f"{hashlib.sha256(data).hexdigest()[:16]}.acf"
                if not (path.is_file() and path.read_bytes() == data):  # a truncated copy is rewritten
                    path.parent.mkdir(parents=True, exist_ok=True)
                    atomic_write(path, data)
            try:
                check_vendor_acf(path, tc)
            except VendorAcfError as exc:
                raise VendorAcfError(f"{self.source}: {name}: {exc}") from None

    def to_component(self) -> AcfCatalogComponent:
        names = [NO_ACF] + list(self.files)
        blobs = [format_controls(self.compiler_name, self._cuda_label(), [])]
        blobs += list(self.files.values())
        desc = {"type": "acf-catalog", "source": str(self.source),
                "pack_id": self.pack.pack_id if self.pack else None,
                "files": [{"name": n, "sha256": hashlib.sha256(b).hexdigest()} for n, b in zip(names, blobs)]}
        return AcfCatalogComponent(names, blobs, desc)

    def __repr__(self):
        return f"AcfCatalogSpace({str(self.source)!r}, compiler={self.compiler!r})"


__all__ = ["AcfCatalogSpace", "AcfCatalogComponent", "PackManifest", "PackFile", "PackError", "read_pack_manifest",
           "parse_pack_manifest", "NO_ACF", "PACK_MANIFEST"]
