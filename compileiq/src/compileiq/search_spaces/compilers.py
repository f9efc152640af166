"""Search-space providers for compilers: ``Search(objective, PtxasSearchSpace(), config)``.

Each provider names a (compiler, version, variant) space, finds its file (``retrieve()``; the
order is in ``resolver``) and turns it into a search Component (``to_component()``), whose
candidates reach the objective as the hex string of an open controls file. ``version=None`` means
the compiler CompileIQ would run (``compileiq.compilers.discovery``: CIQ_<NAME>, then PATH, then
for ptxas/nvcc the nvidia-cuda-nvcc wheel); its space is matched by major.minor, else the nearest
lower shipped version is used with a SearchSpaceWarning. Everything that can be wrong (no
compiler, a compiler too old for the space, an unknown version or variant, a damaged file) fails
here, before any search starts, with the fix in the message.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Protocol, runtime_checkable

from ..compilers.discovery import CompilerNotFoundError, find_compiler
from .acf_catalog import AcfCatalogSpace
from .errors import CompilerTooOldError, SpaceFileError
from .files import looks_encrypted, read_space_file, _refuse_encrypted
from .manifest import version_tuple
from .open_space import OpenSpaceComponent
from .resolver import resolve

_VERSION_RE = re.compile(r"^\d+(\.\d+)*$")
_VARIANT_RE = re.compile(r"^[a-z0-9][a-z0-9_-]*$")
_OTHER_MACHINE = "or pass check_compiler=False to build the space for another machine"


def _check_compiler(compiler: str, space_version: str, toolchain=None):
    try:
        tc = toolchain or find_compiler(compiler)
    except CompilerNotFoundError as exc:
        raise CompilerNotFoundError(f"{exc}; {_OTHER_MACHINE}") from None
    want = version_tuple(space_version)
    if isinstance(tc.version, tuple) and tc.version[: len(want)] < want:
        raise CompilerTooOldError(
            f"{compiler} {tc.version_str} ({tc.path}) is older than the {compiler} {space_version} space, which may "
            f"offer options it does not know. Install {compiler} {space_version} or newer (or point "
            f"{'CIQ_' + compiler.upper()} at one), use version=None for the space of the installed {compiler}, "
            f"{_OTHER_MACHINE}")
    return tc


class CompilerSearchSpace:
    """Base of the providers; ``compiler`` names the compiler whose options the space searches."""

    compiler = ""

    def __init__(self, version: str | None = None, variant: str = "default", tag: str = "latest", *,
                 check_compiler: bool = True):
        cls = type(self).__name__
        if version is not None:
            if isinstance(version, int) and not isinstance(version, bool):
                version = str(version)
            if not isinstance(version, str) or not _VERSION_RE.match(version):
                raise SpaceFileError(f"{cls}(version={version!r}): give the version as text such as \"13.5\" "
                                     f"(a float would turn 13.10 into 13.1), or None for the installed {self.compiler}")
        if not isinstance(variant, str) or not _VARIANT_RE.match(variant):
            raise SpaceFileError(f"{cls}(variant={variant!r}): a variant is a lowercase name such as \"default\"")
        if not isinstance(tag, str) or not tag or "/" in tag:
            raise SpaceFileError(f"{cls}(tag={tag!r}): give a release tag, or \"latest\"")
        self.version, self.variant, self.tag = version, variant, tag
        self.check_compiler = bool(check_compiler)
        self.resolution_metadata: dict | None = None
        self.toolchain = None
        if version is None:  # the compiler that will run decides the space: find it now, not mid-search
            self.toolchain = find_compiler(self.compiler)
            if not isinstance(self.toolchain.version, tuple):
                raise CompilerNotFoundError(
                    f"cannot read the version of {self.toolchain.path} ({self.toolchain.version!r}); pass "
                    f"{cls}(version=\"x.y\") explicitly")

    @property
    def requested_version(self) -> str:
        return self.version if self.version is not None else self.toolchain.version_str

    def retrieve(self) -> str:
        """The local path of the space file (downloaded and verified if needed); fills ``resolution_metadata``."""
        res = resolve(self.compiler, self.requested_version, self.variant, self.tag, nearest_lower=self.version is None)
        self.resolution_metadata = res.metadata
        return str(res.path)

    def to_component(self) -> OpenSpaceComponent:
        path = self.retrieve()
        space = read_space_file(path)
        meta = self.resolution_metadata
        if (space.compiler, space.compiler_version, space.variant) != (self.compiler, meta["compiler_version"], meta["variant"]):
            raise SpaceFileError(
                f"{path}: the manifest lists it as {self.compiler} {meta['compiler_version']} ({meta['variant']}) but it "
                f"holds {space.compiler} {space.compiler_version} ({space.variant}); the mirror or release is "
                "inconsistent: regenerate its manifest (python -m compileiq.search_spaces.manifest FOLDER)", path=path)
        if self.check_compiler:
            self.toolchain = _check_compiler(self.compiler, space.compiler_version, self.toolchain)
        return OpenSpaceComponent(space)

    def __repr__(self):
        return f"{type(self).__name__}(version={self.version!r}, variant={self.variant!r}, tag={self.tag!r})"


class PtxasSearchSpace(CompilerSearchSpace):
    """ptxas options (-O, --register-usage-level, -maxrregcount, -dlcm, ...): see docs/search-spaces.md."""

    compiler = "ptxas"


class NvccSearchSpace(CompilerSearchSpace):
    """nvcc device-code options plus the ptxas options passed through --ptxas-options."""

    compiler = "nvcc"


class GccSearchSpace(CompilerSearchSpace):
    """gcc optimisation, vectorisation, unrolling, inlining and scheduling options, --param values, -march/-mtune."""

    compiler = "gcc"


class ClangSearchSpace(CompilerSearchSpace):
    """clang optimisation, vectorisation, unrolling and inlining options, LLVM thresholds, -march/-mtune."""

    compiler = "clang"


@runtime_checkable
class SearchSpaceProvider(Protocol):
    """What a custom search-space provider implements (NVIDIA's protocol): ``retrieve()`` returns the
    local path of a space file. Ours must be a compileiq-space JSON file (docs/search-spaces.md);
    an optional ``resolution_metadata`` dict says where it came from. A provider may instead offer
    ``to_component()`` (as the built-in ones do) to build the search component itself."""

    def retrieve(self) -> str: ...


def provider_component(provider) -> OpenSpaceComponent:
    """The search component of a provider that only implements ``retrieve()``."""
    path = provider.retrieve()
    if not isinstance(path, (str, os.PathLike)):
        raise SpaceFileError(f"{type(provider).__name__}.retrieve() returned {path!r}; a provider returns the path of "
                             "a compileiq-space JSON file")
    data = Path(path).read_bytes() if Path(path).is_file() else b""
    if looks_encrypted(data):
        _refuse_encrypted(str(path), data)
    return OpenSpaceComponent(read_space_file(path))


class LocalSearchSpaceBin:
    """A space file of your own (compileiq-space JSON). NVIDIA's encrypted .bin spaces are refused."""

    def __init__(self, path: str | os.PathLike, *, check_compiler: bool = True):
        self.path = Path(path).expanduser()
        if not self.path.is_file():
            raise SpaceFileError(f"LocalSearchSpaceBin: {self.path} is not a file; give the path of a compileiq-space "
                                 "JSON file (docs/search-spaces.md)", path=str(self.path))
        data = self.path.read_bytes()
        if looks_encrypted(data):
            _refuse_encrypted(str(self.path), data)
        self.check_compiler = bool(check_compiler)
        self.resolution_metadata: dict | None = None

    def retrieve(self) -> str:
        space = read_space_file(self.path)
        self.resolution_metadata = {
            "compiler": space.compiler, "compiler_version": space.compiler_version, "variant": space.variant,
            "description": space.description, "requested_tag": None, "resolved_tag": None,
            "filename": self.path.name, "sha256": space.sha256, "size_bytes": self.path.stat().st_size,
            "source": "local", "path": str(self.path)}
        return str(self.path)

    def to_component(self) -> OpenSpaceComponent:
        self.retrieve()
        space = read_space_file(self.path)
        if self.check_compiler and space.compiler in ("ptxas", "nvcc", "gcc", "clang"):
            _check_compiler(space.compiler, space.compiler_version)
        return OpenSpaceComponent(space)

    def __repr__(self):
        return f"LocalSearchSpaceBin({str(self.path)!r})"


CompilerSearchSpaceBase = CompilerSearchSpace  # NVIDIA's name

__all__ = ["PtxasSearchSpace", "NvccSearchSpace", "GccSearchSpace", "ClangSearchSpace", "LocalSearchSpaceBin",
           "AcfCatalogSpace", "CompilerSearchSpace", "CompilerSearchSpaceBase", "SearchSpaceProvider"]
