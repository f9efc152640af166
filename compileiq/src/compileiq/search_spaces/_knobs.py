"""Validation of the knobs of a space file; every message is '<file>: <JSON pointer> (knob <name>): <problem>; <fix>'."""

from __future__ import annotations

import math
import re
import string
from typing import Any

from .errors import SpaceFileError
from .model import Knob, OmitIf, Requires, is_scalar, value_text

KNOB_TYPES = ("range", "choice", "flag")
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$")
_COMMON_KEYS = {"name", "type", "emit", "default", "knockout_prob", "doc", "omit_if"}
_TYPE_KEYS = {"range": {"min", "max", "step"}, "choice": {"values"}, "flag": set()}
_REQUIRES_KEYS = {"machine", "cpu_flags"}
_MAX_VALUES = 4096  # every value's options are rendered and checked at load time


class Checker:
    """Builds messages of the form '<file>: <pointer> (knob <name>): <problem>; <fix>'."""

    def __init__(self, where: str):
        self.where = where

    def fail(self, pointer: str, problem: str, fix: str, knob: str | None = None):
        at = f"{pointer or '/'}" + (f" (knob {knob!r})" if knob else "")
        raise SpaceFileError(f"{self.where}: {at}: {problem}; {fix}", path=self.where, pointer=pointer or "/")

    def keys(self, obj: dict, allowed: set, pointer: str, knob: str | None = None):
        for key in obj:
            if key not in allowed:
                self.fail(f"{pointer}/{key}", f"unknown key {key!r}",
                          f"remove it or use one of {', '.join(sorted(allowed))}", knob)


def _template_ok(tpl: str) -> bool:
    try:
        parts = list(string.Formatter().parse(tpl))
    except ValueError:
        return False
    return all(fname in (None, "value") and not spec and conv is None for _, fname, spec, conv in parts)


def _render(c: Checker, tpl, value, pointer: str, knob: str, flag: bool = False) -> tuple[str, ...]:
    tpls = [tpl] if isinstance(tpl, str) else tpl
    if not isinstance(tpls, list) or not all(isinstance(t, str) for t in tpls):
        c.fail(pointer, "emit must be a string or a list of strings (one option line each)",
               'e.g. "emit": "-maxrregcount={value}"', knob)
    out = []
    for i, t in enumerate(tpls):
        p = pointer if isinstance(tpl, str) else f"{pointer}/{i}"
        if not _template_ok(t):
            c.fail(p, f"bad template {t!r}: the only placeholder is {{value}} (write {{{{ and }}}} for braces)",
                   'e.g. "-O{value}"', knob)
        if flag and any(fname for _, fname, _, _ in string.Formatter().parse(t)):
            c.fail(p, "a flag has no value to substitute", "drop {value} from emit", knob)
        line = t.format(value=value_text(value)).strip()
        if not line or "\n" in line or "\r" in line or line.startswith("#"):
            c.fail(p, f"value {value!r} renders to {line!r}, which is not one option line",
                   "each emitted line must be non-empty, single-line and not start with #", knob)
        out.append(line)
    return tuple(out)


def _number(c, obj, key, pointer, knob, default=None):
    v = obj.get(key, default)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        c.fail(f"{pointer}/{key}", f"{key}={v!r} must be a finite number", f'e.g. "{key}": 1', knob)
    return v


def _requires(c, raw, pointer, knob) -> Requires:
    if not isinstance(raw, dict):
        c.fail(pointer, "requires must be an object", 'e.g. {"machine": ["x86_64"], "cpu_flags": ["avx2"]}', knob)
    c.keys(raw, _REQUIRES_KEYS, pointer, knob)
    out = {}
    for key in _REQUIRES_KEYS:
        val = raw.get(key, [])
        if not isinstance(val, list) or not all(isinstance(x, str) and x for x in val):
            c.fail(f"{pointer}/{key}", f"{key} must be a list of names", f'e.g. "{key}": ["x86_64"]', knob)
        out[key] = tuple(val)
    return Requires(**out)


def _flag(c: Checker, raw: dict, pointer: str, name: str, kp: float):
    if kp == 0.0:
        c.fail(f"{pointer}/knockout_prob", "a flag with knockout_prob 0 is always present, so it is not a knob",
               "give knockout_prob > 0, or put the option in your fixed command line", name)
    default = raw.get("default", False)
    if not isinstance(default, bool):
        c.fail(f"{pointer}/default", f"default={default!r} of a flag must be true or false",
               "true when the compiler does this without the option", name)
    lines = (_render(c, raw["emit"], True, f"{pointer}/emit", name, flag=True),)
    return (True,), lines, default, (), None


def _range(c: Checker, raw: dict, pointer: str, name: str, kp: float):
    lo = _number(c, raw, "min", pointer, name)
    hi = _number(c, raw, "max", pointer, name)
    step = _number(c, raw, "step", pointer, name, default=1)
    if not hi > lo:
        c.fail(f"{pointer}/max", f"max={hi!r} must be greater than min={lo!r}", "the grid includes both ends", name)
    if not step > 0:
        c.fail(f"{pointer}/step", f"step={step!r} must be positive", 'e.g. "step": 1', name)
    count = int((hi - lo) / step + 1e-9) + 1
    if count > _MAX_VALUES:
        c.fail(f"{pointer}/step", f"{count} values is more than {_MAX_VALUES}", "use a larger step", name)
    integral = all(isinstance(v, int) for v in (lo, hi, step))
    values = tuple(lo + i * step if integral else float(f"{lo + i * step:.12g}") for i in range(count))
    if values[-1] != hi:
        c.fail(f"{pointer}/max", f"max={hi!r} is not on the grid min + k*step (the last point is {values[-1]!r})",
               "make max - min a multiple of step", name)
    if isinstance(raw["emit"], dict):
        c.fail(f"{pointer}/emit", "a range emits through a template", 'e.g. "emit": "-maxrregcount={value}"', name)
    lines = tuple(_render(c, raw["emit"], v, f"{pointer}/emit", name) for v in values)
    return values, lines, raw.get("default"), (), (lo, hi, step)


def _choice(c: Checker, raw: dict, pointer: str, name: str, kp: float):
    raw_values = raw.get("values")
    if not isinstance(raw_values, list) or not raw_values:
        c.fail(f"{pointer}/values", "values must be a non-empty list", 'e.g. "values": ["ca", "cg", "cs"]', name)
    values, reqs = [], []
    for i, item in enumerate(raw_values):
        p = f"{pointer}/values/{i}"
        req = None
        if isinstance(item, dict):
            c.keys(item, {"value", "requires"}, p, name)
            if "requires" in item:
                req = _requires(c, item["requires"], f"{p}/requires", name)
            item = item.get("value")
        if not is_scalar(item):
            c.fail(p, f"{item!r} is not a string or number", "choice values are strings or numbers", name)
        if any(value_text(item) == value_text(v) for v in values):
            c.fail(p, f"the value {item!r} appears twice", "each value must be distinct", name)
        values.append(item)
        reqs.append(req)
    emit = raw["emit"]
    if not isinstance(emit, dict):
        lines = tuple(_render(c, emit, v, f"{pointer}/emit", name) for v in values)
        return tuple(values), lines, raw.get("default"), tuple(reqs), None
    keys = {value_text(v) for v in values}
    for k in emit:
        if k not in keys:
            c.fail(f"{pointer}/emit/{k}", f"{k!r} is not one of the values", f"map exactly {sorted(keys)}", name)
    lines = []
    for v in values:
        key = value_text(v)
        if key not in emit:
            c.fail(f"{pointer}/emit", f"no options for value {v!r}", f'add "{key}": [...] (an empty list means no option)',
                   name)
        lines.append(() if emit[key] == [] else _render(c, emit[key], v, f"{pointer}/emit/{key}", name))
    return tuple(values), tuple(lines), raw.get("default"), tuple(reqs), None


def _omit_conditions(c: Checker, raw: dict, pointer: str, name: str) -> tuple[OmitIf, ...]:
    """The structure of omit_if; check_omit_if checks the knobs it names once every knob is known."""
    omit = raw.get("omit_if", [])
    if not isinstance(omit, list) or not all(isinstance(o, dict) for o in omit):
        c.fail(f"{pointer}/omit_if", "omit_if must be a list of conditions",
               'e.g. "omit_if": [{"knob": "opt-level", "values": [0]}]', name)
    conds = []
    for i, o in enumerate(omit):
        c.keys(o, {"knob", "values"}, f"{pointer}/omit_if/{i}", name)
        vals = o.get("values")
        if vals is not None and (not isinstance(vals, list) or not vals or not all(is_scalar(v) for v in vals)):
            c.fail(f"{pointer}/omit_if/{i}/values", "values must be a non-empty list of the other knob's values",
                   "or leave values out to mean any value", name)
        conds.append(OmitIf(o.get("knob"), tuple(vals) if vals is not None else None))
    return tuple(conds)


_DOMAIN = {"flag": _flag, "range": _range, "choice": _choice}


def parse_knob(c: Checker, raw: Any, pointer: str) -> Knob:
    if not isinstance(raw, dict):
        c.fail(pointer, "a knob must be an object",
               'e.g. {"name": "opt-level", "type": "range", "min": 0, "max": 3, "emit": "-O{value}"}')
    name = raw.get("name")
    if not isinstance(name, str) or not _NAME_RE.match(name):
        c.fail(f"{pointer}/name", f"name={name!r} is not a knob name",
               "use letters, digits and _ . + - (starting with a letter or digit)")
    ktype = raw.get("type")
    if ktype not in KNOB_TYPES:
        c.fail(f"{pointer}/type", f"type={ktype!r} is not a knob type", f"use one of {', '.join(KNOB_TYPES)}", name)
    c.keys(raw, _COMMON_KEYS | _TYPE_KEYS[ktype], pointer, name)
    if "emit" not in raw:
        c.fail(f"{pointer}/emit", "missing emit (how a value becomes compiler options)",
               'add e.g. "emit": "--fmad={value}"', name)
    doc = raw.get("doc", "")
    if not isinstance(doc, str):
        c.fail(f"{pointer}/doc", "doc must be a string", "write a one-line description", name)
    kp = raw.get("knockout_prob", 0.5)
    if isinstance(kp, bool) or not isinstance(kp, (int, float)) or not 0.0 <= kp <= 1.0:
        c.fail(f"{pointer}/knockout_prob", f"knockout_prob={kp!r} must be a number in [0, 1]",
               "it is the probability that a candidate leaves this knob at the compiler's default", name)
    values, lines, default, reqs, grid = _DOMAIN[ktype](c, raw, pointer, name, kp)
    if ktype != "flag" and default is not None and not any(value_text(default) == value_text(v) for v in values):
        c.fail(f"{pointer}/default", f"default={default!r} is not in the domain",
               "give the compiler's default value from the domain, or leave default out", name)
    return Knob(name, ktype, values, lines, default, float(kp), doc, reqs, grid, pointer,
                _omit_conditions(c, raw, pointer, name))


def check_omit_if(c: Checker, knobs: list[Knob]):
    by_name = {k.name: k for k in knobs}
    for k in knobs:
        for i, cond in enumerate(k.omit_if):
            p = f"{k.pointer}/omit_if/{i}"
            other = by_name.get(cond.knob) if isinstance(cond.knob, str) else None
            if other is None or other is k:
                c.fail(f"{p}/knob", f"{cond.knob!r} is not another knob of this space",
                       f"name one of {', '.join(n for n in by_name if n != k.name)}", k.name)
            if other.omit_if:  # one level only, so the order of evaluation never matters
                c.fail(f"{p}/knob", f"{other.name!r} has an omit_if of its own",
                       "a condition may only name a knob that is never omitted by another", k.name)
            if cond.values is not None:
                if other.type == "flag":
                    c.fail(f"{p}/values", f"{other.name!r} is a flag: it is present or not",
                           "leave values out", k.name)
                domain = {value_text(v) for v in other.values}
                for v in cond.values:
                    if value_text(v) not in domain:
                        c.fail(f"{p}/values", f"{v!r} is not a value of {other.name!r}",
                               f"use values from {sorted(domain)}", k.name)


__all__ = ["Checker", "parse_knob", "check_omit_if", "KNOB_TYPES"]
