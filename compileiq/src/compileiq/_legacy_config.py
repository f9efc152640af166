"""The legacy ``.config`` search configuration: an s-expression of ``(key . value)`` lines.

Older CompileIQ scripts pass a path to such a file. ``;`` starts a comment, ``#t``/``#f`` are
booleans, strings are double-quoted, lists are ``((0.5 0.5))`` or ``("a" "b")``;
``seek_minimum`` stands for problem_type and ``qualitative`` is the inverse of normalize.
``SearchConfiguration.from_legacy`` / ``to_legacy`` are the public entry points.
"""

from __future__ import annotations

import re
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from .errors import ConfigurationError

_KEY = re.compile(r"\(\s*([A-Za-z_][\w-]*)\s+\.\s+")
_ATOM = re.compile(r'"[^"]*"|[^\s()]+')


def _atom(raw: str) -> Any:
    if raw in ("#t", "#true"):
        return True
    if raw in ("#f", "#false"):
        return False
    if raw.startswith('"') and raw.endswith('"'):
        return raw[1:-1]
    for conv in (int, float):
        try:
            return conv(raw)
        except ValueError:
            pass
    return raw


def _value(raw: str) -> Any:
    raw = raw.strip()
    if raw.startswith("("):
        return [_atom(a) for a in _ATOM.findall(raw.replace("(", " ").replace(")", " "))]
    return _atom(raw)


def _pairs(text: str, path: Path) -> dict:
    """Every ``(key . value)``; the value runs to the parenthesis that closes the pair."""
    out, pos = {}, 0
    while (m := _KEY.search(text, pos)) is not None:
        depth, i = 1, m.end()
        while i < len(text) and depth:
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
        if depth:
            line = text.count("\n", 0, m.start()) + 1
            start = text[m.start():].split("\n", 1)[0].strip()
            raise ConfigurationError(f"{path}, line {line}: {start} is not closed; add the missing ')' "
                                     "(each setting is one (key . value) pair)")
        out[m.group(1).replace("-", "_")] = _value(text[m.end():i - 1])
        pos = i
    return out


def _uncommented(line: str) -> str:
    """The line up to a ``;`` comment; a ``;`` inside a double-quoted value is kept (a file name may hold one)."""
    quoted = False
    for i, ch in enumerate(line):
        if ch == '"':
            quoted = not quoted
        elif ch == ";" and not quoted:
            return line[:i]
    return line


def _flag(key: str, v, path: Path) -> bool:
    if not isinstance(v, bool):
        meaning = "#t (problem_type='min') or #f ('max')" if key == "seek_minimum" else \
            "#t (normalize=False) or #f (normalize=True)"
        raise ConfigurationError(f"{path}: ({key} . {v}) must be {meaning}")
    return v


def parse_legacy(path) -> tuple[dict, Path]:
    """(fields, path): the file's pairs with seek_minimum / qualitative turned into our field names."""
    p = Path(path)
    if not p.is_file():
        raise ConfigurationError(f"search_config={str(path)!r}: no such file (give a legacy .config file, a "
                                 "SearchConfiguration or a dict of its fields)")
    text = "\n".join(_uncommented(line) for line in p.read_text(errors="replace").splitlines())
    pairs = _pairs(text, p)
    if not pairs:
        raise ConfigurationError(f"{p}: no (key . value) pairs found; is this a legacy CompileIQ .config file?")
    out = {}
    for k, v in pairs.items():
        if k == "seek_minimum":
            out["problem_type"] = "min" if _flag(k, v, p) else "max"
        elif k == "qualitative":
            out["normalize"] = not _flag(k, v, p)
        else:
            out[k] = v
    return out, p


def _render(v: Any) -> str:
    if isinstance(v, bool):
        return "#t" if v else "#f"
    if isinstance(v, str):
        return f'"{v}"'
    if isinstance(v, (list, tuple)):
        if v and all(isinstance(x, str) for x in v):
            return "(" + " ".join(f'"{x}"' for x in v) + ")"
        return "((" + " ".join(str(x) for x in v) + "))"
    return str(v)


def render_legacy(cfg, path=None) -> str:
    try:
        ours = version("compileiq")
    except PackageNotFoundError:
        ours = "unknown"
    lines = [f";written by compileiq {ours} (SearchConfiguration.to_legacy)", ""]
    for key, val in cfg.model_dump().items():
        if val is None:
            continue
        if key == "problem_type":
            lines.append(f"(seek_minimum . {_render(val == 'min')})")
        elif key == "normalize":
            lines.append(f"(qualitative . {_render(not val)})")
        else:
            lines.append(f"({key} . {_render(val)})")
    text = "\n".join(lines) + "\n"
    if path is not None:
        from .utils.fs import atomic_write
        atomic_write(Path(path), text)
    return text


def read_legacy_config(path):
    """The file as a SearchConfiguration (Search(search_config="main.config") uses this)."""
    from .configuration import SearchConfiguration
    return SearchConfiguration.from_legacy(path)
