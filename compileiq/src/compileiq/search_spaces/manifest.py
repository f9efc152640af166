"""The manifest of a set of space files: which (compiler, version, variant) lives in which file.

The same manifest describes the spaces shipped inside the package, an offline mirror
(CIQ_SEARCH_SPACES_DIR) and a release on a server (CIQ_SEARCH_SPACES_URL)::

    {"manifest_format": "1", "tag": "compileiq-spaces-2026.11.30", "generated_at": "2026-11-30T00:00:00Z",
     "entries": [{"compiler": "ptxas", "compiler_version": "13.5", "variant": "default",
                  "filename": "ptxas-13.5-default.json", "sha256": "<64 hex>", "size_bytes": 4321,
                  "space_format": 1, "description": "..."}]}

Write one for a folder of space files with ``python -m compileiq.search_spaces.manifest FOLDER [--tag TAG]``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from .errors import CompilerTooOldError, SpaceFileError, SpaceNotFoundError
from .files import FORMAT_VERSION, read_space_file

MANIFEST_FORMAT = "1"
_FILENAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")
_SHA_RE = re.compile(r"^[0-9a-f]{64}$")
_TAG_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")
_VERSION_RE = re.compile(r"^\d+(\.\d+)*$")


def version_tuple(v) -> tuple[int, ...]:
    return tuple(int(p) for p in str(v).split(".")) if not isinstance(v, tuple) else tuple(v)


@dataclass(frozen=True)
class ManifestEntry:
    compiler: str
    compiler_version: str
    variant: str
    filename: str
    sha256: str
    size_bytes: int
    space_format: int = FORMAT_VERSION
    description: str = ""

    @property
    def key(self) -> str:
        return f"{self.compiler} {self.compiler_version} ({self.variant})"


@dataclass(frozen=True)
class Manifest:
    tag: str
    entries: tuple[ManifestEntry, ...]
    generated_at: str = ""
    where: str = ""

    def available(self, compiler: str | None = None) -> list[str]:
        return [e.key for e in self.entries if compiler is None or e.compiler == compiler]

    def lookup(self, compiler: str, version, variant: str, nearest_lower: bool = False) -> tuple[ManifestEntry, str | None]:
        """The entry for ``version`` (matched by its leading numbers), and a warning text when
        ``nearest_lower`` picked an older version because the exact one is not there."""
        want = version_tuple(version)
        same = [e for e in self.entries if e.compiler == compiler]
        if not same:
            raise SpaceNotFoundError(
                f"{self.where or 'the manifest'} (tag {self.tag}) has no {compiler} space; it has: "
                f"{', '.join(self.available()) or 'nothing'}. Use one of those compilers, or point "
                "CIQ_SEARCH_SPACES_DIR / CIQ_SEARCH_SPACES_URL at a release that has it", self.available())
        variants = sorted({e.variant for e in same})
        if variant not in variants:
            raise SpaceNotFoundError(
                f"{compiler} has no variant {variant!r} in {self.where or 'the manifest'} (tag {self.tag}); "
                f"variants: {', '.join(variants)}. Available: {', '.join(self.available(compiler))}",
                self.available(compiler))
        cands = sorted((e for e in same if e.variant == variant), key=lambda e: version_tuple(e.compiler_version))
        for e in cands:
            ev = version_tuple(e.compiler_version)
            if want[: len(ev)] == ev:
                return e, None
        shown = ", ".join(e.compiler_version for e in cands)
        if nearest_lower:
            lower = [e for e in cands if version_tuple(e.compiler_version) < want]
            if lower:
                e = lower[-1]
                return e, (f"no {compiler} {'.'.join(map(str, want))} space ({variant}) in tag {self.tag}; using the "
                           f"nearest lower version {e.compiler_version} (its options all exist in newer {compiler} "
                           f"releases, but newer options are not searched). Versions: {shown}")
            raise CompilerTooOldError(
                f"{compiler} {'.'.join(map(str, want))} is older than every {compiler} space in tag {self.tag} "
                f"({shown}); install {compiler} {cands[0].compiler_version} or newer, or pass "
                f"version=\"{cands[0].compiler_version}\" with check_compiler=False to build the space for another machine")
        raise SpaceNotFoundError(
            f"no {compiler} {version} space ({variant}) in {self.where or 'the manifest'} (tag {self.tag}); "
            f"versions there: {shown}. Pass one of those as version=, or version=None for the installed {compiler}",
            self.available(compiler))


def _bad(where: str, pointer: str, problem: str, fix: str):
    raise SpaceFileError(f"{where}: {pointer}: {problem}; {fix}", path=where, pointer=pointer)


def parse_manifest(doc, where: str = "manifest.json") -> Manifest:
    if not isinstance(doc, dict):
        _bad(where, "/", "not a JSON object", "a manifest is one object with tag and entries")
    if str(doc.get("manifest_format")) != MANIFEST_FORMAT:
        _bad(where, "/manifest_format", f"manifest_format={doc.get('manifest_format')!r} is not {MANIFEST_FORMAT!r}",
             "regenerate it with `python -m compileiq.search_spaces.manifest FOLDER`, or upgrade compileiq")
    tag = doc.get("tag")
    if not isinstance(tag, str) or not _TAG_RE.match(tag):
        _bad(where, "/tag", f"tag={tag!r} is missing or malformed", 'e.g. "tag": "compileiq-spaces-2026.11.30"')
    entries_raw = doc.get("entries")
    if not isinstance(entries_raw, list):
        _bad(where, "/entries", "entries must be a list", "list one object per space file")
    entries, seen = [], {}
    for i, e in enumerate(entries_raw):
        p = f"/entries/{i}"
        if not isinstance(e, dict):
            _bad(where, p, "an entry must be an object", "see docs/search-spaces.md")
        for key in ("compiler", "compiler_version", "variant", "filename", "sha256"):
            if not isinstance(e.get(key), str) or not e[key]:
                _bad(where, f"{p}/{key}", f"{key} is missing", "every entry names compiler, compiler_version, "
                     "variant, filename, sha256 and size_bytes")
        if not _VERSION_RE.match(e["compiler_version"]):
            _bad(where, f"{p}/compiler_version", f"{e['compiler_version']!r} is not a version", 'e.g. "13.5"')
        if not _FILENAME_RE.match(e["filename"]) or ".." in e["filename"]:
            _bad(where, f"{p}/filename", f"{e['filename']!r} is not a plain file name", "no folders, no '..'")
        if not _SHA_RE.match(e["sha256"]):
            _bad(where, f"{p}/sha256", "not 64 lowercase hex digits", "write sha256sum's output for the file")
        size = e.get("size_bytes")
        if isinstance(size, bool) or not isinstance(size, int) or size <= 0:
            _bad(where, f"{p}/size_bytes", f"size_bytes={size!r} must be a positive integer", "the file's size in bytes")
        fmt = e.get("space_format", FORMAT_VERSION)
        if fmt != FORMAT_VERSION:
            _bad(where, f"{p}/space_format", f"space format {fmt!r} is not {FORMAT_VERSION}",
                 "upgrade compileiq to read newer spaces")
        entry = ManifestEntry(e["compiler"], e["compiler_version"], e["variant"], e["filename"], e["sha256"], size,
                              fmt, str(e.get("description", "")))
        ident = (entry.compiler, version_tuple(entry.compiler_version), entry.variant)
        if ident in seen:
            _bad(where, p, f"{entry.key} is listed twice (also /entries/{seen[ident]})", "keep one entry per space")
        seen[ident] = i
        entries.append(entry)
    return Manifest(tag, tuple(entries), str(doc.get("generated_at", "")), where)


def read_manifest(path: str | os.PathLike) -> Manifest:
    path = Path(path)
    try:
        doc = json.loads(path.read_bytes())
    except FileNotFoundError:
        raise SpaceFileError(f"{path}: no manifest.json here; copy the release's manifest.json or write one with "
                             "`python -m compileiq.search_spaces.manifest FOLDER`", path=str(path)) from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise SpaceFileError(f"{path}: not valid JSON ({exc}); restore the file, or delete a cached copy so it is "
                             "fetched again", path=str(path), pointer="/") from None
    return parse_manifest(doc, str(path))


def write_manifest(folder: str | os.PathLike, tag: str) -> Path:
    """Validate every space file in ``folder`` and write its manifest.json (the offline-mirror recipe)."""
    folder = Path(folder)
    entries = []
    for f in sorted(folder.glob("*.json")):
        if f.name == "manifest.json":
            continue
        space = read_space_file(f)
        data = f.read_bytes()
        entries.append(asdict(ManifestEntry(space.compiler, space.compiler_version, space.variant, f.name,
                                            hashlib.sha256(data).hexdigest(), len(data), FORMAT_VERSION,
                                            space.description)))
    doc = {"manifest_format": MANIFEST_FORMAT, "tag": tag,
           "generated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "entries": entries}
    parse_manifest(doc, str(folder / "manifest.json"))  # duplicates and bad names fail before writing
    out = folder / "manifest.json"
    out.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    return out


__all__ = ["Manifest", "ManifestEntry", "MANIFEST_FORMAT", "parse_manifest", "read_manifest", "write_manifest",
           "version_tuple"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m compileiq.search_spaces.manifest",
                                 description="write manifest.json for a folder of compileiq-space files")
    ap.add_argument("folder")
    ap.add_argument("--tag", default=None, help="the release tag (default: the folder's name)")
    args = ap.parse_args(argv)
    try:
        out = write_manifest(args.folder, args.tag or Path(args.folder).resolve().name)
    except SpaceFileError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
