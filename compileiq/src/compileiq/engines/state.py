"""An engine's state as JSON, and back into a freshly built engine of the same kind.

Checkpoints must restore an engine exactly: the same seed and the same told scores must give the
same candidates after a restore as without one. Rather than pickling (a checkpoint is a file users
keep and share: unpickling one would run code), the state is the engine's own attributes written
as JSON with type tags for what JSON lacks: tuples (genotypes), sets, dicts with non-string keys,
non-finite floats and the ``random.Random`` state. Attributes that are configuration rather than
state (the space, the settings) are not written; a restore builds the engine from the same space
and settings, then loads the state into it, so objects shared between attributes (the GA's
``Variation`` uses the engine's own ``rng``) stay shared.
"""

from __future__ import annotations

import math
import random
from typing import Any

from ..errors import CheckpointError

_SKIP_TYPES: tuple = ()  # filled lazily: SearchSpace, EngineSettings (configuration, not state)


def _skip_types() -> tuple:
    global _SKIP_TYPES
    if not _SKIP_TYPES:
        from ..space.space import Gene, SearchSpace
        from .base import EngineSettings
        _SKIP_TYPES = (SearchSpace, EngineSettings, Gene)
    return _SKIP_TYPES


def _encode(v: Any, where: str) -> Any:
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        return v if math.isfinite(v) else {"$f": repr(v)}
    if isinstance(v, tuple):
        return {"$t": [_encode(x, where) for x in v]}
    if isinstance(v, list):
        return [_encode(x, where) for x in v]
    if isinstance(v, (set, frozenset)):
        return {"$s": [_encode(x, where) for x in v]}
    if isinstance(v, dict):
        return {"$d": [[_encode(k, where), _encode(x, where)] for k, x in v.items()]}
    if isinstance(v, random.Random):
        return {"$rng": _encode(v.getstate(), where)}
    if hasattr(v, "item") and getattr(v, "shape", None) == ():
        return _encode(v.item(), where)
    if hasattr(v, "__dict__"):
        return {"$obj": dump_state(v, where)}
    raise CheckpointError(f"{where}: a {type(v).__name__} cannot be written to a checkpoint; an engine's state must "
                          "be plain data (numbers, strings, tuples, lists, sets, dicts, random.Random)")


def _decode(v: Any) -> Any:
    if isinstance(v, list):
        return [_decode(x) for x in v]
    if not isinstance(v, dict):
        return v
    if "$t" in v:
        return tuple(_decode(x) for x in v["$t"])
    if "$s" in v:
        return {_decode(x) for x in v["$s"]}
    if "$d" in v:
        return {_decode(k): _decode(x) for k, x in v["$d"]}
    if "$f" in v:
        return float(v["$f"])
    raise CheckpointError(f"checkpoint: unexpected engine state entry {sorted(v)}")


def _configuration(v: Any) -> bool:
    skip = _skip_types()
    return isinstance(v, skip) or (isinstance(v, (list, tuple)) and bool(v) and all(isinstance(x, skip) for x in v))


def dump_state(obj: Any, where: str = "engine") -> dict:
    """Every attribute of ``obj`` (recursively for the objects it owns) as JSON-ready data; the
    space, the settings and the genes are configuration: a restore brings its own."""
    return {name: _encode(value, f"{where}.{name}") for name, value in vars(obj).items() if not _configuration(value)}


def load_state(obj: Any, state: dict, where: str = "engine") -> None:
    """Load ``state`` (from dump_state) into ``obj``, an engine built from the same space and settings."""
    for name, enc in state.items():
        _load_attr(obj, name, enc, f"{where}.{name}")


def _load_attr(obj: Any, name: str, enc: Any, where: str) -> None:
    cur = getattr(obj, name, None)
    if isinstance(enc, dict) and "$rng" in enc:
        if not isinstance(cur, random.Random):
            raise CheckpointError(f"{where}: the checkpoint holds a random state where this engine has none")
        cur.setstate(_decode(enc["$rng"]))
        return
    if isinstance(enc, dict) and "$obj" in enc:
        if cur is None or not hasattr(cur, "__dict__"):
            raise CheckpointError(f"{where}: the checkpoint holds an object where this engine has {cur!r}")
        load_state(cur, enc["$obj"], where)
        return
    if isinstance(enc, list) and enc and all(isinstance(e, dict) and "$obj" in e for e in enc):
        if not isinstance(cur, list) or len(cur) != len(enc):
            raise CheckpointError(f"{where}: the checkpoint holds {len(enc)} objects where this engine has {cur!r}")
        for i, e in enumerate(enc):
            load_state(cur[i], e["$obj"], f"{where}[{i}]")
        return
    setattr(obj, name, _decode(enc))


__all__ = ["dump_state", "load_state"]
