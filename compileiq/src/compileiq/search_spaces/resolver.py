"""Where a (compiler, version, variant) space file comes from, in this order:

1. ``CIQ_SEARCH_SPACES_DIR``: an offline mirror (manifest.json plus the files); never the network.
2. A release on a server, when ``CIQ_SEARCH_SPACES_URL`` is set (or a tag other than the shipped one
   is asked for): ``<URL>/latest.json`` ({"tag": ...}) names the newest tag, ``<URL>/<tag>/manifest.json``
   and ``<URL>/<tag>/<file>`` hold the release. Files are cached under ``<cache>/<tag>/`` as
   ``<sha256[:12]>_<file>``; the resolved "latest" tag is kept ``CIQ_SS_LATEST_TTL_DAYS`` days in
   ``<cache>/latest-tags/`` and a stale record is used, with a warning, when the server fails.
3. The spaces shipped inside the package (``compileiq/spaces``), so everything works offline.

``<cache>`` is ``$XDG_CACHE_HOME/compileiq`` (default ``~/.cache/compileiq``).
"""

from __future__ import annotations

import hashlib
import json
import time
import warnings
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from .. import _env
from . import _download
from .errors import SearchSpaceWarning, SpaceDownloadError, SpaceFileError, SpaceIntegrityError, SpaceNotFoundError
from .manifest import Manifest, ManifestEntry, parse_manifest, read_manifest

MANIFEST_LIMIT = 1 << 20
LATEST_TAGS = "latest-tags"


@dataclass(frozen=True)
class Resolution:
    path: Path
    entry: ManifestEntry
    metadata: dict


def shipped_dir() -> Path:
    return Path(str(resources.files("compileiq") / "spaces"))


def shipped_manifest() -> Manifest:
    return read_manifest(shipped_dir() / "manifest.json")


def _metadata(entry: ManifestEntry, requested_tag: str, resolved_tag: str, source: str, path: Path) -> dict:
    return {"compiler": entry.compiler, "compiler_version": entry.compiler_version, "variant": entry.variant,
            "description": entry.description, "requested_tag": requested_tag, "resolved_tag": resolved_tag,
            "filename": entry.filename, "sha256": entry.sha256, "size_bytes": entry.size_bytes,
            "source": source, "path": str(path)}


def _lookup(manifest: Manifest, compiler, version, variant, nearest_lower) -> ManifestEntry:
    entry, note = manifest.lookup(compiler, version, variant, nearest_lower)
    if note:
        warnings.warn(note, SearchSpaceWarning, stacklevel=4)
    return entry


def _local(folder: Path, manifest: Manifest, entry: ManifestEntry, what: str) -> Path:
    path = folder / entry.filename
    try:
        data = path.read_bytes()
    except OSError:
        raise SpaceFileError(f"{path}: listed in {what}'s manifest.json but missing; copy the file there or "
                             "regenerate the manifest", path=str(path)) from None
    _download.verify(data, entry.size_bytes, entry.sha256, str(path))
    return path


def _from_mirror(folder: Path, compiler, version, variant, tag, nearest_lower) -> Resolution:
    manifest = read_manifest(folder / "manifest.json")
    if tag != "latest" and tag != manifest.tag:
        raise SpaceNotFoundError(f"CIQ_SEARCH_SPACES_DIR={folder} holds tag {manifest.tag}, not the requested tag "
                                 f"{tag}; ask for tag='latest' (the mirror's tag) or mirror release {tag}",
                                 manifest.available())
    entry = _lookup(manifest, compiler, version, variant, nearest_lower)
    path = _local(folder, manifest, entry, "CIQ_SEARCH_SPACES_DIR")
    return Resolution(path, entry, _metadata(entry, tag, manifest.tag, "CIQ_SEARCH_SPACES_DIR", path))


def _latest_record(url: str) -> Path:
    key = hashlib.sha256(url.encode()).hexdigest()[:16]
    return _env.cache_root() / LATEST_TAGS / f"{key}.json"


def resolve_latest(url: str) -> str:
    """The tag "latest" means on ``url``: a fresh cached record, else the server, else a stale record."""
    record = _latest_record(url)
    cached = None
    try:
        cached = json.loads(record.read_text())
        if cached.get("url") != url or not isinstance(cached.get("tag"), str):
            cached = None
    except (OSError, ValueError):
        cached = None
    ttl = _env.latest_ttl_days() * 86400
    if cached and ttl > 0 and time.time() - float(cached.get("resolved_at", 0)) < ttl:
        return cached["tag"]
    try:
        doc = json.loads(_download.fetch(f"{url}/latest.json", MANIFEST_LIMIT))
        tag = doc["tag"]
        if not isinstance(tag, str) or not tag or "/" in tag:
            raise ValueError(f"bad tag {tag!r}")
    except (SpaceDownloadError, ValueError, KeyError, TypeError) as exc:
        if cached:
            age = (time.time() - float(cached.get("resolved_at", 0))) / 86400
            warnings.warn(f"cannot resolve the latest search-space tag at {url} ({exc}); using {cached['tag']}, "
                          f"resolved {age:.1f} days ago. Fix the server or pin tag={cached['tag']!r}",
                          SearchSpaceWarning, stacklevel=4)
            return cached["tag"]
        if isinstance(exc, SpaceDownloadError):
            raise
        raise SpaceDownloadError(f"{url}/latest.json is not {{\"tag\": \"<tag>\"}} ({exc}); fix the release "
                                 "location, or pass an explicit tag=") from None
    _download.write_atomic(record, json.dumps({"url": url, "tag": tag, "resolved_at": time.time()}).encode())
    return tag


def _release_manifest(url: str, tag: str) -> Manifest:
    cached = _env.cache_root() / tag / "manifest.json"
    if cached.is_file():  # a tag is immutable: its manifest never needs fetching twice
        try:
            m = read_manifest(cached)
            if m.tag == tag:
                return m
        except SpaceFileError:
            pass
        cached.unlink(missing_ok=True)
    src = f"{url}/{tag}/manifest.json"
    data = _download.fetch(src, MANIFEST_LIMIT)
    try:
        m = parse_manifest(json.loads(data), src)
    except ValueError as exc:
        raise SpaceFileError(f"{src}: not a valid manifest ({exc}); the release is damaged", path=src) from None
    if m.tag != tag:
        raise SpaceFileError(f"{src}: the manifest says tag {m.tag}, not {tag}; the release location is "
                             "inconsistent: fix the release or pass the tag it holds", path=src)
    _download.write_atomic(cached, data)
    return m


def _from_release(url: str, compiler, version, variant, tag, nearest_lower) -> Resolution:
    _env.download_timeout(), _env.latest_ttl_days()  # a bad setting is the user's to fix, not a server fault
    resolved = resolve_latest(url) if tag == "latest" else tag
    manifest = _release_manifest(url, resolved)
    entry = _lookup(manifest, compiler, version, variant, nearest_lower)
    dest = _env.cache_root() / resolved / f"{entry.sha256[:12]}_{entry.filename}"
    if dest.is_file():
        try:
            _download.verify(dest.read_bytes(), entry.size_bytes, entry.sha256, str(dest))
            return Resolution(dest, entry, _metadata(entry, tag, resolved, "cache", dest))
        except SpaceIntegrityError:
            dest.unlink(missing_ok=True)  # a damaged cached copy is a cache miss
    _download.download_verified(f"{url}/{resolved}/{entry.filename}", dest, entry.size_bytes, entry.sha256)
    return Resolution(dest, entry, _metadata(entry, tag, resolved, "download", dest))


def resolve(compiler: str, version, variant: str = "default", tag: str = "latest",
            nearest_lower: bool = False) -> Resolution:
    """Find, verify and (if needed) download the space file; the order is in the module docstring."""
    mirror = _env.search_spaces_dir()
    if mirror is not None:
        return _from_mirror(mirror, compiler, version, variant, tag, nearest_lower)
    shipped = shipped_manifest()
    url = _env.search_spaces_url()
    if url is not None or tag not in ("latest", shipped.tag):
        if url is None:
            raise SpaceNotFoundError(
                f"tag {tag!r} is not the shipped tag ({shipped.tag}) and no release location is set; set "
                "CIQ_SEARCH_SPACES_URL to the server that holds it, or CIQ_SEARCH_SPACES_DIR to a mirror of it, "
                "or use tag='latest' for the shipped spaces", shipped.available())
        return _from_release(url, compiler, version, variant, tag, nearest_lower)
    entry = _lookup(shipped, compiler, version, variant, nearest_lower)
    path = _local(shipped_dir(), shipped, entry, "the package")
    return Resolution(path, entry, _metadata(entry, tag, shipped.tag, "shipped", path))


__all__ = ["Resolution", "resolve", "resolve_latest", "shipped_dir", "shipped_manifest"]
