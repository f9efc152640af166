"""Open search-space files (JSON, format ``compileiq-space`` v1): read, validate, load as a Component.

A file describes the knobs of one (compiler, version, variant): each knob has a type (range,
choice, flag), a domain, the compiler's default, a knockout probability (the chance a candidate
leaves the knob at the compiler's default) and ``emit``, how a value becomes compiler options.
The schema is ``compileiq/spaces/schema/compileiq-space-v1.schema.json``; docs/search-spaces.md
explains every field. Validation is strict (unknown keys are errors) so a typo in a hand-written
space fails with the JSON pointer of the mistake instead of silently searching less.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from pathlib import Path
from typing import Any

from ._knobs import KNOB_TYPES, Checker, check_omit_if, parse_knob
from .errors import EncryptedSearchSpaceError, SpaceFileError
from .model import Knob, OmitIf, Requires, SpaceFile, value_text


FORMAT = "compileiq-space"
FORMAT_VERSION = 1
_COMPILER_RE = re.compile(r"^[a-z][a-z0-9_+-]*$")
_VERSION_RE = re.compile(r"^\d+(\.\d+)*$")
_VARIANT_RE = re.compile(r"^[a-z0-9][a-z0-9_-]*$")
_TOP_KEYS = {"$schema", "format", "format_version", "compiler", "compiler_version", "variant", "description", "knobs"}
_ENTROPY_LIMIT = 7.0  # bits per byte: JSON text sits near 5, ciphertext near 8


def entropy(data: bytes) -> float:
    """Shannon entropy in bits per byte."""
    if not data:
        return 0.0
    counts = [0] * 256
    for b in data:
        counts[b] += 1
    n = len(data)
    return -sum(c / n * math.log2(c / n) for c in counts if c)


def looks_encrypted(data: bytes) -> bool:
    """A vendor-encrypted blob: close to random. Text, JSON included, stays well under 7 bits per byte
    (printable ASCII cannot exceed log2(95) = 6.6), so no valid space file is ever mistaken for one."""
    return len(data) >= 256 and entropy(data) > _ENTROPY_LIMIT


def _refuse_encrypted(where: str, data: bytes):
    raise EncryptedSearchSpaceError(
        f"{where} is an encrypted vendor search space ({len(data):,} bytes, {entropy(data):.2f} bits/byte of "
        "entropy), such as NVIDIA's ptxas13.3_search_space.bin. CompileIQ does not read encrypted spaces: only "
        "NVIDIA's closed library can, and decrypting them is not allowed. Use an open space instead "
        "(PtxasSearchSpace(), NvccSearchSpace(), or a compileiq-space JSON file, see docs/search-spaces.md), or "
        "search over ACF files you already have with compileiq.search_spaces.acf_catalog.AcfCatalogSpace(folder_or_zip)",
        path=where)


def parse_space(doc: Any, where: str = "<space>", sha256: str = "") -> SpaceFile:
    """Validate a decoded JSON document and return the space it describes."""
    c = Checker(where)
    if not isinstance(doc, dict):
        c.fail("", f"the top level is a {type(doc).__name__}, not an object", "a space file is one JSON object")
    if doc.get("format") != FORMAT:
        c.fail("/format", f"format={doc.get('format')!r} is not {FORMAT!r}",
               f'a space file starts with "format": "{FORMAT}", "format_version": {FORMAT_VERSION}')
    fv = doc.get("format_version")
    if isinstance(fv, int) and not isinstance(fv, bool) and fv > FORMAT_VERSION:
        c.fail("/format_version", f"format_version {fv} is newer than this CompileIQ reads ({FORMAT_VERSION})",
               "upgrade compileiq")
    if fv != FORMAT_VERSION:
        c.fail("/format_version", f"format_version={fv!r} is not {FORMAT_VERSION}", f'write "format_version": {FORMAT_VERSION}')
    c.keys(doc, _TOP_KEYS, "")
    for key, rx, example in (("compiler", _COMPILER_RE, "ptxas"), ("compiler_version", _VERSION_RE, "13.5"),
                             ("variant", _VARIANT_RE, "default")):
        val = doc.get(key)
        if not isinstance(val, str) or not rx.match(val):
            c.fail(f"/{key}", f"{key}={val!r} is missing or malformed", f'e.g. "{key}": "{example}"')
    if not isinstance(doc.get("description", ""), str):
        c.fail("/description", "description must be a string", "write one line about the space")
    knobs_raw = doc.get("knobs")
    if not isinstance(knobs_raw, list) or not knobs_raw:
        c.fail("/knobs", "knobs must be a non-empty list", "add at least one knob")
    knobs, seen = [], {}
    for i, raw in enumerate(knobs_raw):
        k = parse_knob(c, raw, f"/knobs/{i}")
        if k.name in seen:
            c.fail(f"/knobs/{i}/name", f"knob name {k.name!r} is already used by /knobs/{seen[k.name]}",
                   "give each knob its own name", k.name)
        seen[k.name] = i
        knobs.append(k)
    check_omit_if(c, knobs)
    return SpaceFile(doc["compiler"], doc["compiler_version"], doc["variant"], tuple(knobs),
                     doc.get("description", ""), where, sha256)


def read_space_bytes(data: bytes, where: str = "<space>") -> SpaceFile:
    if not data.strip():
        raise SpaceFileError(f"{where}: the file is empty; restore it (re-download, or delete a cached copy so it "
                             "is fetched again) or point at another space", path=where, pointer="/")
    if looks_encrypted(data):
        _refuse_encrypted(where, data)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SpaceFileError(f"{where}: not UTF-8 text (bad byte at offset {exc.start}), so not a JSON space file; "
                             "restore the file or point at a compileiq-space JSON file", path=where, pointer="/") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SpaceFileError(f"{where}: not valid JSON at line {exc.lineno} column {exc.colno} ({exc.msg}); the file "
                             "is damaged or hand-edited: fix that spot, or restore the file (re-download it, or delete "
                             "a cached copy so it is fetched again)", path=where, pointer="/") from None
    return parse_space(doc, where, hashlib.sha256(data).hexdigest())


def read_space_file(path: str | os.PathLike) -> SpaceFile:
    """Read and validate a space file (no compiler is consulted)."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise SpaceFileError(f"{path}: no such search-space file; check the path", path=str(path)) from None
    except OSError as exc:
        raise SpaceFileError(f"{path}: cannot be read ({exc.strerror or exc}); check its permissions",
                             path=str(path)) from None
    return read_space_bytes(data, str(path))


def load_space_file(path: str | os.PathLike):
    """The search Component of a space file, with values this machine cannot run left out."""
    from .open_space import OpenSpaceComponent
    return OpenSpaceComponent(read_space_file(path))


__all__ = ["FORMAT", "FORMAT_VERSION", "KNOB_TYPES", "Knob", "OmitIf", "Requires", "SpaceFile", "value_text", "entropy",
           "looks_encrypted",
           "parse_space", "read_space_bytes", "read_space_file", "load_space_file"]
