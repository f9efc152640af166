"""The compile backend's choice cache: one JSON file per (graph, inputs, versions, machine).

The key holds the graph's code, the shapes, dtypes, strides and devices of its inputs and of
its parameters and buffers, the candidates, Inductor's mode, the backend's mode (with a
CPU-backend mode's group size, scheme and threads), the torch and Kwker versions, and
the CPU, engine and thread counts. A file that cannot be read is reported with a warning and
replaced after the next timing; writes are atomic.
"""
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
    """The choices of one folder (KWKER_CACHE_DIR/dynamo, or the cache_dir option), as files of
    the kwker._cache store."""

    def __init__(self, folder=None):
        self._store = _cache.Store("dynamo", SCHEMA, SCHEMA_VERSION, prefix="choice-",
                                   location=folder)

    @property
    def folder(self):
        return self._store.folder

    def get(self, k):
        """The cached candidate name, or None."""
        data, problem = self._store.get(k)
        if problem is None and data is not None and not isinstance(data.get("choice"), str):
            problem = "not a Kwker choice for this graph"
        if problem:
            warnings.warn(f"kwker backend: the choice cache {self._store.path(k)} was unreadable "
                          f"({problem}); the candidates are timed again and the file is "
                          "rewritten", RuntimeWarning, stacklevel=3)
            return None
        return None if data is None else data["choice"]

    def put(self, k, choice, times_ms):
        self._store.put(k, {"choice": choice, "times_ms": times_ms})
