"""The compiled torch extension (python/_torch_ops/ops.cc and linear_ops.cc): where it is, which
torch it was built for, and loading it only into that torch. Shared by kwker.torch_ops (the
compiled overrides), kwker.cpu_backend (the linear operator) and kwker.dynamo (both).

The .so links libtorch's C++ API, which changes between torch minor versions, so it is loaded
only when the running torch has the minor version named in _torch_build.json (written by the
build next to it). Otherwise Kwker keeps its Python-registered operators and the doctor says
"the compiled PyTorch operators were built for torch X, not Y". Reading what they were built for
imports no torch, so the doctor can report it from any process.
"""
import functools
import glob
import importlib.metadata as md
import json
import os
import re
import threading

_PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD_INFO = "_torch_build.json"

_lock = threading.Lock()
_loaded = {}  # path -> None once loaded into this process


def _package_dirs():
    """Folders that may hold the extension: the package itself (a wheel install) and, for
    editable installs, wherever kwker._fast lives."""
    dirs = [_PKG]
    try:
        from kwker import _fast
        d = os.path.dirname(os.path.abspath(_fast.__file__))
        if d not in dirs:
            dirs.append(d)
    except ImportError:
        pass
    return dirs


def build_info():
    """{"torch": "2.13.0+cpu", "torch_minor": "2.13", "library": path} of the shipped compiled
    operators, or None when this installation has none."""
    for d in _package_dirs():
        info_path = os.path.join(d, BUILD_INFO)
        libs = sorted(glob.glob(os.path.join(d, "_torch_ops*.so")))
        if os.path.isfile(info_path) and libs:
            try:
                with open(info_path, encoding="utf-8") as f:
                    info = json.load(f)
            except (OSError, ValueError):
                return {"torch": None, "torch_minor": None, "library": libs[0],
                        "error": f"{info_path} is unreadable; reinstall kwker"}
            info["library"] = libs[0]
            return info
    return None


def minor(version):
    m = re.match(r"(\d+)\.(\d+)", version or "")
    return f"{m.group(1)}.{m.group(2)}" if m else None


@functools.lru_cache(maxsize=None)
def running_torch():
    """The installed torch's version (read once per process: it cannot change under it)."""
    try:
        return md.version("torch")
    except md.PackageNotFoundError:
        return None


def availability():
    """(True, "") when the compiled operators can load into this torch, else (False, why)."""
    info = build_info()
    if info is None:
        return False, ("this installation has no compiled PyTorch operators (built without "
                       "torch, or with KWKER_BUILD_TORCH_OPS=0)")
    if info.get("error"):
        return False, info["error"]
    have = running_torch()
    if minor(have) != info.get("torch_minor"):
        return False, (f"the compiled PyTorch operators were built for torch {info['torch']}, "
                       f"not {have}")
    return True, ""


def load(who="kwker.torch_ops", otherwise="or use compiled=False"):
    """Loads the extension into this process (once) and returns torch.ops.kwker_torch.
    Raises RuntimeError saying why when it cannot load; `who` names the caller and `otherwise`
    its alternative in that message."""
    ok, why = availability()
    if not ok:
        raise RuntimeError(f"{who}: {why}; install the Kwker wheel built for your torch (its "
                           f"version ends in +torch2.M), {otherwise}")
    import torch
    path = build_info()["library"]
    with _lock:
        if path not in _loaded:
            try:
                torch.ops.load_library(path)
            except OSError as e:
                raise RuntimeError(f"{who}: the compiled PyTorch operators at {path} did not "
                                   f"load ({e}); reinstall kwker, {otherwise}") from e
            _loaded[path] = None
    from . import ops
    ops.register_compiled()   # the fake kernel of linear, once the operator exists
    return torch.ops.kwker_torch
