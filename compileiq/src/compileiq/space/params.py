"""The four parameter kinds of the search-space DSL, each a finite, ordered domain of values.

A parameter never samples itself: it only describes its domain (``values``), an optional
first-generation window (``seed_window``, indices into ``values``) and its knockout prior.
The engines work on indices; ``space.SearchSpace`` turns indices back into values.
"""

from __future__ import annotations

import math
import numbers
import warnings
from dataclasses import dataclass, field
from decimal import Decimal

from ..errors import DuplicateChoiceWarning, SearchSpaceError

_MAX_DOMAIN = 10_000_000  # a single knob with more values than this is almost always a typo in step


def _plain(value, where: str):
    """Python scalar for a user value: bools become ints (NVIDIA's rule), numpy scalars unwrap."""
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float, str)):
        return value
    if value is None:
        return None
    raise SearchSpaceError(
        f"{where}: {value!r} ({type(value).__name__}) is not a str, int, float or bool; "
        "search-space values must survive a JSON round trip (results CSV, resume)"
    )


def _check_prob(knockout_prob, where: str):
    if knockout_prob is None:
        return None
    if isinstance(knockout_prob, bool) or not isinstance(knockout_prob, numbers.Real):
        raise SearchSpaceError(f"{where}: knockout_prob={knockout_prob!r} must be a number in [0, 1]")
    p = float(knockout_prob)
    if not 0.0 <= p <= 1.0 or math.isnan(p):
        raise SearchSpaceError(
            f"{where}: knockout_prob={knockout_prob!r} must be in [0, 1] "
            "(the probability that the key is left out of a candidate)"
        )
    return p


@dataclass(frozen=True)
class Param:
    """Base of every DSL parameter: a finite tuple of values plus the knockout prior."""

    values: tuple
    knockout_prob: float | None = None
    seed_window: tuple[int, int] | None = field(default=None, compare=False)
    ordinal: bool = False  # neighbouring indices are neighbouring values (ranges): mutation may step

    @property
    def knockable(self) -> bool:
        return self.knockout_prob is not None and self.knockout_prob > 0.0

    def describe(self) -> dict:
        raise NotImplementedError


@dataclass(frozen=True)
class RangeParam(Param):
    start: float = 0
    end: float = 0
    step: float = 1

    def describe(self) -> dict:
        d = {"type": "range", "low": self.start, "high": self.end, "step": self.step}
        if self.seed_window is not None:
            d["seed-low"] = self.values[self.seed_window[0]]
            d["seed-high"] = self.values[self.seed_window[1]]
        if self.knockout_prob is not None:
            d["knockout_prob"] = self.knockout_prob
        return d


@dataclass(frozen=True)
class ChoiceParam(Param):
    def describe(self) -> dict:
        d = {"type": "enum", "vals": list(self.values)}
        if self.knockout_prob is not None:
            d["knockout_prob"] = self.knockout_prob
        return d


@dataclass(frozen=True)
class LiteralParam(Param):
    def describe(self) -> dict:
        d = {"type": "literal", "value": self.values[0]}
        if self.knockout_prob is not None:
            d["knockout_prob"] = self.knockout_prob
        return d


def _number(x, name: str, where: str):
    x = _plain(x, where)
    if not isinstance(x, (int, float)) or (isinstance(x, float) and not math.isfinite(x)):
        raise SearchSpaceError(f"{where}: {name}={x!r} must be a finite int or float")
    return x


def make_range(start, end, step=1, knockout_prob=None, seed_low=None, seed_high=None) -> RangeParam:
    where = f"range({start!r}, {end!r}, step={step!r})"
    start, end, step = (_number(v, n, where) for v, n in ((start, "start"), (end, "end"), (step, "step")))
    if not end > start:
        raise SearchSpaceError(f"{where}: end must be greater than start (the end is included in the grid)")
    if not step > 0:
        raise SearchSpaceError(f"{where}: step must be positive")
    integral = all(isinstance(v, int) for v in (start, end, step))
    if integral:
        grid = range(start, end + 1, step)
        if len(grid) > _MAX_DOMAIN:
            raise SearchSpaceError(f"{where}: {len(grid):,} values is more than {_MAX_DOMAIN:,}; use a larger step")
        values = tuple(grid)
    else:
        # Decimal arithmetic so that range(0.1, 0.3, 0.1) gives 0.1, 0.2, 0.3 and not 0.30000000000000004
        ds, de, dt = Decimal(repr(float(start))), Decimal(repr(float(end))), Decimal(repr(float(step)))
        count = int((de - ds) / dt) + 1
        if count > _MAX_DOMAIN:
            raise SearchSpaceError(f"{where}: {count:,} values is more than {_MAX_DOMAIN:,}; use a larger step")
        values = tuple(float(ds + i * dt) for i in builtins_range(count))
    if len(values) > _MAX_DOMAIN:
        raise SearchSpaceError(f"{where}: {len(values):,} values is more than {_MAX_DOMAIN:,}; use a larger step")
    window = None
    if seed_low is not None or seed_high is not None:
        lo = _number(seed_low if seed_low is not None else start, "seed_low", where)
        hi = _number(seed_high if seed_high is not None else end, "seed_high", where)
        if not start <= lo <= hi <= end:
            raise SearchSpaceError(
                f"{where}: the seed window [{lo}, {hi}] must satisfy start <= seed_low <= seed_high <= end"
            )
        idx = [i for i, v in enumerate(values) if lo - 1e-12 <= v <= hi + 1e-12]
        if not idx:
            raise SearchSpaceError(f"{where}: the seed window [{lo}, {hi}] holds no value of the grid")
        window = (idx[0], idx[-1])
    return RangeParam(values=values, knockout_prob=_check_prob(knockout_prob, where), seed_window=window,
                      ordinal=True, start=start, end=end, step=step)


builtins_range = range


def make_choice(options, knockout_prob=None) -> ChoiceParam:
    where = f"choice({options!r})"
    if isinstance(options, (str, bytes, dict)) or not hasattr(options, "__iter__"):
        raise SearchSpaceError(f"{where}: choice takes a list of values, e.g. choice([1, 2, 4])")
    given = list(options)
    values = tuple(_plain(v, where) for v in given)
    if not values:
        raise SearchSpaceError(f"{where}: a choice needs at least one value")
    values = _distinct(values, given, where)
    ordinal = all(isinstance(v, (int, float)) for v in values) and list(values) == sorted(values)
    return ChoiceParam(values=values, knockout_prob=_check_prob(knockout_prob, where), ordinal=ordinal)


def _distinct(values: tuple, given: list, where: str) -> tuple:
    """The values with repeats dropped (first one kept), warning about each repeat. NVIDIA accepts a
    repeat, e.g. ``choice([True, False, 1])`` where True becomes 1; searching it twice would only
    make it likelier to be drawn and offer the same candidate twice."""
    first: dict = {}  # value key -> positions in the list
    for i, v in enumerate(values):
        first.setdefault((type(v).__name__ if not isinstance(v, (int, float)) else "num", v), []).append(i)
    repeats = [pos for pos in first.values() if len(pos) > 1]
    if not repeats:
        return values
    parts = []
    for pos in repeats:
        times = "twice" if len(pos) == 2 else f"{len(pos)} times"
        shown = [repr(given[i]) for i in pos]
        alias = f" ({' and '.join(shown)})" if len(set(shown)) > 1 else ""
        parts.append(f"the value {values[pos[0]]!r} appears {times}{alias}")
    each = "it is" if len(repeats) == 1 else "each is"
    warnings.warn(f"{where}: {'; '.join(parts)}; {each} searched once. Remove the repeat to silence this warning",
                  DuplicateChoiceWarning, stacklevel=4)
    return tuple(values[pos[0]] for pos in first.values())


def make_literal(value, knockout_prob=None) -> LiteralParam:
    where = f"literal({value!r})"
    v = _plain(value, where)
    if v is None:
        raise SearchSpaceError(f"{where}: a literal needs a str, int or float value")
    return LiteralParam(values=(v,), knockout_prob=_check_prob(knockout_prob, where))


def make_log_sampling(start, end, total=10, knockout_prob=None) -> ChoiceParam:
    where = f"log_sampling({start!r}, {end!r}, total={total!r})"
    start, end = _number(start, "start", where), _number(end, "end", where)
    if not (start > 0 and end > start):
        raise SearchSpaceError(f"{where}: needs 0 < start < end (values are spaced evenly on a log scale)")
    if isinstance(total, bool) or not isinstance(total, int) or total < 2:
        raise SearchSpaceError(f"{where}: total must be an int >= 2")
    ratio = (end / start) ** (1.0 / (total - 1))
    values = [start * ratio**i for i in builtins_range(total)]
    values[-1] = float(end)
    values = [float(f"{v:.12g}") for v in values]
    if all(isinstance(x, int) for x in (start, end)):
        rounded = sorted({int(round(v)) for v in values})
        values = rounded  # integer end points: integer grid, duplicates after rounding removed
    return ChoiceParam(values=tuple(values), knockout_prob=_check_prob(knockout_prob, where), ordinal=True)
