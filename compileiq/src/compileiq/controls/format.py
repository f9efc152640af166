"""The open controls file: a header line, then one compiler option per line.

    # compileiq-controls v1 compiler=ptxas version=13.5
    -O2
    --register-usage-level=7
    -dlcm=cg

An option that takes a separate argument keeps it on its own line (``-mllvm -unroll-threshold=300``).
Blank lines and further ``#`` lines are comments. The file is UTF-8 with ``\\n`` line ends. A file
whose first line is not such a header is a vendor ACF (an opaque file for ``--apply-controls``); a
file that starts like the header but breaks it is an error, not an ACF, so a typo never reaches
ptxas as "Invalid compiler controls file".
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import CompileIQError
from ..utils.fs import atomic_write

MAGIC = b"# compileiq-controls"
HEADER_RE = re.compile(r"^# compileiq-controls v(\d+) compiler=([A-Za-z][A-Za-z0-9_+.-]*) version=(\d+(?:\.\d+)*)$")
FORMAT_VERSION = 1


class ControlsError(CompileIQError, ValueError):
    """A controls file that cannot be applied: malformed, for another compiler, or refused by the compiler."""


@dataclass(frozen=True)
class ControlsFile:
    compiler: str
    version: str
    options: tuple[str, ...]

    def to_bytes(self) -> bytes:
        return format_controls(self.compiler, self.version, self.options)

    def to_hex(self) -> str:
        return self.to_bytes().hex()


def header(compiler: str, version: str) -> str:
    return f"# compileiq-controls v{FORMAT_VERSION} compiler={compiler} version={version}"


def format_controls(compiler: str, version: str, options) -> bytes:
    """The bytes of an open controls file (what a candidate's hex string encodes)."""
    text = header(compiler, version)
    if not HEADER_RE.match(text):
        raise ControlsError(f"compiler={compiler!r} version={version!r} cannot form a controls header; the compiler "
                            "is a name like ptxas and the version digits separated by dots, e.g. 13.5")
    lines = [text]
    for opt in options:
        if not isinstance(opt, str) or not opt.strip() or "\n" in opt or "\r" in opt or opt.lstrip().startswith("#"):
            raise ControlsError(f"option {opt!r} cannot be a controls-file line: each option is one non-empty "
                                "line of text that does not start with #")
        lines.append(opt.strip())
    return ("\n".join(lines) + "\n").encode("utf-8")


def is_open_controls(data: bytes) -> bool:
    """True when ``data`` starts like an open controls file (else it is treated as a vendor ACF)."""
    return bytes(data[: len(MAGIC)]) == MAGIC


def parse_controls(data: bytes, where: str = "controls file") -> ControlsFile:
    if not is_open_controls(data):
        raise ControlsError(f"{where}: not an open controls file (its first line is not "
                            f"'{header('<compiler>', '<x.y>')}'); a file like this is a vendor ACF")
    try:
        text = bytes(data).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ControlsError(f"{where}: not UTF-8 text (byte {exc.start}); rewrite it with "
                            "compileiq.controls.write_controls") from None
    lines = text.splitlines()
    m = HEADER_RE.match(lines[0].rstrip())
    if not m:
        raise ControlsError(f"{where}: malformed header {lines[0]!r}; the first line must read "
                            f"'{header('<compiler>', '<x.y>')}', e.g. '{header('ptxas', '13.5')}'")
    if int(m.group(1)) != FORMAT_VERSION:
        raise ControlsError(f"{where}: controls format v{m.group(1)} is newer than this CompileIQ reads "
                            f"(v{FORMAT_VERSION}); upgrade compileiq")
    opts = tuple(ln.strip() for ln in lines[1:] if ln.strip() and not ln.lstrip().startswith("#"))
    return ControlsFile(m.group(2), m.group(3), opts)


def read_controls_bytes(path: str | os.PathLike) -> bytes:
    """The bytes of a controls file of either kind, or a ControlsError saying how to write one."""
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise ControlsError(f"controls file {path} cannot be read ({exc.strerror or exc}); write the candidate "
                            "first with compileiq.utils.helpers.save_compiler_config(path, config)") from None


def read_controls(path: str | os.PathLike) -> ControlsFile:
    return parse_controls(read_controls_bytes(path), str(path))


def write_controls(path: str | os.PathLike, compiler: str, version: str, options) -> Path:
    """Write an open controls file atomically (a reader never sees half a file)."""
    return atomic_write(path, format_controls(compiler, version, options))


__all__ = ["ControlsFile", "ControlsError", "MAGIC", "HEADER_RE", "header", "format_controls", "is_open_controls",
           "parse_controls", "read_controls", "read_controls_bytes", "write_controls"]
