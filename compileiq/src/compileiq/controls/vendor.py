"""The setup check for a vendor ACF: CUDA 13.3 or newer, and one dry compile that accepts the file.

ACFs are opaque and locked to the CUDA minor version that made them (a 13.3 ACF is refused by
ptxas 13.5 as "Invalid compiler controls file"); ptxas 13.0 knows the option but reads no file
("not in expected format"). Either would turn every candidate of a search into INVALID_SCORE, so
the check runs once, before the search, and names both versions when it fails. Verdicts are kept
per (compiler binary, file content) for the life of the process.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import tempfile
from pathlib import Path

from .format import ControlsError

# compileiq.compilers re-exports controls_args, so discovery is imported where it is used, not here

MIN_CUDA = (13, 3)
PROBE_ARCH = "sm_90"

# A one-store kernel: the cheapest input that makes ptxas run its whole pipeline (and read the ACF).
PROBE_PTX = """.version 8.0
.target sm_75
.address_size 64

.visible .entry ciq_probe(
\t.param .u64 ciq_probe_param_0
)
{
\t.reg .b32 %r<2>;
\t.reg .b64 %rd<3>;
\tld.param.u64 %rd1, [ciq_probe_param_0];
\tcvta.to.global.u64 %rd2, %rd1;
\tmov.u32 %r1, 1;
\tst.global.u32 [%rd2], %r1;
\tret;
}
"""
PROBE_CU = 'extern "C" __global__ void ciq_probe(int *p) { *p = 1; }\n'

_verdicts: dict[tuple, str | None] = {}


class VendorAcfError(ControlsError):
    """A vendor ACF the compiler cannot apply (too old a CUDA, or a file it refuses)."""


def resolve_toolchain(compiler):
    """A Toolchain from a name (found by discovery), a binary path, or a Toolchain."""
    from ..compilers.discovery import Toolchain, find_compiler, toolchain_at
    if isinstance(compiler, Toolchain):
        return compiler
    text = os.fspath(compiler)
    if os.sep in text or Path(text).is_file():
        base = Path(text).name
        name = next((n for n in ("ptxas", "nvcc", "clang", "gcc") if n in base), base)
        return toolchain_at(name, text)
    return find_compiler(text)


def _first_error(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return next((ln for ln in lines if "fatal" in ln or "error" in ln.lower()), lines[0] if lines else "no output")


def _dry_compile(tc, acf: Path) -> tuple[int, str, str]:
    with tempfile.TemporaryDirectory(prefix="ciq-acf-probe-") as d:
        out = os.path.join(d, "probe.cubin")
        cicc = Path(tc.path).resolve().parent.parent / "nvvm" / "bin" / "cicc"
        if tc.name == "nvcc" and cicc.is_file():  # nvcc hands the ACF to cicc too: probe both
            src, what = os.path.join(d, "probe.cu"), "a .cu probe (cicc and ptxas)"
            Path(src).write_text(PROBE_CU)
        else:
            src, what = os.path.join(d, "probe.ptx"), "a .ptx probe"
            Path(src).write_text(PROBE_PTX)
        cmd = [tc.path, f"-arch={PROBE_ARCH}", src, "-o", out, "--apply-controls", str(acf)]
        if tc.name == "nvcc":
            cmd.insert(1, "-cubin")
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        except subprocess.TimeoutExpired:
            return -1, "no answer within 120 s", what
        return proc.returncode, (proc.stderr or "") + (proc.stdout or ""), what


def check_vendor_acf(path: str | os.PathLike, compiler="ptxas"):
    """Raise VendorAcfError unless ``compiler`` (a name, a path or a Toolchain) applies the ACF at ``path``."""
    path = Path(path)
    tc = resolve_toolchain(compiler)
    if tc.name not in ("ptxas", "nvcc"):
        raise VendorAcfError(f"{path} is a vendor ACF (it has no '# compileiq-controls' header); only ptxas and nvcc "
                             f"read those, not {tc.name}. For {tc.name}, use an open controls file "
                             f"(a {tc.name} search space from compileiq.search_spaces.compilers)")
    if not isinstance(tc.version, tuple) or tc.version < MIN_CUDA:
        raise VendorAcfError(
            f"{path} is a vendor ACF, which needs CUDA {MIN_CUDA[0]}.{MIN_CUDA[1]} or newer (--apply-controls), but "
            f"{tc.name} at {tc.path} is CUDA {tc.version_str}. Use a ptxas/nvcc of the CUDA version the ACF was made "
            "for (e.g. `pip install nvidia-cuda-nvcc==13.3.73` and set CIQ_PTXAS to its ptxas), or search an open "
            f"space instead (PtxasSearchSpace()), which works with CUDA {tc.version_str}")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise VendorAcfError(f"{path}: cannot be read ({exc.strerror or exc}); check the path") from None
    st = os.stat(tc.path)
    key = (tc.path, st.st_mtime_ns, st.st_size, hashlib.sha256(data).hexdigest())
    if key not in _verdicts:
        rc, output, what = _dry_compile(tc, path)
        _verdicts[key] = None if rc == 0 else f"{_first_error(output)} (exit {rc}, {what})"
    reason = _verdicts[key]
    if reason is not None:
        raise VendorAcfError(
            f"{tc.name} {tc.release or tc.version_str} ({tc.path}) refuses the ACF {path}: {reason}. Either the file is "
            f"not a valid ACF, or it was made for another CUDA version (an ACF only works with the CUDA minor version "
            f"that made it; this compiler is CUDA {tc.version_str}): use the ptxas of the ACF's CUDA version "
            "(CIQ_PTXAS), ACFs made for this one, or an open space (PtxasSearchSpace())")
    return tc


__all__ = ["VendorAcfError", "check_vendor_acf", "resolve_toolchain", "MIN_CUDA", "PROBE_PTX"]
