"""Read the legacy ``.config`` search configuration: an s-expression of ``(key . value)`` lines.

Older CompileIQ scripts pass a path to such a file; ``#t``/``#f`` are booleans, ``seek_minimum``
stands for problem_type, and ``qualitative`` is the inverse of normalize.
"""

from __future__ import annotations

import re
from pathlib import Path

from .errors import ConfigurationError
from .types import SearchConfiguration

_PAIR = re.compile(r"\(\s*([A-Za-z_][\w-]*)\s*\.\s*([^()]*?)\s*\)")


def _value(raw: str):
    if raw in ("#t", "#true"):
        return True
    if raw in ("#f", "#false"):
        return False
    try:
        return int(raw)
    except ValueError:
        pass
    try:
        return float(raw)
    except ValueError:
        return raw.strip('"')


def read_legacy_config(path) -> SearchConfiguration:
    p = Path(path)
    if not p.is_file():
        raise ConfigurationError(f"search_config={str(path)!r}: no such file (a legacy .config file or a SearchConfiguration)")
    text = p.read_text(errors="replace")
    pairs = {k.replace("-", "_"): _value(v) for k, v in _PAIR.findall(text)}
    if not pairs:
        raise ConfigurationError(f"{p}: no (key . value) pairs found; is this a legacy CompileIQ .config file?")
    d = {}
    for k, v in pairs.items():
        if k == "seek_minimum":
            d["problem_type"] = "min" if v else "max"
        elif k == "qualitative":
            d["normalize"] = not v
        else:
            d[k] = v
    try:
        return SearchConfiguration.from_dict(d)
    except ConfigurationError as exc:
        raise ConfigurationError(f"{p}: {exc}") from None
