"""``controls_args(path, compiler)``: the command-line arguments that apply a controls file of either kind.

* An open controls file: its options (header and comments stripped) go into an options file that
  the compiler reads: ``--options-file F`` for ptxas/nvcc, ``@F`` for gcc/clang. F is written next
  to the controls file as ``<controls file>.<compiler>.args`` (a deterministic name, so repeated
  calls reuse it and it lives exactly as long as the folder the objective made for the candidate);
  where that folder is read-only it goes to ``<cache>/options-files/<sha256[:16]>.args`` instead.
  A file with no options gives no arguments at all.
* A vendor ACF (any file without the header): ``--apply-controls <path>``, after checking that the
  compiler is CUDA 13.3 or newer and accepts the file in a dry compile (``vendor.check_vendor_acf``).

The result is a list (``cmd + controls_args(p, "ptxas")``) and also a context manager that deletes
the options file it wrote: ``with controls_args(p, "gcc") as args: run([gcc, *args, ...])``.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from .. import _env
from .format import ControlsError, is_open_controls, parse_controls, read_controls_bytes
from .vendor import check_vendor_acf, resolve_toolchain
from ..utils.fs import atomic_write

OPTIONS_FILE_FLAG = {"ptxas": ["--options-file"], "nvcc": ["--options-file"]}
RESPONSE_FILE = ("gcc", "clang")


class ControlsArgs(list):
    """The arguments (a list); ``kind`` is "open" or "vendor"; ``options_file`` the file written, if any."""

    def __init__(self, args, kind: str, options_file: Path | None = None, compiler: str = ""):
        super().__init__(args)
        self.kind = kind
        self.options_file = options_file
        self.compiler = compiler

    def cleanup(self) -> None:
        if self.options_file is not None:
            self.options_file.unlink(missing_ok=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.cleanup()
        return False


def _name(compiler) -> str:
    if isinstance(compiler, str) and compiler in ("ptxas", "nvcc", "gcc", "clang"):
        return compiler
    return resolve_toolchain(compiler).name


def _options_for(header_compiler: str, target: str, options: tuple[str, ...], where: Path) -> list[str]:
    if header_compiler == target:
        return list(options)
    if header_compiler == "ptxas" and target == "nvcc":  # nvcc hands ptxas options on through --ptxas-options
        bad = [o for o in options if any(ch.isspace() for ch in o)]
        if bad:
            raise ControlsError(f"{where}: ptxas option {bad[0]!r} holds a space, so it cannot be passed through "
                                "nvcc --ptxas-options; apply the file to ptxas instead")
        return [f"--ptxas-options={o}" for o in options]
    raise ControlsError(f"{where} holds {header_compiler} options (its header says compiler={header_compiler}), "
                        f"but is applied to {target}; apply it to {header_compiler}, or search a {target} space")


def _write_options_file(controls: Path, compiler: str, lines: list[str]) -> Path:
    text = "\n".join(lines) + "\n"
    target = controls.with_name(f"{controls.name}.{compiler}.args")
    for dest in (target, _env.cache_root() / "options-files" / f"{hashlib.sha256(text.encode()).hexdigest()[:16]}.args"):
        try:
            if dest.is_file() and dest.read_text(encoding="utf-8") == text:
                return dest
            dest.parent.mkdir(parents=True, exist_ok=True)
            return atomic_write(dest, text)  # a compile running in parallel never reads half a file
        except OSError:
            continue
    raise ControlsError(f"cannot write the options file for {controls} (neither next to it nor under "
                        f"{_env.cache_root()}); make one of those folders writable")


def controls_args(path: str | os.PathLike, compiler="ptxas", *, check: bool = True) -> ControlsArgs:
    """Arguments that apply the controls file at ``path`` to ``compiler`` (ptxas, nvcc, gcc, clang,
    a binary path, or a Toolchain). ``check=False`` skips the vendor-ACF dry compile (not the format checks)."""
    path = Path(path)
    data = read_controls_bytes(path)
    name = _name(compiler)
    if is_open_controls(data):
        parsed = parse_controls(data, str(path))
        lines = _options_for(parsed.compiler, name, parsed.options, path)
        if not lines:
            return ControlsArgs([], "open", None, name)
        opt_file = _write_options_file(path, name, lines)
        flag = [f"@{opt_file}"] if name in RESPONSE_FILE else [*OPTIONS_FILE_FLAG[name], str(opt_file)]
        return ControlsArgs(flag, "open", opt_file, name)
    if not data:
        raise ControlsError(f"controls file {path} is empty: neither an open controls file nor a vendor ACF; "
                            "write the candidate with save_compiler_config(path, config)")
    if check:
        check_vendor_acf(path, compiler)
    elif name not in ("ptxas", "nvcc"):
        raise ControlsError(f"{path} is a vendor ACF; {name} cannot apply it (only ptxas and nvcc read ACFs)")
    return ControlsArgs(["--apply-controls", str(path)], "vendor", None, name)


__all__ = ["ControlsArgs", "controls_args"]
