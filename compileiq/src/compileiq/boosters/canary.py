"""The O0/O3 canary: do a candidate's controls reach the compiler at all?

A search whose every score equals the baseline's is almost always measuring one stale binary: a
framework cache or a build folder served code built earlier, and the candidate's controls were
never compiled in. The canary catches this before a search spends hours on it. It runs the
objective, exactly as a search would, on three configurations, interleaved for a few rounds:

* the baseline (BASELINE_CONFIG, ``{}``: no controls);
* O0 from the debug pack: must be more than 5% worse than the baseline (often 2-10x);
* O3 from the debug pack: must stay within 5% of the baseline (ptxas/nvcc build at O3 anyway).

It compares medians, so one slow round does not decide. When O0 does not regress, the controls
did not reach the compiler, and the report names the cache that is the likely cause and how to
bust it; when O0 regresses but O3 is off, the baseline is not built at O3. When the baseline's own
runs spread by more than the 5% the test needs and the finding lies inside that spread, the verdict
is UNDECIDED (cause "noisy"): a noisy host gets "could not decide", never a false PASS or FAIL.
"""

from __future__ import annotations

import math
import statistics
import sys
from dataclasses import dataclass, field
from typing import Any, Callable

from ..frameworks.advice import cache_bust_advice
from ..utils.validation import BASELINE_CONFIG, INVALID_SCORE
from .builtin import debug_pack
from .pack import Pack, load_pack

MIN_SLOWDOWN = 0.05   # O0 must be worse than the baseline by more than this fraction
TOLERANCE = 0.05      # O3 must be within this fraction of the baseline

PASS, FAIL, ERROR = "PASS", "FAIL", "ERROR"
UNDECIDED = "UNDECIDED"   # the baseline's own runs spread too much to tell (cause "noisy")

STALE_BUILD = ("a stale build folder: make (or the objective itself) reused an object or binary built for an "
               "earlier candidate, because its rule depends on the sources and not on the flags")
STALE_BUILD_FIX = ("build every candidate in a fresh folder (tempfile.TemporaryDirectory per evaluation, or "
                   "compileiq.frameworks.nvcc_build_dir), or make the output depend on the controls (put the "
                   "controls file's hash in the output name; in make, list the controls file as a prerequisite); "
                   "never skip the compile because the binary already exists")
NOT_PASSED = ("the objective does not hand the controls file to the compiler: after save_compiler_config(path, "
              "config), compile with compileiq.compilers.<compiler>(..., controls=path) or add "
              "compileiq.controls.controls_args(path, compiler) to the command line")
NOISY_FIX = ("re-run when the machine is quieter, with more repeats= and more work per run; pin the benchmark "
             "to one core or lock the GPU clocks (nvidia-smi --lock-gpu-clocks); keep other jobs off the machine")
NOT_MEASURED = ("the score does not depend on the generated code: the timed region is dominated by process "
                "start-up, data transfer or launch overhead; time the kernel itself, with enough work per run")

# Framework -> module whose presence in sys.modules says the objective uses it (Helion before Triton:
# Helion imports Triton, and Helion's cache is the one to bust first then).
_FRAMEWORK_MODULES = (("Helion", "helion"), ("FlashInfer", "flashinfer"), ("Triton", "triton"))


@dataclass
class CanaryResult:
    """The canary's numbers and verdict. ``ratios`` are score/baseline in the cost direction
    (>1 means worse than the baseline, for min and max problems alike)."""

    verdict: str                          # PASS, FAIL, UNDECIDED (too noisy) or ERROR (the objective failed)
    compiler: str
    pack_id: str
    slow: str                             # the configuration that must regress ("O0")
    same: str                             # the configuration that must match the baseline ("O3")
    problem_type: str
    samples: dict[str, list[float]] = field(default_factory=dict)
    medians: dict[str, float] = field(default_factory=dict)
    ratios: dict[str, float] = field(default_factory=dict)
    cause: str = ""                       # ok | controls-not-applied | same-differs | noisy | objective-failed
    explanation: list[str] = field(default_factory=list)
    advice: list[str] = field(default_factory=list)
    min_slowdown: float = MIN_SLOWDOWN
    tolerance: float = TOLERANCE

    @property
    def passed(self) -> bool:
        return self.verdict == PASS

    def __bool__(self) -> bool:
        return self.passed

    def report(self) -> str:
        lines = [f"O0/O3 canary ({self.compiler}, pack {self.pack_id}, problem_type={self.problem_type}): "
                 f"{self.verdict}"]
        if self.medians:
            base = self.medians.get("baseline")
            for name in ("baseline", self.slow, self.same):
                if name not in self.medians:
                    continue
                xs = self.samples.get(name, [])
                rel = "" if name == "baseline" or base is None else f"  x{self.ratios[name]:.3f} vs baseline"
                lines.append(f"  {name:<9} median {self.medians[name]:.6g}  ({len(xs)} runs: "
                             f"{', '.join(f'{x:.4g}' for x in xs)}){rel}")
            lines.append(f"  rule: {self.slow} worse than baseline by more than {self.min_slowdown:.0%}, "
                         f"{self.same} within ±{self.tolerance:.0%}")
        lines += [f"  {ln}" for ln in self.explanation]
        if self.advice:
            lines.append("  Fix:")
            lines += [f"    - {a}" for a in self.advice]
        return "\n".join(lines)

    def as_dict(self) -> dict:
        return {"verdict": self.verdict, "compiler": self.compiler, "pack_id": self.pack_id, "slow": self.slow,
                "same": self.same, "problem_type": self.problem_type, "samples": self.samples,
                "medians": self.medians, "ratios": self.ratios, "cause": self.cause,
                "explanation": self.explanation, "advice": self.advice}


class _ObjectiveFailed(Exception):
    def __init__(self, name: str, message: str, hint: str = ""):
        super().__init__(message)
        self.name, self.hint = name, hint


def _score(objective: Callable, config: Any, name: str, score_index: int | None) -> float:
    try:
        value = objective(config)
    except Exception as exc:  # the user's objective failing is the canary's finding, not a crash
        hint = ""
        if isinstance(exc, TypeError) and "fromhex" in str(exc):
            hint = ("the legacy bytes.fromhex(config) pattern fails on the baseline ({}); use "
                    "save_compiler_config(path, config) and compile without controls when config == BASELINE_CONFIG")
        raise _ObjectiveFailed(name, f"the objective raised {type(exc).__name__} on {name}: {exc}", hint) from None
    if isinstance(value, (tuple, list)) and score_index is not None and len(value) > score_index:
        value = value[score_index]
    if isinstance(value, str) and value == INVALID_SCORE:
        raise _ObjectiveFailed(name, f"the objective returned INVALID_SCORE on {name}",
                               "call the objective by hand with this configuration to see why its build or its "
                               "correctness check failed")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(float(value)):
        raise _ObjectiveFailed(name, f"the objective returned {value!r} on {name}, not one finite number",
                               "return one number (e.g. the median time in ms); pass score_index= for a tuple")
    return float(value)


def _cost_ratio(score: float, base: float, problem_type: str) -> float:
    if problem_type == "min":
        return score / base
    return base / score if score else math.inf


def _likely_caches(compiler: str) -> tuple[str, list[str]]:
    """The likely cause, and the advice lines with the most likely cache first."""
    if compiler in ("gcc", "clang"):
        return STALE_BUILD, [f"stale build folder: {STALE_BUILD_FIX}"]
    table = cache_bust_advice()
    loaded = [fw for fw, mod in _FRAMEWORK_MODULES if mod in sys.modules]
    if loaded:
        cause = (f"the {loaded[0]} cache ({loaded[0].lower()} is imported in this process) serving a kernel it "
                 "compiled before")
    else:
        cause = ("a cache serving a binary compiled earlier: a framework's kernel cache (Triton, Helion, "
                 "FlashInfer) or a reused nvcc/make build folder")
    order = loaded + [fw for fw in ("raw nvcc", "Triton", "Helion", "FlashInfer") if fw not in loaded]
    return cause, [f"{table[fw].framework}: {table[fw].how} (helper: {table[fw].helper})" for fw in order]


def _spread(xs: list[float]) -> float:
    med = statistics.median(xs)
    return (max(xs) - min(xs)) / abs(med) if med else math.inf


def _resolve(pack, compiler: str) -> Pack:
    if pack is None:
        return debug_pack(compiler)
    return pack if isinstance(pack, Pack) else load_pack(pack)


def canary(objective: Callable[[Any], Any], compiler: str | None = None, *, repeats: int = 3, pack=None,
           slow: str = "O0", same: str = "O3", problem_type: str = "min", score_index: int | None = 0,
           min_slowdown: float = MIN_SLOWDOWN, tolerance: float = TOLERANCE) -> CanaryResult:
    """Run the baseline, ``slow`` (O0) and ``same`` (O3) through ``objective`` ``repeats`` times,
    interleaved, and say whether the controls reach the compiler.

    ``objective`` is the search's objective: it receives BASELINE_CONFIG ({}) or the hex string of
    a controls file. ``compiler`` picks the built-in debug pack (ptxas, nvcc, gcc, clang) and the
    advice (default: the pack's controls_stage, else ptxas); ``pack`` is another pack (a Pack, a
    path or a built-in id) holding ``slow`` and ``same``. For a gcc/clang build at -O2, pass
    ``same="O2"``. ``score_index`` picks the entry of a tuple-returning objective."""
    if problem_type not in ("min", "max"):
        raise ValueError(f"problem_type={problem_type!r} must be 'min' (lower is better) or 'max'")
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats={repeats!r} must be an int >= 1 (3 to 5 is plenty)")
    if slow == same or "baseline" in (slow, same):
        raise ValueError(f"slow={slow!r} and same={same!r} must name two different configurations of the pack")
    compiler = getattr(compiler, "name", compiler)  # a Toolchain works too
    p = _resolve(pack, compiler or "ptxas")
    compiler = compiler or p.controls_stage
    configs = {"baseline": BASELINE_CONFIG, slow: p.config(slow).hex, same: p.config(same).hex}
    result = CanaryResult(verdict=ERROR, compiler=compiler, pack_id=p.pack_id, slow=slow, same=same,
                          problem_type=problem_type, min_slowdown=min_slowdown, tolerance=tolerance)
    samples: dict[str, list[float]] = {name: [] for name in configs}
    order = list(configs)
    try:
        for r in range(repeats):
            k = r % len(order)  # rotate so no configuration always runs right after the same neighbour
            for name in order[k:] + order[:k]:
                samples[name].append(_score(objective, configs[name], name, score_index))
    except _ObjectiveFailed as exc:
        result.samples = {n: xs for n, xs in samples.items() if xs}
        result.cause = "objective-failed"
        result.explanation = [f"{exc}; the canary cannot decide without a score for every configuration."]
        result.advice = [exc.hint or "call the objective by hand on this configuration and fix the failure"]
        if exc.name == slow:
            result.advice.append(f"a build that fails only with {slow} means the objective rejects some valid "
                                 "option sets: check how it applies the controls file")
        return result
    med = {n: statistics.median(xs) for n, xs in samples.items()}
    result.samples, result.medians = samples, med
    if med["baseline"] == 0:
        result.cause = "objective-failed"
        result.explanation = ["the baseline's median score is 0, so no ratio can be formed"]
        result.advice = ["return a measurement that is never 0 (e.g. time in ns, not rounded seconds)"]
        return result
    ratios = {n: _cost_ratio(v, med["baseline"], problem_type) for n, v in med.items()}
    result.ratios = ratios
    # The baseline and `same` build the same binary in a working setup, so the spread of either one's
    # runs is the host's noise (a run of 2026-12-02 saw the baseline within 1.1% and O2 spread 19.7%,
    # which read as a 16.8% difference and a wrong FAIL when only the baseline's spread counted).
    noisy = "baseline"
    noise = _spread(samples["baseline"]) if repeats > 1 else 0.0
    if repeats > 1 and _spread(samples[same]) > noise:
        noisy, noise = same, _spread(samples[same])
    # On a noisy host the 5% thresholds cannot be read off medians that move by more than that: a
    # finding must then stand out of that spread, or the canary says it cannot decide.
    # O0 at or under +5% stays a finding (controls-not-applied) whatever the noise: a real O0 build
    # regresses 2-30x, which no spread of a working measurement hides.
    band = noise if noise > tolerance else 0.0
    slow_ok = ratios[slow] - 1 > max(min_slowdown, band)
    same_dev = abs(ratios[same] - 1)
    same_ok = same_dev <= tolerance
    undecided = None
    if not slow_ok and ratios[slow] - 1 > min_slowdown:
        undecided = f"{slow} is x{ratios[slow]:.3f} of the baseline, inside that spread"
    elif slow_ok and not same_ok and same_dev <= band:
        undecided = (f"{same} is {same_dev:.1%} {'worse' if ratios[same] > 1 else 'better'} than the baseline, "
                     "inside that spread")
    elif slow_ok and not same_ok and band:
        # Load only ever slows a run down. When `same`'s best run matches the baseline's best, its
        # slow runs are the host's, not a baseline built differently (which moves every run): a
        # 2-vCPU host running a test suite timed 3 of 5 O3 runs at 2.2-2.5x while O3's fastest
        # equalled the baseline's, and the median read as a wrong FAIL.
        best = min if problem_type == "min" else max
        best_dev = abs(_cost_ratio(best(samples[same]), best(samples["baseline"]), problem_type) - 1)
        if best_dev <= tolerance:
            undecided = (f"{same}'s median is {same_dev:.1%} {'worse' if ratios[same] > 1 else 'better'} than "
                         f"the baseline's while its best run is within {best_dev:.1%} of the baseline's best")
    if slow_ok and same_ok:
        result.verdict, result.cause = PASS, "ok"
        result.explanation = [f"{slow} is x{ratios[slow]:.2f} worse than the baseline and {same} is within "
                              f"{abs(ratios[same] - 1):.1%}: the controls reach the compiler."]
        return result
    if undecided:
        result.verdict, result.cause = UNDECIDED, "noisy"
        result.explanation = [
            f"could not decide: {'the baseline' if noisy == 'baseline' else noisy}'s own runs spread by "
            f"{noise:.1%} of their median (the test needs "
            f"under {tolerance:.0%}), and {undecided}. The measurement is too noisy to tell; this is no verdict "
            "on the objective."]
        result.advice = [NOISY_FIX]
        return result
    result.verdict = FAIL
    if not slow_ok:
        identical = len({v for xs in samples.values() for v in xs}) == 1
        cause, advice = _likely_caches(compiler)
        result.cause = "controls-not-applied"
        result.explanation = [
            f"{slow} is x{ratios[slow]:.3f} of the baseline (needs more than x{1 + min_slowdown:.2f}): the "
            "candidate's controls do not reach the compiler, so a search would measure one binary over and over"
            + (" (every run returned exactly the same number)" if identical else "") + ".",
            f"Likely cause: {cause}."]
        result.advice = advice + [NOT_PASSED, NOT_MEASURED]
    else:
        result.cause = "same-differs"
        direction = "worse" if ratios[same] > 1 else "better"
        result.explanation = [
            f"{slow} regresses (x{ratios[slow]:.2f}), so the controls do reach the compiler, but {same} is "
            f"{abs(ratios[same] - 1):.1%} {direction} than the baseline (allowed ±{tolerance:.0%})"
            + (f", beyond even {'the baseline' if noisy == 'baseline' else noisy}'s own spread of {noise:.1%}"
               if band else "") + "."]
        if compiler in ("gcc", "clang"):
            first = (f"the baseline is not built at {same}: give the objective the build's usual flags as fixed "
                     f"options (e.g. extra=['-O3']; {compiler} defaults to -O0), or pass same='O2' when the "
                     "build uses -O2")
        else:
            first = (f"the baseline is not built at {same}: the build's fixed options change the device "
                     "optimisation level (-G, -Xptxas -O1, --maxrregcount ...); drop them from the baseline or "
                     "pass same= the configuration that matches them")
        result.advice = [first,
                         "check that the objective's fixed flags come before the candidate's (a candidate "
                         "option must override, not be overridden)"]
    return result


__all__ = ["canary", "CanaryResult", "MIN_SLOWDOWN", "TOLERANCE", "PASS", "FAIL", "UNDECIDED", "ERROR", "STALE_BUILD"]
