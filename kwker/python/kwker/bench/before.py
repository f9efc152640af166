"""Before and after in one run: `python -m kwker bench --before LIBKWKER`.

Every case's kwker call is timed twice more, in this process and in the same interleaved
repeats as the case's rows: over this build's libkwker and over the one given (a previous
build), both through the ctypes backend (k, c1, ..., after, before, k, c1, ..., before, after,
...: the two sides swap places every repeat, so neither always runs right after the other).
The report gives, per case, before time / after time (> 1: faster now), the median over pairs
of repeats (each order once): two builds compared at the same moments of the host, on the same
arrays.

Why in one process: a first version ran each side in a child process of its own, and a build
compared with itself that way measured 0.5-2.6x on single samples of two-thread row argsorts
(the same code over the same data, 1.1 or 1.4-1.5 ms per call depending on the process, for
the life of the process). Sharing the arrays and the allocator leaves the library as the only
difference. Why ctypes on both sides: the `_fast` extension is bound to the libkwker it was
linked with (by soname), while ctypes loads any file; both sides pay the same per-call cost.

Every runtime control set through kwker (kwker.config, set_max_threads, ...) follows the switch
from one library to the other. A case whose kwker call does not reach libkwker through the
backend (the compiled PyTorch operators link this build's library themselves) is listed as not
compared: the before library's call counters tell. So is a case whose call needs a C function
the before library does not have yet (an older build: its other cases still compare).
"""
import json
import math
import os
import statistics

import numpy as np

from kwker import _backend, _ctypes_backend, _runtime

from .timing import LocalTimer

KEY = "kwker (before)"           # the before side's timer among a case's timers
AFTER = "kwker (after)"          # the after side's: this build, through ctypes too
NO_SLOWER = 0.97                 # the project's noise rule for "never slower"


def _loaded_libkwker():
    """Real paths of the libkwker files this process mapped."""
    try:
        with open("/proc/self/maps") as f:
            return sorted({os.path.realpath(line.split()[-1]) for line in f
                           if "/libkwker" in line})
    except OSError:
        return []


def _switch(name, backend):
    """Make `backend` the active one, carrying every runtime control over to it."""
    if _backend.impl is not backend:
        state = _runtime._snapshot()
        _backend.activate(name, backend)
        _runtime._restore(state)


class Switched:
    """The case's kwker callable, run with `backend` active (switched in prepare(), outside
    the clock, carrying the runtime controls over)."""

    def __init__(self, fn, name, backend):
        self.fn, self.name, self.backend = fn, name, backend

    def prepare(self):
        _switch(self.name, self.backend)
        inner = getattr(self.fn, "prepare", None)
        if inner is not None:
            inner()

    def __call__(self):
        return self.fn()


class Sides:
    """The two libraries of the comparison, loaded beside this process's own backend. Raises
    RuntimeError (with the reason and the fix) when the given one cannot serve."""

    def __init__(self, path):
        path = os.path.abspath(path)
        if not os.path.isfile(path):
            raise RuntimeError(f"--before {path}: no such file; give the path of a libkwker.so "
                               "built from the commit to compare with (make bench-native "
                               "builds one in build/baseline)")
        import kwker
        kwker.sort(np.array([2, 1]))     # the active backend loads its library on first use
        mine = _loaded_libkwker()
        if len(mine) != 1:
            raise RuntimeError(f"--before: this process has {mine} mapped, not one libkwker; "
                               "run the benchmark from a normal install")
        self.default = (_backend.name, _backend.impl)
        self.after_path, self.before_path = mine[0], os.path.realpath(path)
        self.after = _backend.impl if _backend.name == "ctypes" else _ctypes_backend.load(mine[0])
        try:
            # An older build may lack C functions added since: the cases that call one are
            # listed as not compared (missing()), the others compare as usual.
            self.before = _ctypes_backend.load(self.before_path, missing_ok=True)
            problem = None
        except OSError as exc:           # not a loadable shared library
            problem = f"it does not load ({exc}); give a libkwker.so built for this machine"
        if problem is None and len(self.before.missing) == len(_ctypes_backend._SIGNATURES):
            problem = "it has none of libkwker's C functions; give a libkwker.so"
        if problem is not None:
            raise RuntimeError(f"--before {path}: {problem}")
        got = self.before.abi_version()
        if got != _backend.EXPECTED_ABI:
            raise RuntimeError(f"--before {path}: that libkwker has ABI version {got}, this "
                               f"build {_backend.EXPECTED_ABI}; compare builds of the same ABI")
        mine_isa, theirs = self.after.get_isa(), self.before.get_isa()
        if mine_isa != theirs:
            raise RuntimeError(f"--before {path}: that library selects engine {theirs!r} and "
                               f"this build {mine_isa!r}; set KWKER_ISA to an engine both have "
                               "so that the comparison is of builds, not engines")
        self.info = {"library": self.before_path, "after_library": self.after_path,
                     "version": self.before.version(), "engine": theirs,
                     "backend": "ctypes (both sides)", "missing": list(self.before.missing)}

    def lacks(self, fn):
        """The C function the before library lacks that the case's kwker call needs, or None
        (one trial call through the before library, outside the timing)."""
        if not self.before.missing:
            return None
        probe = Switched(fn, "ctypes", self.before)
        try:
            probe.prepare()
            probe()
        except _ctypes_backend.MissingFunction as exc:
            return next((m for m in self.before.missing if m in str(exc)), str(exc))
        finally:
            self.restore()
        return None

    def timers(self, fn):
        """The after and before timers of one case's kwker callable."""
        return {AFTER: LocalTimer(Switched(fn, "ctypes", self.after)),
                KEY: LocalTimer(Switched(fn, "ctypes", self.before))}

    def wrap(self, fn):
        """Any other timed callable of the case: run with this process's own backend."""
        return Switched(fn, *self.default)

    def restore(self):
        _switch(*self.default)

    def before_calls(self):
        """How many calls the before library has served (its per-engine counters)."""
        counters = json.loads(self.before.runtime_info()).get("counters", {})
        return sum(c.get("calls", 0) for c in counters.values())


REPEATS = 10                     # the default with --before: five pairs of repeats


def repeats(wanted, given):
    """Repeats of a case with --before: whole pairs (see pair_ratios), and REPEATS unless
    --repeats was given."""
    n = wanted if given else max(wanted, REPEATS)
    return n + n % 2


def pair_ratios(ratios):
    """The geometric mean of each pair of repeats. The two sides swap places every repeat, and
    the place matters: a stable argsort of 1e6 int32 measured before / after 0.79-0.8x in one
    order and 1.25-1.28x in the other (the same code), so the median of single repeats fell on
    whichever order had one repeat more. A pair holds each order once."""
    return [math.sqrt(ratios[i] * ratios[i + 1]) for i in range(0, len(ratios) - 1, 2)]


def row(case, sizes, after_times, before_times):
    """One before/after row: before time / after time (> 1: faster now), the median over the
    pairs of repeats."""
    ratios = pair_ratios([b / a if a > 0 else math.inf
                          for a, b in zip(after_times, before_times)])
    return {
        "name": case.id,
        "section": case.section,
        "n": case.n(sizes),
        "shape": case.shape(sizes) if case.shape else None,
        "dtype": case.dtype,
        "kwker": case.kwker_desc,
        "after_s": statistics.median(after_times),
        "before_s": statistics.median(before_times),
        "ratio_median": statistics.median(ratios),
        "ratio_min": min(ratios),
        "ratio_max": max(ratios),
        "ratios": ratios,
        "repeats": len(after_times),
        "slower": statistics.median(ratios) < NO_SLOWER,
    }


def summary(rows):
    """How many cases, their geometric mean speed-up, and the ones slower now."""
    if not rows:
        return {"cases": 0, "geomean": None, "slower": []}
    logs = [math.log(r["ratio_median"]) for r in rows]
    return {"cases": len(rows), "geomean": math.exp(sum(logs) / len(logs)),
            "slower": [r["name"] for r in rows if r["slower"]]}
