"""Where the measured code runs, CPU or GPU, so that a noisy validation gets advice that fits it.

The device is known, in this order, from:
1. ``validate(..., device="cpu" | "gpu")`` or ``--device`` (the user said so);
2. a ``device`` attribute on a measurement callable (``measure.device = "gpu"``) or a Candidate;
3. the compiler a candidate's controls declare: the first line of an open controls file (or of the
   hex string a search gives the objective) names it, and gcc / clang build CPU code while ptxas /
   nvcc build GPU code; a vendor ACF is a ptxas file, so GPU.
Otherwise it stays unknown, and the advice covers both devices, each part labelled.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

DEVICES = ("cpu", "gpu")
COMPILER_DEVICE = {"gcc": "cpu", "clang": "cpu", "g++": "cpu", "clang++": "cpu", "ptxas": "gpu", "nvcc": "gpu"}


def check_device(device: str | None, where: str = "device") -> str | None:
    if device is None or device == "auto":
        return None
    if device not in DEVICES:
        raise ValueError(f"{where}={device!r} must be 'cpu', 'gpu' or None (found from the objective and its "
                         "controls); it only chooses the advice printed when the measurements are too noisy")
    return device


def _from_controls_bytes(data: bytes) -> str | None:
    from ..controls.format import HEADER_RE, is_open_controls
    if not is_open_controls(data):
        return "gpu"  # a vendor ACF: only ptxas / nvcc read one
    first = data.split(b"\n", 1)[0].decode("utf-8", errors="replace").strip()
    m = HEADER_RE.match(first)
    return COMPILER_DEVICE.get(m.group(2)) if m else None


def from_params(params: Any) -> str | None:
    """The device of a search candidate whose params are a controls hex string (compiler search spaces)."""
    if not isinstance(params, str) or not params:
        return None
    try:
        data = bytes.fromhex(params[:400])  # the header is the first line: a prefix is enough
    except ValueError:
        return None
    from ..controls.format import MAGIC
    return _from_controls_bytes(data) if data.startswith(MAGIC) else None


def from_controls_file(path: str | None) -> str | None:
    if not path:
        return None
    try:
        with Path(path).open("rb") as fh:
            head = fh.read(200)
    except OSError:
        return None
    return _from_controls_bytes(head) if head else None


def declared(obj: Any) -> str | None:
    """A ``device`` attribute of ``obj`` (a callable, a Candidate or a measurement), when it is cpu or gpu."""
    measure = getattr(obj, "measure", None)
    for o in (obj, getattr(obj, "fn", None), measure, getattr(measure, "fn", None)):
        d = getattr(o, "device", None) if o is not None else None
        if d in DEVICES:
            return d
    return None


def combine(devices: Iterable[str | None]) -> str | None:
    """One device for a validation: gpu when any side runs on one, cpu when all known ones do."""
    found = {d for d in devices if d}
    return "gpu" if "gpu" in found else ("cpu" if found else None)
