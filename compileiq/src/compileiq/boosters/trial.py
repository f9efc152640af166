"""try_pack: run every configuration of a pack through the objective and keep those that validate.

Each configuration is first called once on its own, so one that fails to build is rejected with
its error instead of aborting the others; the rest are measured against the baseline, interleaved,
and judged by compileiq.validate's ship rule (one-sided Welch p < 0.05, Cohen's d > 0.2, a better
mean, a p5-p95 span at most 25% wider, CV at most 10%).

The default trial counts are small so that a pack can be screened quickly. A configuration that
is KEPT here is a lead, not a result: before shipping it, validate it again with the shipping
defaults (``compileiq.validate.validate(..., trials=100, warmup=50)``) on fresh runs.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Any, Callable

from ..utils.validation import BASELINE_CONFIG
from ..validate import Candidate, CallableMeasure, Decision, NoScoreError, validate
from ..validate.measure import NoScore
from .pack import Pack, load_pack

TRIALS = 10
WARMUP = 2
SHIP_TRIALS, SHIP_WARMUP = 100, 50


@dataclass
class PackDecision:
    """The verdict on one configuration of the pack."""

    name: str
    filename: str
    decision: str                      # KEPT, REJECTED:<reason> or UNDECIDED
    validation: Decision | None = None  # the ship rule's numbers; None when the configuration failed to run
    error: str = ""

    @property
    def kept(self) -> bool:
        return self.decision == "KEPT"

    @property
    def speedup(self) -> float:
        return self.validation.verdict.speedup if self.validation is not None else math.nan

    def line(self) -> str:
        if self.validation is None:
            return f"{self.name:<14} {self.decision:<28} {self.error}"
        v = self.validation.verdict
        return (f"{self.name:<14} {self.decision:<28} speed-up x{v.speedup:.3f}  p={v.p_value:.3g}  "
                f"d={v.cohens_d:.3g}  CV {v.candidate.cv:.1%}")


@dataclass
class PackTrialResult:
    pack_id: str
    problem_type: str
    trials: int
    warmup: int
    decisions: list[PackDecision] = field(default_factory=list)

    @property
    def kept(self) -> list[str]:
        return [d.name for d in self.decisions if d.kept]

    def __getitem__(self, name: str) -> PackDecision:
        for d in self.decisions:
            if d.name == name or d.filename == name:
                return d
        raise KeyError(f"no configuration {name!r} in this trial; it has {', '.join(d.name for d in self.decisions)}")

    def report(self) -> str:
        lines = [f"try_pack {self.pack_id}: {len(self.kept)} of {len(self.decisions)} configurations kept "
                 f"({self.trials} trials, {self.warmup} warm-up, problem_type={self.problem_type})"]
        lines += ["  " + d.line() for d in self.decisions]
        if self.trials < SHIP_TRIALS or self.warmup < SHIP_WARMUP:
            lines.append(f"  Screening only: validate kept configurations with trials={SHIP_TRIALS}, "
                         f"warmup={SHIP_WARMUP} before shipping them.")
        return "\n".join(lines)


@dataclass
class _PackCandidate(Candidate):
    # a pack member may live inside a zip: its hash is the manifest's sha256 (the file's own), and
    # ``controls`` names it as pack_id/filename for the decision log instead of pointing at a path
    sha256: str = ""

    @property
    def config_hash(self) -> str:
        return self.sha256


def _picker(objective: Callable, score_index: int | None) -> Callable:
    if score_index is None:
        return objective

    def pick(config):
        value = objective(config)
        if isinstance(value, (tuple, list)) and len(value) > score_index:
            return value[score_index]
        return value
    pick.__qualname__ = getattr(objective, "__qualname__", "objective")
    return pick


def _smoke(fn: Callable, config: Any, name: str) -> str:
    """'' when one call returns a number, else why not."""
    try:
        CallableMeasure(fn, config, pass_params=True)()
    except NoScore as exc:
        return f"{exc} ({name})"
    return ""


def try_pack(objective: Callable[[Any], Any], pack, *, problem_type: str = "min", trials: int = TRIALS,
             warmup: int = WARMUP, score_index: int | None = 0, configs=None,
             output: str | os.PathLike | None = None, progress=None) -> PackTrialResult:
    """Evaluate every configuration of ``pack`` (a Pack, a zip or folder, or a built-in id) through
    ``objective`` and decide KEPT / REJECTED:<reason> for each against the baseline ({}).

    ``configs`` limits the trial to some configuration names. ``output`` appends one CSV row per
    decision (compileiq.validate's decision log). Defaults of 10 trials and 2 warm-up runs screen a
    pack; shipping decisions need validate()'s defaults, 100 trials and 50 warm-up runs."""
    p = pack if isinstance(pack, Pack) else load_pack(pack)
    fn = _picker(objective, score_index)
    names = list(p.files) if configs is None else [p.config(c).name for c in configs]
    result = PackTrialResult(p.pack_id, problem_type, trials, warmup)
    base_error = _smoke(fn, BASELINE_CONFIG, "baseline")
    if base_error:
        raise NoScoreError(f"try_pack {p.pack_id}: the baseline produced no score: {base_error}. Fix the objective "
                           "for BASELINE_CONFIG ({}) first: every configuration is judged against it")
    runnable, failed = [], {}
    for name in names:
        err = _smoke(fn, p.files[name].hex, name)
        if err:
            failed[name] = err
        else:
            runnable.append(name)

    def candidate(name: str) -> Candidate:
        cfg = p.files[name]
        return _PackCandidate(name, CallableMeasure(fn, cfg.hex, pass_params=True), params=cfg.hex,
                              controls=f"{p.pack_id}/{cfg.filename}", sha256=cfg.sha256)

    base = Candidate("baseline", CallableMeasure(fn, BASELINE_CONFIG, pass_params=True), params=BASELINE_CONFIG)
    opts = dict(problem_type=problem_type, trials=trials, warmup=warmup, output=output, progress=progress,
                framework=f"booster pack {p.pack_id}")
    decided: dict[str, Decision] = {}
    if runnable:
        try:
            for d in validate(base, {n: candidate(n) for n in runnable}, **opts):
                decided[d.name] = d
        except NoScoreError:
            # a configuration that ran once but fails in most trials: judge the others without it
            for n in runnable:
                try:
                    decided[n] = validate(base, {n: candidate(n)}, **opts)[0]
                except NoScoreError as exc:
                    failed[n] = str(exc).splitlines()[0]
    for name in names:
        cfg = p.files[name]
        if name in decided:
            d = decided[name]
            result.decisions.append(PackDecision(name, cfg.filename, d.decision, d))
        else:
            result.decisions.append(PackDecision(name, cfg.filename, "REJECTED:no-score", None, failed.get(name, "")))
    return result


__all__ = ["try_pack", "PackTrialResult", "PackDecision", "TRIALS", "WARMUP"]
