"""Per operator and dtype: the element count from which each override runs instead of torch's
kernel, measured on the project machine by `python kwker/bench/torch_thresholds.py` (which
rewrites thresholds.json; docs/torch.md shows the table). Each is the smallest size from which
Kwker measured faster than torch's own kernel at every larger size tried, through the dispatcher
(dispatch overhead included), for the Python-registered and the compiled operators separately.
"""
import json
import os

from kwker._torch import kernels as _kernels

_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "thresholds.json")
# Used for a dtype or op the table does not list (never measured): large enough that Kwker's
# speed is not in doubt.
DEFAULT = 4096
NEVER = 2 ** 62
KWKER_DTYPE_COUNT = 14  # measured slower at every size: the override stays on torch's kernel

_NAMES = {code: str(dtype).replace("torch.", "") for dtype, code in _kernels.CODES.items()}


def load():
    with open(_FILE, encoding="utf-8") as f:
        return json.load(f)


def table(kind, ops):
    """{op: [threshold by dtype code]} for implementation `kind` ("python" | "compiled")."""
    measured = load().get(kind, {})
    out = {}
    for op in ops:
        row = measured.get(op, {})
        # One entry per kwker dtype code (KWKER_DTYPE_COUNT, datetime included: torch has none).
        out[op] = [int(row.get(_NAMES.get(c, ""), DEFAULT)) for c in range(KWKER_DTYPE_COUNT)]
    return out
