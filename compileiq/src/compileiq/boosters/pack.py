"""A booster pack loaded and verified: its manifest, and one configuration per controls file.

A pack is a zip or a folder holding ``booster-pack-manifest.json`` (NVIDIA's schema, parsed by
``search_spaces.packs``, the reader AcfCatalogSpace uses) and the files it lists. Every file is
checked against the manifest's size and sha256 before anything is returned, so a damaged or
edited pack never reaches a compiler. A configuration is a controls file: an open one (the
``# compileiq-controls`` header, options in plain text, any compiler version) or a vendor ACF
(opaque, locked to the CUDA minor version in ``cuda_version``).

Open packs for gcc or clang name ``compiler_version`` instead of ``cuda_version``; NVIDIA's schema
has only the latter, so it is filled in from the former before parsing.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from ..controls.format import ControlsError, is_open_controls, parse_controls
from ..search_spaces.packs import PACK_MANIFEST, PackError, PackManifest, PackSource, parse_pack_manifest

CUDA_STAGES = ("ptxas", "nvcc")


class PackVerifyError(PackError):
    """A file of a pack is missing or differs from the manifest (``filename``, ``expected``, ``actual``)."""

    def __init__(self, message: str, path=None, filename: str = "", expected=None, actual=None):
        super().__init__(message, path=path)
        self.filename = filename
        self.expected = expected
        self.actual = actual


_REFIX = ("Fix: re-download or re-copy the pack; if you changed the file on purpose, rewrite the manifest "
          "with `compileiq pack manifest <folder> ...` (compileiq.boosters.write_pack_manifest)")


@dataclass(frozen=True)
class PackConfig:
    """One configuration of a pack: the bytes of a controls file and what they are."""

    name: str        # the file name without its extension ("O0"), or the whole name when stems collide
    filename: str
    data: bytes = field(repr=False)
    sha256: str = ""

    @property
    def hex(self) -> str:
        """What an objective receives for this configuration (as in a search)."""
        return self.data.hex()

    @property
    def kind(self) -> str:
        return "open" if is_open_controls(self.data) else "vendor"

    @property
    def options(self) -> tuple[str, ...]:
        """The options of an open controls file; () for a vendor ACF, whose content is opaque."""
        return parse_controls(self.data, self.filename).options if self.kind == "open" else ()

    def describe(self) -> str:
        if self.kind == "open":
            return " ".join(self.options) or "(no options)"
        return f"vendor ACF, {len(self.data):,} bytes, sha256 {self.sha256[:12]}"

    def write(self, folder: str | os.PathLike) -> Path:
        """Write the file into ``folder`` (created if needed) and return its path."""
        dest = Path(folder) / self.filename
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(self.data)
        return dest


@dataclass(frozen=True)
class Pack:
    """A verified booster pack. ``configs`` maps each configuration's name to the hex string an
    objective receives; ``files`` holds the PackConfig objects (bytes, kind, options)."""

    manifest: PackManifest
    source: Path
    files: dict = field(repr=False)
    version_kind: str = "cuda"     # "cuda" (cuda_version) or "compiler" (compiler_version)
    builtin: bool = False

    pack_id = property(lambda self: self.manifest.pack_id)
    display_name = property(lambda self: self.manifest.display_name or self.manifest.pack_id)
    description = property(lambda self: self.manifest.description)
    pack_type = property(lambda self: self.manifest.pack_type)
    controls_stage = property(lambda self: self.manifest.controls_stage)
    version = property(lambda self: self.manifest.cuda_version)

    @property
    def configs(self) -> dict[str, str]:
        return {name: cfg.hex for name, cfg in self.files.items()}

    @property
    def names(self) -> list[str]:
        return list(self.files)

    @property
    def version_locked(self) -> bool:
        """True when the pack holds vendor ACFs, which only the CUDA minor version in cuda_version accepts."""
        return any(cfg.kind == "vendor" for cfg in self.files.values())

    def config(self, name: str) -> PackConfig:
        if name in self.files:
            return self.files[name]
        for cfg in self.files.values():
            if cfg.filename == name:
                return cfg
        raise KeyError(f"pack {self.pack_id} has no configuration {name!r}; it has {', '.join(self.files)}")

    def summary(self) -> str:
        label = "CUDA" if self.version_kind == "cuda" else self.controls_stage
        lines = [f"{self.pack_id}: {self.display_name} ({self.pack_type}, {self.controls_stage}, {label} "
                 f"{self.version}{', open controls' if not self.version_locked else ', vendor ACFs'})",
                 f"  source: {self.source}{' (built in)' if self.builtin else ''}"]
        if self.description:
            lines.append(f"  {self.description}")
        lines += [f"  {name:<12} {cfg.describe()}" for name, cfg in self.files.items()]
        return "\n".join(lines)


def _manifest_doc(src: PackSource) -> tuple[dict, str, str]:
    raw = src.read(PACK_MANIFEST)
    where = f"{src.path}:{PACK_MANIFEST}" if src.zip is not None else str(src.path / PACK_MANIFEST)
    if raw is None:
        raise PackError(f"{src.path}: no {PACK_MANIFEST}; a booster pack is a zip or folder holding its controls "
                        "files and that manifest. Fix: point at the pack itself, or write the manifest with "
                        "`compileiq pack manifest <folder> ...`", path=str(src.path))
    try:
        doc = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise PackError(f"{where}: not valid JSON ({exc}); re-download the pack", path=where, pointer="/") from None
    if not isinstance(doc, dict):
        raise PackError(f"{where}: not a JSON object", path=where, pointer="/")
    kind = "cuda"
    if doc.get("cuda_version") is None and doc.get("compiler_version") is not None:
        if doc.get("controls_stage") in CUDA_STAGES:
            raise PackError(f"{where}: a {doc['controls_stage']} pack names cuda_version (e.g. \"13.3.0\"), not "
                            "compiler_version", path=where, pointer="/compiler_version")
        doc = {**doc, "cuda_version": doc["compiler_version"]}
        kind = "compiler"
    elif doc.get("cuda_version") is None:
        raise PackError(f"{where}: /cuda_version is missing; a pack for ptxas or nvcc names cuda_version "
                        "(e.g. \"13.3.0\"), a pack for gcc or clang names compiler_version (e.g. \"12.2.0\")",
                        path=where, pointer="/cuda_version")
    return doc, where, kind


def _verify(src: PackSource, manifest: PackManifest) -> dict[str, bytes]:
    out = {}
    for f in manifest.files:
        data = src.read(f.filename)
        where = str(src.path)
        if data is None:
            raise PackVerifyError(f"{where}: {f.filename} is listed in {PACK_MANIFEST} but is not in the pack. "
                                  + _REFIX, path=where, filename=f.filename, expected=f.sha256, actual=None)
        if len(data) != f.size_bytes:
            raise PackVerifyError(f"{where}: {f.filename} has {len(data):,} bytes, the manifest expects "
                                  f"{f.size_bytes:,}. " + _REFIX, path=where, filename=f.filename,
                                  expected=f.size_bytes, actual=len(data))
        actual = hashlib.sha256(data).hexdigest()
        if actual != f.sha256:
            raise PackVerifyError(f"{where}: wrong checksum for {f.filename}: the manifest expects sha256 "
                                  f"{f.sha256}, the file has {actual}. " + _REFIX, path=where,
                                  filename=f.filename, expected=f.sha256, actual=actual)
        out[f.filename] = data
    return out


def _check_controls(where: str, stage: str, filename: str, data: bytes) -> None:
    if not is_open_controls(data):
        if stage not in CUDA_STAGES:
            raise PackError(f"{where}: {filename} is a vendor ACF, but the pack's controls_stage is {stage}; only "
                            "ptxas and nvcc read ACFs. Fix: give a gcc/clang pack open controls files "
                            "(compileiq.controls.write_controls)", path=where)
        return
    try:
        parsed = parse_controls(data, filename)
    except ControlsError as exc:
        raise PackError(f"{where}: {exc}", path=where) from None
    if parsed.compiler != stage and not (parsed.compiler == "ptxas" and stage == "nvcc"):
        raise PackError(f"{where}: {filename} holds {parsed.compiler} options (its header says "
                        f"compiler={parsed.compiler}), but the pack's controls_stage is {stage}. Fix: set "
                        f"controls_stage to {parsed.compiler} or rewrite the file for {stage}", path=where)


def _names(filenames: list[str]) -> list[str]:
    stems = [PurePosixPath(n).stem for n in filenames]
    return [s if stems.count(s) == 1 and s else n for s, n in zip(stems, filenames)]


def load_pack(path: str | os.PathLike, *, verify: bool = True) -> Pack:
    """Load a booster pack from a zip, a folder, or the id of a built-in pack (``list_packs()``).

    Every listed file is checked (present, size, sha256); a mismatch raises PackVerifyError naming
    the file, what the manifest expects and what the file has. ``verify=False`` skips only the
    checksums (never the format checks)."""
    from .builtin import builtin_path  # builtin imports this module

    p = Path(path).expanduser()
    builtin = False
    if not p.exists():
        hit = builtin_path(str(path))
        if hit is None:
            from .builtin import builtin_ids
            raise PackError(f"{p}: no such zip or folder, and not a built-in pack ({', '.join(builtin_ids())}). "
                            "Fix: check the path, or list the packs with `compileiq pack list`", path=str(p))
        p, builtin = hit, True
    src = PackSource(p)
    doc, where, kind = _manifest_doc(src)
    manifest = parse_pack_manifest(doc, where)
    if verify:
        blobs = _verify(src, manifest)
    else:
        blobs = {}
        for f in manifest.files:
            data = src.read(f.filename)
            if data is None:
                raise PackVerifyError(f"{p}: {f.filename} is listed in {PACK_MANIFEST} but is not in the pack. "
                                      + _REFIX, path=str(p), filename=f.filename, expected=f.sha256)
            blobs[f.filename] = data
    files = {}
    for name, f in zip(_names([f.filename for f in manifest.files]), manifest.files):
        _check_controls(str(p), manifest.controls_stage, f.filename, blobs[f.filename])
        files[name] = PackConfig(name, f.filename, blobs[f.filename], f.sha256)
    return Pack(manifest=manifest, source=p, files=files, version_kind=kind, builtin=builtin)


__all__ = ["Pack", "PackConfig", "PackVerifyError", "PackError", "load_pack", "CUDA_STAGES"]
