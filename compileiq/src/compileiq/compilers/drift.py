"""Compiler drift: notice when the compiler binary a search uses changes while the search runs.

A package upgrade, a CUDA toolkit swap or another user's ``update-alternatives`` in the middle of
a run makes later scores incomparable with earlier ones, silently. ``CompilerWatch`` resolves each
compiler to the real binary behind it (through symlinks and the one-line ``exec`` wrapper scripts
toolkits install, such as ``/usr/local/bin/ptxas`` -> ``/usr/local/cuda-13.0/bin/ptxas``), hashes
that binary once per run, and then only compares file status (size, mtime, inode) once per batch:
a stat costs microseconds, a hash of a 40 MB binary tens of milliseconds. Only when a status
changed is the binary hashed again, so touching a file without changing it is not drift.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

_EXEC = re.compile(r"^\s*exec\s+(.+)$", re.MULTILINE)
MAX_WRAPPERS = 8  # a wrapper calling a wrapper ...: more than this is a loop


def real_binary(path: str | os.PathLike) -> list[Path]:
    """The chain from ``path`` to the binary that runs: symlinks resolved, and for a ``#!`` script
    whose ``exec`` line names an absolute path, that path followed. The last entry is the binary."""
    chain = [Path(os.path.realpath(path))]
    for _ in range(MAX_WRAPPERS):
        cur = chain[-1]
        try:
            with open(cur, "rb") as f:
                head = f.read(4096)
        except OSError:
            break
        if not head.startswith(b"#!"):
            break
        target = None
        for m in _EXEC.finditer(head.decode("utf-8", "replace")):
            try:
                words = shlex.split(m.group(1))
            except ValueError:
                continue
            words = [w for w in words if not re.match(r"^\w+=", w)]  # `exec VAR=x /path` is not valid sh, but be kind
            if words and os.path.isabs(words[0]) and os.path.isfile(words[0]):
                target = Path(os.path.realpath(words[0]))
                break
        if target is None or target in chain:
            break
        chain.append(target)
    return chain


def _stat(p: Path) -> tuple | None:
    try:
        st = p.stat()
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns, st.st_ino)


def sha256_file(p: Path) -> str:
    h = hashlib.sha256()
    with open(p, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


@dataclass
class Watched:
    name: str           # "ptxas"
    path: str           # as configured (may be a wrapper or a symlink)
    version: str
    chain: list[Path]   # path -> ... -> real binary
    sha256: str
    stats: list = field(default_factory=list)

    @property
    def binary(self) -> Path:
        return self.chain[-1]

    def describe(self) -> str:
        return f"{self.version} {self.binary} sha256:{self.sha256[:16]}"

    def as_dict(self) -> dict:
        return {"name": self.name, "path": self.path, "binary": str(self.binary), "version": self.version,
                "sha256": self.sha256}


class CompilerWatch:
    """The compilers of one run. ``check()`` once per batch returns what changed since the start."""

    def __init__(self, toolchains):
        self.watched: list[Watched] = []
        seen = set()
        for tc in toolchains:
            chain = real_binary(tc.path)
            if chain[-1] in seen or not chain[-1].is_file():
                continue
            seen.add(chain[-1])
            w = Watched(tc.name, str(tc.path), getattr(tc, "release", "") or tc.version_str, chain, sha256_file(chain[-1]))
            w.stats = [_stat(p) for p in chain]
            self.watched.append(w)

    def __bool__(self) -> bool:
        return bool(self.watched)

    def metadata(self) -> dict:
        """What every result row records: name -> "version binary sha256:prefix"."""
        return {w.name: w.describe() for w in self.watched}

    def check(self) -> list[str]:
        """One sentence per compiler whose binary changed (or vanished) since the last check."""
        changes = []
        for w in self.watched:
            stats = [_stat(p) for p in w.chain]
            if stats == w.stats:
                continue
            now = real_binary(w.path)
            if not now[-1].is_file():
                changes.append(f"{w.name}: {w.path} no longer resolves to a binary (it was {w.binary})")
                continue
            digest = sha256_file(now[-1])
            if digest == w.sha256 and now[-1] == w.binary:
                w.stats = stats  # touched or copied back unchanged: not drift
                continue
            changes.append(f"{w.name}: {w.path} was {w.binary} (sha256 {w.sha256[:16]}) and is "
                           f"now {now[-1]} (sha256 {digest[:16]})")
            # from now on the rows record the new binary (a run that goes on after a warning shows both)
            w.chain, w.sha256, w.stats = now, digest, [_stat(p) for p in now]
        return changes


def toolchains_of(search_space, extra=()) -> list:
    """The toolchains of the compiler providers in a user's search space (a provider, or a mixed
    list holding some), plus ``extra``: compiler names or paths to binaries."""
    from .discovery import Toolchain, find_compiler, toolchain_at
    out = []
    parts = search_space if isinstance(search_space, (list, tuple)) else [search_space]
    for comp in parts:
        tc = getattr(comp, "toolchain", None)
        if isinstance(tc, Toolchain):
            out.append(tc)
    for item in extra:
        if isinstance(item, Toolchain):
            out.append(item)
        elif os.sep in str(item):
            out.append(toolchain_at(Path(item).name.split("-")[0], os.fspath(item)))
        else:
            out.append(find_compiler(str(item)))
    return out


__all__ = ["CompilerWatch", "real_binary", "toolchains_of", "sha256_file"]
