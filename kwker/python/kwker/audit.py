"""Record values for `python -m kwker audit` to compare between its two runs.

    from kwker import audit
    audit.record("order", kwker.argsort(a))

Under audit (which sets KWKER_AUDIT_OUT to a directory for each run) every call stores one
value: a plain NumPy array as a .npy file, anything else pickled (torch tensors, also inside
lists, tuples and dicts, as their dtype, shape and raw bytes, so that audit compares them byte for
byte: -0.0 and 0.0, or two NaN payloads, differ), each written to a temporary
name and renamed into place, then listed in the directory's index.jsonl. Outside audit
(KWKER_AUDIT_OUT unset or empty) record() does nothing, so a script runs the same either way.
Only the audit parent reads these files. See docs/tools.md.
"""
import itertools
import json
import os
import pickle
import threading

ENV = "KWKER_AUDIT_OUT"
INDEX = "index.jsonl"

_lock = threading.Lock()
_seq = itertools.count()


def enabled():
    """True when this process runs under `python -m kwker audit`."""
    return bool(os.environ.get(ENV))


def record(name, value):
    """Stores `value` under `name` for audit to compare; a no-op outside audit.

    Recording the same name more than once keeps every value, in order, and audit compares
    them all. The value is captured at the call, so later changes to it are not seen.
    """
    out = os.environ.get(ENV)
    if not out:
        return
    if not isinstance(name, str) or not name:
        raise TypeError(f"kwker.audit.record: name must be a non-empty str, got {name!r}")
    with _lock:
        stem = f"{os.getpid()}-{next(_seq):06d}"
        fmt, data = _encode(name, value)
        fname = f"{stem}.{fmt}"
        tmp = os.path.join(out, f".{fname}.tmp")
        with open(tmp, "wb") as f:
            if fmt == "npy":
                import numpy as np
                np.save(f, data, allow_pickle=False)
            else:
                f.write(data)
        os.replace(tmp, os.path.join(out, fname))
        line = json.dumps({"name": name, "file": fname, "format": fmt}) + "\n"
        # One short O_APPEND write per entry: whole lines, even from forked workers.
        fd = os.open(os.path.join(out, INDEX), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)


TENSOR_MARK = "kwker.audit.tensor"


def _tensors_as_bytes(value, torch):
    """value with every torch tensor (top level or inside lists, tuples, dicts) replaced by a
    plain dict of its dtype, shape, device and bytes: comparable without torch, bit for bit."""
    if isinstance(value, torch.Tensor):
        t = value.detach().cpu().contiguous()
        data = t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""
        return {TENSOR_MARK: 1, "dtype": str(value.dtype), "shape": list(value.shape),
                "device": str(value.device), "data": data}
    if isinstance(value, tuple):
        return tuple(_tensors_as_bytes(v, torch) for v in value)
    if isinstance(value, list):
        return [_tensors_as_bytes(v, torch) for v in value]
    if isinstance(value, dict):
        return {k: _tensors_as_bytes(v, torch) for k, v in value.items()}
    return value


def _encode(name, value):
    import sys
    torch = sys.modules.get("torch")
    if torch is not None:
        value = _tensors_as_bytes(value, torch)
    np = _numpy_if_loaded()
    if np is not None and type(value) is np.ndarray and not value.dtype.hasobject:
        return "npy", value
    try:
        return "pkl", pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as e:
        raise TypeError(f"kwker.audit.record: the value recorded as {name!r} "
                        f"({type(value).__name__}) cannot be pickled: {e}") from e


def _numpy_if_loaded():
    import sys
    return sys.modules.get("numpy")
