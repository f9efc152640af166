"""The in-memory form of an open space file: knobs, their domains and the option lines of each value."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any


def value_text(v) -> str:
    """A knob value as text: how it appears in emitted options and in emit maps."""
    if isinstance(v, float):
        return f"{v:.12g}"
    return str(v)


def is_scalar(v) -> bool:
    return isinstance(v, (str, int, float)) and not isinstance(v, bool) and not (isinstance(v, float) and not math.isfinite(v))


@dataclass(frozen=True)
class Requires:
    """What the machine running the search must have for a choice value to be offered."""

    machine: tuple[str, ...] = ()
    cpu_flags: tuple[str, ...] = ()


@dataclass(frozen=True)
class OmitIf:
    """Leave the knob out when ``knob`` is present (with one of ``values``, when given): the two options
    conflict, and the compiler would refuse the pair or ignore one of them with a warning."""

    knob: str
    values: tuple | None = None


@dataclass(frozen=True)
class Knob:
    name: str
    type: str
    values: tuple  # the whole domain, in order (a flag: the single value True)
    lines: tuple[tuple[str, ...], ...]  # the option lines of each value
    default: Any = None
    knockout_prob: float = 0.5
    doc: str = ""
    requires: tuple[Requires | None, ...] = ()  # per value (choices only)
    grid: tuple | None = None  # (min, max, step) of a range
    pointer: str = ""
    omit_if: tuple[OmitIf, ...] = ()


@dataclass(frozen=True)
class SpaceFile:
    compiler: str
    compiler_version: str
    variant: str
    knobs: tuple[Knob, ...]
    description: str = ""
    path: str = ""
    sha256: str = ""
    extra: dict = field(default_factory=dict)

    def knob(self, name: str) -> Knob:
        for k in self.knobs:
            if k.name == name:
                return k
        raise KeyError(f"no knob {name!r}; this space has {', '.join(k.name for k in self.knobs)}")


__all__ = ["Requires", "OmitIf", "Knob", "SpaceFile", "value_text", "is_scalar"]
