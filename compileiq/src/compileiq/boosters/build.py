"""Making a pack: write the manifest of a folder of controls files, and zip it.

The manifest is written from the files as they are now (size and sha256 of each), so the only
way to get a pack whose checksums disagree is to change a file after this ran.
"""

from __future__ import annotations

import hashlib
import json
import os
import zipfile
from pathlib import Path
from typing import Sequence

from ..search_spaces.packs import PACK_MANIFEST, PACK_TYPES, PackError, parse_pack_manifest
from .pack import CUDA_STAGES


def manifest_doc(folder: str | os.PathLike, *, pack_id: str, controls_stage: str, version: str,
                 pack_type: str = "performance", display_name: str = "", description: str = "",
                 supported_gpus: Sequence[str] = (), evidence: str = "",
                 files: Sequence[str] | None = None) -> dict:
    """The manifest (a dict) for the files of ``folder``: every file but the manifest, or ``files``.

    ``version`` goes to cuda_version for ptxas/nvcc packs and to compiler_version otherwise."""
    folder = Path(folder)
    if pack_type not in PACK_TYPES:
        raise PackError(f"pack_type={pack_type!r}: use one of {', '.join(PACK_TYPES)}")
    names = sorted(p.name for p in folder.iterdir() if p.is_file() and p.name != PACK_MANIFEST and
                   not p.name.startswith(".")) if files is None else list(files)
    if not names:
        raise PackError(f"{folder}: no controls files to list; put the pack's files in this folder first",
                        path=str(folder))
    entries = []
    for name in names:
        data = (folder / name).read_bytes()
        entries.append({"filename": name, "sha256": hashlib.sha256(data).hexdigest(), "size_bytes": len(data)})
    doc = {"pack_id": pack_id, "display_name": display_name or pack_id, "artifact_name": f"{pack_id}.zip",
           "description": description, "pack_type": pack_type,
           ("cuda_version" if controls_stage in CUDA_STAGES else "compiler_version"): version,
           "controls_stage": controls_stage, "supported_gpus": list(supported_gpus),
           "validation_summary": {"evidence": evidence} if evidence else {}, "acfs": entries}
    # the same parser as load_pack, so a manifest this writes is one load_pack accepts
    parse_pack_manifest({**doc, "cuda_version": version}, str(folder / PACK_MANIFEST))
    return doc


def write_pack_manifest(folder: str | os.PathLike, **kwargs) -> Path:
    """Write ``booster-pack-manifest.json`` into ``folder`` (see manifest_doc for the arguments)."""
    doc = manifest_doc(folder, **kwargs)
    dest = Path(folder) / PACK_MANIFEST
    dest.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    return dest


def zip_pack(folder: str | os.PathLike, dest: str | os.PathLike) -> Path:
    """Zip a pack folder (its manifest and the files the manifest lists) into ``dest``."""
    from .pack import load_pack

    pack = load_pack(folder)  # refuse to ship a pack that does not verify
    dest = Path(dest)
    with zipfile.ZipFile(dest, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.write(Path(folder) / PACK_MANIFEST, PACK_MANIFEST)
        for cfg in pack.files.values():
            zf.writestr(cfg.filename, cfg.data)
    return dest


__all__ = ["manifest_doc", "write_pack_manifest", "zip_pack"]
