"""Booster packs: NVIDIA's booster-pack-manifest.json, read from a zip or a folder and verified.

The manifest names pack_id, display_name, artifact_name, description, pack_type (performance |
diagnostic), cuda_version, controls_stage (ptxas), supported_gpus, validation_summary, and the
pack's files as ``acfs`` (or ``files``): [{filename, sha256, size_bytes}]. Our own packs use the
same schema. ``read_pack_manifest`` is shared by AcfCatalogSpace and the booster-pack tooling.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from .errors import SpaceFileError

PACK_MANIFEST = "booster-pack-manifest.json"
PACK_TYPES = ("performance", "diagnostic")
_SHA_RE = re.compile(r"^[0-9a-f]{64}$")
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")
_CUDA_RE = re.compile(r"^(\d+)\.(\d+)(\.\d+)*$")


class PackError(SpaceFileError):
    """A booster pack (zip or folder) whose manifest or files are wrong."""


@dataclass(frozen=True)
class PackFile:
    filename: str
    sha256: str
    size_bytes: int


@dataclass(frozen=True)
class PackManifest:
    pack_id: str
    cuda_version: str
    controls_stage: str
    files: tuple[PackFile, ...]
    display_name: str = ""
    artifact_name: str = ""
    description: str = ""
    pack_type: str = "performance"
    supported_gpus: tuple[str, ...] = ()
    validation_summary: dict = field(default_factory=dict)
    source: str = ""

    @property
    def cuda_minor(self) -> tuple[int, int]:
        m = _CUDA_RE.match(self.cuda_version)
        return int(m.group(1)), int(m.group(2))


class PackSource:
    """Reads members of a folder or a zip by plain file name, relative to the manifest's folder."""

    def __init__(self, source: str | os.PathLike):
        self.path = Path(source).expanduser()
        self.zip = None
        self.prefix = ""
        if self.path.is_dir():
            return
        if not self.path.is_file():
            raise PackError(f"{self.path}: no such folder or zip; give a folder of .acf files or a booster-pack zip",
                            path=str(self.path))
        try:
            self.zip = zipfile.ZipFile(self.path)
        except (zipfile.BadZipFile, OSError) as exc:
            raise PackError(f"{self.path}: not a readable zip ({exc}); re-download the pack", path=str(self.path)) from None
        hits = [n for n in self.zip.namelist() if PurePosixPath(n).name == PACK_MANIFEST and len(PurePosixPath(n).parts) <= 2]
        if len(hits) == 1:
            self.prefix = str(PurePosixPath(hits[0]).parent).strip(".")
            self.prefix = f"{self.prefix}/" if self.prefix else ""

    def names(self) -> list[str]:
        if self.zip is None:
            return sorted(p.name for p in self.path.iterdir() if p.is_file())
        return sorted(n[len(self.prefix):] for n in self.zip.namelist()
                      if n.startswith(self.prefix) and "/" not in n[len(self.prefix):] and not n.endswith("/"))

    def read(self, name: str) -> bytes | None:
        try:
            if self.zip is None:
                return (self.path / name).read_bytes()
            return self.zip.read(self.prefix + name)
        except (OSError, KeyError):
            return None


def _field(doc, key, where, kind=str, required=True, default=""):
    val = doc.get(key, None)
    if val is None:
        if required:
            raise PackError(f"{where}: /{key} is missing; NVIDIA's booster-pack manifest names pack_id, cuda_version, "
                            "controls_stage and acfs [{filename, sha256, size_bytes}]", path=where, pointer=f"/{key}")
        return default
    if not isinstance(val, kind) or isinstance(val, bool):
        raise PackError(f"{where}: /{key} must be a {kind.__name__}, not {type(val).__name__}", path=where, pointer=f"/{key}")
    return val


def parse_pack_manifest(doc, where: str = PACK_MANIFEST) -> PackManifest:
    if not isinstance(doc, dict):
        raise PackError(f"{where}: not a JSON object", path=where, pointer="/")
    cuda = _field(doc, "cuda_version", where)
    if not _CUDA_RE.match(cuda):
        raise PackError(f"{where}: /cuda_version={cuda!r} is not a CUDA version such as 13.3.0", path=where,
                        pointer="/cuda_version")
    pack_type = _field(doc, "pack_type", where, required=False, default="performance")
    if pack_type not in PACK_TYPES:
        raise PackError(f"{where}: /pack_type={pack_type!r} is not one of {', '.join(PACK_TYPES)}", path=where,
                        pointer="/pack_type")
    key = "acfs" if "acfs" in doc else "files"
    raw = doc.get(key)
    if not isinstance(raw, list) or not raw:
        raise PackError(f"{where}: /acfs must list the pack's files as [{{filename, sha256, size_bytes}}]",
                        path=where, pointer=f"/{key}")
    files, seen = [], set()
    for i, f in enumerate(raw):
        p = f"/{key}/{i}"
        if not isinstance(f, dict):
            raise PackError(f"{where}: {p} must be an object", path=where, pointer=p)
        name, sha, size = f.get("filename"), f.get("sha256"), f.get("size_bytes")
        if not isinstance(name, str) or not _NAME_RE.match(name) or ".." in name or name == PACK_MANIFEST:
            raise PackError(f"{where}: {p}/filename={name!r} is not a plain file name", path=where, pointer=f"{p}/filename")
        if not isinstance(sha, str) or not _SHA_RE.match(sha):
            raise PackError(f"{where}: {p}/sha256 is not 64 lowercase hex digits", path=where, pointer=f"{p}/sha256")
        if isinstance(size, bool) or not isinstance(size, int) or size <= 0:
            raise PackError(f"{where}: {p}/size_bytes={size!r} must be a positive integer", path=where,
                            pointer=f"{p}/size_bytes")
        if name in seen:
            raise PackError(f"{where}: {p}: {name} is listed twice", path=where, pointer=p)
        seen.add(name)
        files.append(PackFile(name, sha, size))
    gpus = doc.get("supported_gpus", [])
    if not isinstance(gpus, list) or not all(isinstance(g, str) for g in gpus):
        raise PackError(f"{where}: /supported_gpus must be a list of names", path=where, pointer="/supported_gpus")
    summary = doc.get("validation_summary", {})
    if not isinstance(summary, dict):
        raise PackError(f"{where}: /validation_summary must be an object", path=where, pointer="/validation_summary")
    return PackManifest(
        pack_id=_field(doc, "pack_id", where), cuda_version=cuda, controls_stage=_field(doc, "controls_stage", where),
        files=tuple(files), display_name=_field(doc, "display_name", where, required=False),
        artifact_name=_field(doc, "artifact_name", where, required=False),
        description=_field(doc, "description", where, required=False), pack_type=pack_type,
        supported_gpus=tuple(gpus), validation_summary=summary, source=where)


def verified_files(src: PackSource, manifest: PackManifest) -> dict[str, bytes]:
    out = {}
    for f in manifest.files:
        data = src.read(f.filename)
        if data is None:
            raise PackError(f"{src.path}: {f.filename} is listed in {PACK_MANIFEST} but missing from the pack; "
                            "re-download the pack", path=str(src.path))
        if len(data) != f.size_bytes:
            raise PackError(f"{src.path}: {f.filename} has {len(data):,} bytes, the manifest says {f.size_bytes:,}; "
                            "the pack is damaged: re-download it", path=str(src.path))
        if hashlib.sha256(data).hexdigest() != f.sha256:
            raise PackError(f"{src.path}: {f.filename} does not match its sha256 in {PACK_MANIFEST}; the pack is "
                            "damaged or was edited: re-download it", path=str(src.path))
        out[f.filename] = data
    return out


def read_pack_manifest(source: str | os.PathLike, verify: bool = True) -> PackManifest:
    """The booster-pack manifest of a zip or folder; with ``verify`` every listed file is checked
    (present, size, sha256) before this returns."""
    src = PackSource(source)
    raw = src.read(PACK_MANIFEST)
    where = f"{src.path}:{PACK_MANIFEST}" if src.zip is not None else str(src.path / PACK_MANIFEST)
    if raw is None:
        raise PackError(f"{src.path}: no {PACK_MANIFEST}; a booster pack holds its ACFs and that manifest "
                        "(for a plain folder of .acf files, use AcfCatalogSpace(folder))", path=str(src.path))
    try:
        doc = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise PackError(f"{where}: not valid JSON ({exc}); re-download the pack", path=where, pointer="/") from None
    manifest = parse_pack_manifest(doc, where)
    if verify:
        verified_files(src, manifest)
    return manifest


__all__ = ["PackManifest", "PackFile", "PackError", "PackSource", "read_pack_manifest", "parse_pack_manifest",
           "verified_files", "PACK_MANIFEST", "PACK_TYPES"]
