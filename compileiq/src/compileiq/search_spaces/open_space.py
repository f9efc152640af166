"""An open space file as a search Component: knobs become genes, a candidate becomes a controls file.

The objective receives the candidate as the lowercase hex string of an open controls file
(``compileiq.controls.format``), NVIDIA's contract for compiler spaces, so
``save_compiler_config(path, config)`` writes it and ``compileiq.compilers.controls_args`` applies it.
Knob values whose ``requires`` this machine does not meet (an -march level the CPU cannot run)
are left out when the Component is built, so the search never proposes a binary that cannot run here.
"""

from __future__ import annotations

import logging
import platform
from functools import lru_cache
from typing import Sequence

from ..controls.format import format_controls
from ..space.params import make_choice, make_literal, make_range
from ..space.space import Component, DictComponent
from .errors import SpaceFileError
from .model import Knob, Requires, SpaceFile, value_text as _fmt

log = logging.getLogger("compileiq")

_MACHINE_ALIASES = {"amd64": "x86_64", "x64": "x86_64", "arm64": "aarch64"}

# Failure text that means the objective handed an open controls file to the wrong compiler option:
# --apply-controls (vendor ACFs only), or the raw file (with its header line) as an options file.
_MISAPPLIED = ("--apply-controls", "-apply-controls", "Invalid compiler controls file", "not in expected format",
               "Input file '#' could not be opened", "compileiq-controls", "Unknown option",
               "unrecognized command-line option", "unknown argument", "linker input file")


@lru_cache(maxsize=1)
def host_facts() -> tuple[str, frozenset]:
    """(machine, cpu flags) of this machine; the flags are empty where /proc/cpuinfo is missing."""
    machine = platform.machine().lower()
    machine = _MACHINE_ALIASES.get(machine, machine)
    flags: set[str] = set()
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                key, _, val = line.partition(":")
                if key.strip() in ("flags", "Features"):
                    flags.update(val.split())
                    break
    except OSError:
        pass
    return machine, frozenset(flags)


def meets(req: Requires | None, facts: tuple[str, frozenset] | None = None) -> bool:
    if req is None:
        return True
    machine, flags = facts or host_facts()
    if req.machine and machine not in req.machine:
        return False
    return all(f in flags for f in req.cpu_flags)


def _param(knob: Knob, keep: list[int]):
    kp = knob.knockout_prob if knob.knockout_prob > 0 else None
    if knob.type == "flag":
        return make_literal(knob.name, kp)
    if knob.type == "range" and len(keep) == len(knob.values):
        lo, hi, step = knob.grid
        return make_range(lo, hi, step, kp)
    return make_choice([knob.values[i] for i in keep], kp)


class OpenSpaceComponent(Component):
    """Genes for every knob of an open space; ``decode`` returns the controls file's bytes as hex."""

    def __init__(self, space: SpaceFile, facts: tuple[str, frozenset] | None = None):
        self.space = space
        self.compiler = space.compiler
        self.compiler_version = space.compiler_version
        self.dropped: dict[str, list] = {}  # knob -> values this machine cannot use
        self._lines: dict[str, dict] = {}
        self._flags: dict[str, bool] = {}
        self._omit: dict[str, tuple] = {}
        params = {}
        for knob in space.knobs:
            keep = [i for i, r in enumerate(knob.requires or [None] * len(knob.values)) if meets(r, facts)]
            if len(keep) < len(knob.values):
                self.dropped[knob.name] = [v for i, v in enumerate(knob.values) if i not in keep]
            if not keep:
                continue
            params[knob.name] = _param(knob, keep)
            # keyed by the value's text: make_range may rebuild float grid points a last bit differently
            self._lines[knob.name] = {_fmt(v): knob.lines[i] for i, v in enumerate(knob.values)}
            self._flags[knob.name] = knob.type == "flag"
            if knob.omit_if:
                self._omit[knob.name] = knob.omit_if
        if self.dropped:
            log.info("search space %s %s (%s): this machine cannot use %s", space.compiler, space.compiler_version,
                     space.variant, "; ".join(f"{k}={v}" for k, v in self.dropped.items()))
        if not params:
            raise SpaceFileError(f"{space.path}: no knob is usable on this machine ({host_facts()[0]}); use a space "
                                 "written for this machine's compiler", path=space.path)
        self._inner = DictComponent(params)
        self.genes = self._inner.genes

    def options(self, values: Sequence[int]) -> list[str]:
        """The compiler options of a candidate, in the space's knob order."""
        chosen = self._inner.decode(values)
        out: list[str] = []
        for name, value in chosen.items():
            if any(self._hit(cond, chosen) for cond in self._omit.get(name, ())):
                continue
            out.extend(self._lines[name][_fmt(True if self._flags[name] else value)])
        return out

    @staticmethod
    def _hit(cond, chosen: dict) -> bool:
        if cond.knob not in chosen:
            return False
        return cond.values is None or _fmt(chosen[cond.knob]) in {_fmt(v) for v in cond.values}

    def decode(self, values: Sequence[int]) -> str:
        return format_controls(self.compiler, self.compiler_version, self.options(values)).hex()

    def all_absent(self, values: Sequence[int]) -> bool:
        return self._inner.all_absent(values)

    def describe(self) -> dict:
        d = {"type": "compileiq-space", "compiler": self.compiler, "compiler_version": self.compiler_version,
             "variant": self.space.variant, "sha256": self.space.sha256, "knobs": self._inner.describe()}
        if self.dropped:
            d["not_on_this_machine"] = {k: list(v) for k, v in self.dropped.items()}
        return d

    def diagnose(self, failed_scores) -> list[str]:
        """Advice when every first-generation candidate failed: the usual cause is a misapplied file."""
        errors = [str(getattr(s, "error", "") or "") for s in failed_scores]
        helper = f"compileiq.compilers.controls_args(path, {self.compiler!r})"
        how = (f"the candidates are open controls files (text: a '# compileiq-controls' header, then one {self.compiler} "
               f"option per line), not vendor ACFs: save each with save_compiler_config(path, config) and apply it "
               f"with {helper} (or the compile helpers compileiq.compilers.{self.compiler}(...)); never pass it to "
               "--apply-controls, nor straight to --options-file/@file with its header line")
        if any(any(p in e for p in _MISAPPLIED) for e in errors):
            return [how]
        if errors and not any(errors) and all(getattr(s, "failure", None) in ("invalid", None) for s in failed_scores):
            return ["if the objective returned INVALID_SCORE because its compile failed: " + how]
        return []


__all__ = ["OpenSpaceComponent", "host_facts", "meets"]
