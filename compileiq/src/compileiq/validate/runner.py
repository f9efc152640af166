"""Re-measure the baseline and the candidates interleaved, then apply the ship rule to each.

Interleaving (baseline, c1, c2, baseline, c1, c2, ...) spreads slow drift (thermal throttling,
another job starting) over every side alike, where measuring one side after the other would
turn drift into a fake difference. The order rotates each round so no side always runs right
after the same neighbour. Each round gives one pair (baseline, candidate) per candidate: the
ratio rule judges the speed-up of the pairs and, while a candidate stays UNDECIDED, measures it
and the baseline for more rounds (``trials`` more per look, up to ``max_trials``).
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from ..errors import CompileIQError
from . import record
from .measure import CallableMeasure, CommandMeasure, NoScore, SAMPLE_CHARS
from .device import check_device, combine, declared, from_controls_file, from_params
from .machine import LoadMeter
from .provenance import config_hash
from .stats import (ALPHA, MAX_CV, MAX_SPREAD_RATIO, MIN_EFFECT, MIN_SPEEDUP, SPREAD_RULES, Verdict, check_rules,
                    welch_decide)
from ..utils.validation import metadata_dict

Progress = Callable[[str, int, int], None]


class NoScoreError(CompileIQError, RuntimeError):
    """More than half the trials of one side produced no score; deciding on the rest would be a guess."""


@dataclass
class Candidate:
    """One configuration to measure: a name, a source of measurements and what identifies it."""

    name: str
    measure: Callable[[], float]
    params: Any = None
    controls: str | None = None   # controls / ACF file the configuration comes from
    command: str | None = None    # shell command, when measured by one
    device: str | None = None     # "cpu" or "gpu" where the measured code runs (None: found, see device.py)

    def __post_init__(self):
        if not isinstance(self.measure, (CallableMeasure, CommandMeasure)):
            # a bare callable's None, "*" or exception must count as "no score", not crash the run
            self.measure = CallableMeasure(self.measure)

    @property
    def config_hash(self) -> str:
        return config_hash(self.params, self.controls, self.command)

    def describe(self) -> str:
        return f"`{self.command}`" if self.command else self.name


@dataclass
class Decision:
    """The ship rule's verdict on one candidate, with the samples and identity behind it."""

    name: str
    verdict: Verdict
    baseline_samples: list[float] = field(repr=False)
    candidate_samples: list[float] = field(repr=False)
    params: Any = None
    config_hash: str = ""
    controls: str | None = None
    command: str | None = None

    @property
    def decision(self) -> str:
        return self.verdict.decision

    @property
    def kept(self) -> bool:
        return self.verdict.kept

    @property
    def undecided(self) -> bool:
        return self.verdict.undecided

    @property
    def reasons(self) -> tuple[str, ...]:
        return self.verdict.reasons

    @property
    def p_value(self) -> float:
        return self.verdict.p_value

    @property
    def cohens_d(self) -> float:
        return self.verdict.cohens_d

    def summary_line(self) -> str:
        v = self.verdict
        b, c = v.baseline, v.candidate
        ri = v.ratio
        paired = ""
        if ri is not None and ri.formed:
            paired = f"  paired {ri.median:.3f}x [{ri.low:.3f}, {ri.high:.3f}] ({100 * ri.confidence:.4g}%, {ri.n} pairs)"
        return (f"{self.name}: {v.decision}  baseline {b.mean:.6g} ± {b.sd:.3g} (CV {b.cv:.1%})  "
                f"candidate {c.mean:.6g} ± {c.sd:.3g} (CV {c.cv:.1%})  speed-up {v.speedup:.3f}x{paired}  "
                f"p={v.p_value:.3g}  d={v.cohens_d:.3g}")


def as_candidate(obj: Any, name: str, *, score_regex: str | None = None, timeout: float | None = None) -> Candidate:
    """A Candidate from a Candidate, a shell command (str) or a zero-argument callable."""
    if isinstance(obj, Candidate):
        return obj
    if isinstance(obj, str):
        return Candidate(name, CommandMeasure(obj, score_regex, timeout=timeout), command=obj)
    if callable(obj):
        return Candidate(name, CallableMeasure(obj), device=declared(obj))
    raise TypeError(f"{name}: expected a shell command (str), a callable returning one number, or a Candidate; "
                    f"got {type(obj).__name__}")


_FIXES = {
    "no-match": ("run the command by hand and look at what it prints, then make the score regex match the number; "
                 "the first capture group (or the whole match) is the score, e.g. --score-regex 'time: ([0-9.]+) ms'"),
    "exit-status": "run the command by hand: it must exit with status 0 and print its measurement",
    "timeout": "raise the per-run limit (--timeout) or shorten the benchmark",
    "exception": "call the measurement function by hand to see the full traceback and fix it",
    "bad-value": "make the measurement return one finite number per call (e.g. the time in ms)",
}


class _Tally:
    """One side's measurements by trial round (a failed run leaves its round empty), and its failures
    in the current phase, to show in the refusal."""

    def __init__(self, cand: Candidate):
        self.cand = cand
        self.values: dict[int, float] = {}
        self.runs = 0
        self.failures = 0
        self.last: NoScore | None = None

    @property
    def samples(self) -> list[float]:
        return list(self.values.values())

    def refusal(self, planned: int, phase: str) -> NoScoreError:
        e = self.last
        sample = (e.output or "").strip()[:SAMPLE_CHARS] if e else ""
        lines = [f"refusing to decide: {self.cand.describe()} ({self.cand.name}) produced no score in "
                 f"{self.failures} of its first {self.runs} {phase} runs, more than half of the {planned} planned."]
        if e is not None:
            lines.append(f"Last failure: {e}.")
            if sample:
                lines.append("Sample of its output:\n" + "\n".join("    | " + ln for ln in sample.splitlines()))
            elif e.kind in ("no-match", "exit-status"):
                lines.append("It printed nothing.")
            lines.append("Fix: " + _FIXES.get(e.kind, _FIXES["bad-value"]) + ".")
        return NoScoreError("\n".join(lines))


def _call(t: _Tally, trial_round: int | None) -> None:
    t.runs += 1
    try:
        x = t.cand.measure()
    except NoScore as e:
        t.failures += 1
        t.last = e
        return
    if trial_round is not None:
        t.values[trial_round] = x


class _Rounds:
    """Interleaved rounds over some of the sides; trial rounds are numbered across phases so that
    the baseline's and a candidate's runs of the same round form a pair."""

    def __init__(self, cands: Sequence[Candidate], progress: Progress | None):
        self.tallies = [_Tally(c) for c in cands]
        self.progress = progress
        self.done = 0  # trial rounds so far

    def run(self, phase: str, rounds: int, keep: bool, active: Sequence[int] | None = None) -> None:
        """Raises NoScoreError as soon as one side has failed in more than half of the phase's runs:
        the outcome is then certain and waiting for the remaining runs would only waste time."""
        tallies = self.tallies if active is None else [self.tallies[i] for i in active]
        for t in tallies:
            t.runs, t.failures, t.last = 0, 0, None
        for r in range(rounds):
            k = r % len(tallies)
            for t in tallies[k:] + tallies[:k]:
                _call(t, self.done if keep else None)
                if t.failures * 2 > rounds:
                    raise t.refusal(rounds, phase)
            self.done += keep
            if self.progress is not None:
                self.progress(phase, r + 1, rounds)

    def pairs(self, a: int, b: int) -> tuple[list[float], list[float]]:
        """Side a's and side b's measurements of the rounds both have one."""
        va, vb = self.tallies[a].values, self.tallies[b].values
        common = [r for r in va if r in vb]
        return [va[r] for r in common], [vb[r] for r in common]


def measure_interleaved(cands: Sequence[Candidate], *, trials: int, warmup: int,
                        progress: Progress | None = None) -> list[list[float]]:
    """``trials`` kept measurements per candidate (after ``warmup`` discarded ones), interleaved.

    Raises NoScoreError as soon as one side has failed in more than half of a phase's runs."""
    rounds = _Rounds(cands, progress)
    rounds.run("warm-up", warmup, keep=False)
    rounds.run("trial", trials, keep=True)
    return [t.samples for t in rounds.tallies]


def _check_counts(trials: int, warmup: int) -> None:
    if not isinstance(trials, int) or trials < 2:
        raise ValueError(f"trials={trials!r}: a t-test needs at least 2 trials per side (100 recommended)")
    if not isinstance(warmup, int) or warmup < 0:
        raise ValueError(f"warmup={warmup!r} must be an integer >= 0 (50 recommended)")


def _budget(noise_rule: str, min_speedup: float, trials: int, max_trials: int | None) -> int:
    check_rules(noise_rule, min_speedup)
    if max_trials is None:
        return trials if noise_rule == "cv" else 4 * trials
    if not isinstance(max_trials, int) or max_trials < trials:
        raise ValueError(f"max_trials={max_trials!r} must be an integer >= trials ({trials}): it caps the pairs an "
                         "undecided candidate gets (default 4 x trials)")
    return max_trials


def _device(device: str | None, sides: Sequence[Candidate]) -> str | None:
    dev = check_device(device)
    if dev is not None:
        return dev
    return combine(c.device or declared(c) or from_controls_file(c.controls) or from_params(c.params) for c in sides)


def validate(baseline: Any, candidates: Sequence[Any] | Mapping[str, Any], *, problem_type: str = "min",
             trials: int = 100, warmup: int = 50, score_regex: str | None = None, timeout: float | None = None,
             output: str | os.PathLike | None = None, input_shape: str | None = None, framework: str | None = None,
             alpha: float = ALPHA, min_effect: float = MIN_EFFECT, max_spread_ratio: float = MAX_SPREAD_RATIO,
             max_cv: float = MAX_CV, spread_rule: str = "relative", noise_rule: str = "ratio_ci",
             min_speedup: float = MIN_SPEEDUP, max_trials: int | None = None, device: str | None = None,
             progress: Progress | None = None) -> list[Decision]:
    """Re-measure ``baseline`` and every candidate interleaved and decide KEPT / REJECTED:<reason> / UNDECIDED.

    baseline and candidates are shell commands (read with ``score_regex``), zero-argument callables
    returning one number, or Candidate objects; candidates may be a {name: source} mapping. With
    ``output`` one row per decision is appended to that CSV. Raises NoScoreError when more than half
    of one side's trials produced no score.

    noise_rule="ratio_ci" (default) judges the interval of the paired speed-up against 1 + min_speedup;
    a candidate still UNDECIDED after ``trials`` pairs is measured again with the baseline, ``trials``
    more pairs per look, until it is decided or has ``max_trials`` pairs (default 4 x trials).
    noise_rule="cv" is NVIDIA's CV <= 10% gate on ``trials`` runs. ``device`` ("cpu" / "gpu", default:
    found from the sources, see validate/device.py) chooses the advice for a noisy machine."""
    if problem_type not in ("min", "max"):
        raise ValueError(f"problem_type={problem_type!r} must be 'min' (lower is better) or 'max' (higher is better)")
    if spread_rule not in SPREAD_RULES:
        raise ValueError(f"spread_rule={spread_rule!r} must be one of {', '.join(SPREAD_RULES)}")
    _check_counts(trials, warmup)
    budget = _budget(noise_rule, min_speedup, trials, max_trials)
    check_device(device)
    items: Iterable = candidates.items() if isinstance(candidates, Mapping) else (
        (f"candidate-{i + 1}", c) for i, c in enumerate(candidates))
    opts = dict(score_regex=score_regex, timeout=timeout)
    cands = [as_candidate(c, name, **opts) for name, c in items]
    if not cands:
        raise ValueError("no candidates to validate: give at least one candidate command, callable or Candidate")
    base = as_candidate(baseline, "baseline", **opts)
    if output is not None:
        record.check(output)
    looks = 1 if noise_rule == "cv" else math.ceil(budget / trials)
    rule = dict(alpha=alpha, min_effect=min_effect, max_spread_ratio=max_spread_ratio, max_cv=max_cv,
                spread_rule=spread_rule, noise_rule=noise_rule, min_speedup=min_speedup, looks=looks)
    meter = LoadMeter()
    rounds = _Rounds([base, *cands], progress)
    rounds.run("warm-up", warmup, keep=False)
    rounds.run("trial", trials, keep=True)
    final: dict[int, tuple[list[float], list[float]]] = {}
    pending = list(range(1, len(cands) + 1))
    for look in range(1, looks + 1):
        still = []
        for i in pending:
            b, c = rounds.pairs(0, i)
            if look < looks and welch_decide(b, c, problem_type, **rule).undecided:
                still.append(i)
            else:
                final[i] = (b, c)
        pending = still
        if not pending:
            break
        rounds.run("more trials", min(trials, budget - rounds.done), keep=True, active=[0, *pending])
    load = meter.stop()
    dev = _device(device, [base, *cands])
    decisions = []
    for i, cand in enumerate(cands, start=1):
        b, c = final[i]
        v = welch_decide(b, c, problem_type, **rule, device=dev, load=load)
        decisions.append(Decision(cand.name, v, b, c, cand.params, cand.config_hash, cand.controls, cand.command))
    if output is not None:
        ctx = record.context(baseline_command=base.command or base.name, input_shape=input_shape or "",
                             framework=framework or "", problem_type=problem_type, trials=trials, warmup=warmup,
                             max_trials=budget)
        record.append(output, decisions, ctx)
    return decisions


def _numeric(values) -> np.ndarray:
    out = []
    for v in values:
        try:
            out.append(float(v))
        except (TypeError, ValueError):
            out.append(np.nan)  # INVALID_SCORE ("*") and anything unreadable never rank
    return np.asarray(out, dtype=float)


def pick_candidates(result, top_k: int | None = 3, front: bool | None = None) -> list[dict]:
    """Rows of a SearchResult to validate: the top_k best (one objective) or the Pareto front
    (several objectives, best first by mean score, capped at top_k unless it is None)."""
    from ..results.csv_io import norm_columns, score_columns

    k = result.num_objectives
    if front is None:
        front = k >= 2
    if front:
        return _unique(result.pareto_front(), top_k)
    df = result.get_results()
    if "metadata" in df.columns:
        df = df[[not metadata_dict(m).get("baseline") for m in df["metadata"]]]
    cols = norm_columns(df) or score_columns(df)
    if not cols:
        raise ValueError("the search result has no score_1 column to rank candidates by")
    vals = _numeric(df[cols[0]])
    order = np.argsort(-vals if result.problem_type == "max" else vals, kind="stable")
    return _unique((df.iloc[int(i)].to_dict() for i in order if not np.isnan(vals[i])), top_k)


def _unique(rows: Iterable[dict], top_k: int | None) -> list[dict]:
    """The first top_k rows with distinct params: one configuration measured twice is one candidate."""
    out, seen = [], set()
    for row in rows:
        key = json.dumps(row.get("params"), sort_keys=True, default=str)
        if key in seen:
            continue
        seen.add(key)
        out.append(row)
        if top_k is not None and len(out) >= top_k:
            break
    return out


def validate_result(search_result, measure_fn: Callable[[Any], Any], top_k: int | None = 3, *,
                    front: bool | None = None, baseline_params: Any = None, **kwargs) -> list[Decision]:
    """Validate the best candidates of a search: ``measure_fn(params)`` returns one measurement of
    the configuration ``params`` (the baseline is measured as ``measure_fn(baseline_params)``,
    default BASELINE_CONFIG ``{}``). ``search_result`` is a SearchResult or a results CSV path.
    Other keyword arguments go to validate(); problem_type defaults to the result's."""
    from ..results import SearchResult

    if isinstance(search_result, (str, os.PathLike)):
        search_result = SearchResult.from_csv(search_result, kwargs.get("problem_type", "min"))
    kwargs.setdefault("problem_type", search_result.problem_type)
    rows = pick_candidates(search_result, top_k, front)
    if not rows:
        raise ValueError("the search result holds no valid candidate to validate (every score is INVALID_SCORE); "
                         "run `compileiq diagnose <results.csv>` to see why")
    base_params = {} if baseline_params is None else baseline_params
    dev = declared(measure_fn)
    base = Candidate("baseline", CallableMeasure(measure_fn, base_params, pass_params=True), params=base_params,
                     device=dev)
    cands = {}
    for i, row in enumerate(rows):
        meta = metadata_dict(row.get("metadata"))
        name = str(meta.get("param_id") or f"rank-{i + 1}")
        name = name if name not in cands else f"{name}-{i + 1}"
        cands[name] = Candidate(name, CallableMeasure(measure_fn, row.get("params"), pass_params=True),
                                params=row.get("params"), device=dev)
    return validate(base, cands, **kwargs)
