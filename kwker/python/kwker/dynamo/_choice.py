"""The compile backend's choice cache: one JSON file per (graph, inputs, versions, machine).

The key holds the graph's code, the shapes, dtypes, strides and devices of its inputs and of
its parameters and buffers, the candidates, Inductor's mode, the backend's mode (with a
CPU-backend mode's group size, scheme and threads), the torch and Kwker versions, and
the CPU, engine and thread counts. A file that cannot be read is reported with a warning and
replaced after the next timing; writes are atomic.
"""
import os
import warnings

from kwker import _cache

SCHEMA = "kwker.dynamo.choice"
SCHEMA_VERSION = 1


def _describe(x):
    import torch
    if isinstance(x, torch.Tensor):
        return [list(x.shape), str(x.dtype), list(x.stride()), x.device.type]
    return [type(x).__name__, repr(x) if isinstance(x, (int, float, bool)) else None]


def key(gm, inputs, candidates, inductor_mode, mode=None):
    import torch

    import kwker
    state = [(name, _describe(t)) for name, t in
             list(gm.named_parameters()) + list(gm.named_buffers())]
    return {"graph": gm.code, "inputs": [_describe(x) for x in inputs], "state": state,
            "candidates": list(candidates), "inductor_mode": inductor_mode,
            "mode": mode or {"mode": "auto"},
            "torch": torch.__version__, "kwker": kwker.__version__,
            "torch_threads": torch.get_num_threads(), **_cache.machine()}


def digest(k):
    return _cache.digest(k)


class Store:
    def __init__(self, folder=None):
        self.folder = os.path.abspath(folder) if folder else os.path.join(_cache.root(), "dynamo")

    def _path(self, k):
        return os.path.join(self.folder, f"choice-{digest(k)}.json")

    def get(self, k):
        """The cached candidate name, or None."""
        path = self._path(k)
        data, problem = _cache.read_json(path)
        if data is None and problem is None:
            return None
        if problem is None and not (isinstance(data, dict) and data.get("schema") == SCHEMA and
                                    data.get("schema_version") == SCHEMA_VERSION and
                                    data.get("key") == k and isinstance(data.get("choice"), str)):
            problem = "not a Kwker choice for this graph"
        if problem:
            warnings.warn(f"kwker backend: the choice cache {path} was unreadable ({problem}); "
                          "the candidates are timed again and the file is rewritten",
                          RuntimeWarning, stacklevel=3)
            return None
        return data["choice"]

    def put(self, k, choice, times_ms):
        _cache.folder(os.path.basename(self.folder), base=os.path.dirname(self.folder))
        _cache.write_json(self._path(k), {"schema": SCHEMA, "schema_version": SCHEMA_VERSION,
                                          "key": k, "choice": choice, "times_ms": times_ms})
