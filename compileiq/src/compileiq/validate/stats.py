"""The ship rule: the speed-up's interval (or NVIDIA's CV gate), Welch's t-test, Cohen's d and the spread check.

Everything here is a pure function of numbers, so the rule can be tested without measuring anything.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Sequence

import numpy as np

from .advice import advice_for, noise_advice, spread_advice
from .machine import MachineLoad
from .ratio import RatioInterval, median_interval, pair_ratios

NOISY_ADVICE = noise_advice(None, None, "cv")  # the advice for a device nobody declared (kept for old imports)
SPREAD_ADVICE = spread_advice(None)

ALPHA = 0.05           # Welch's one-sided level; the ratio rule's interval is (1 - ALPHA) two-sided
MIN_EFFECT = 0.2       # Cohen's d below this is too small to be worth shipping
MAX_SPREAD_RATIO = 1.25  # candidate p5-p95 span may be at most 25% wider than the baseline's (see SPREAD_RULES)
MAX_CV = 0.10          # NVIDIA's gate: above this coefficient of variation the noise hides any real difference
MIN_SPEEDUP = 0.02     # the ratio rule keeps a candidate only when its speed-up is surely above 1 + this

KEPT = "KEPT"
UNDECIDED = "UNDECIDED"

# What decides whether the measurements are good enough to decide on (see docs/validation.md).
# ratio_ci (default): the interleaved pairs give a distribution of the speed-up (baseline/candidate per pair);
#   the exact order-statistic interval of its median decides: KEPT when its lower bound is above 1 + min_speedup,
#   REJECTED:below-min-speedup when its upper bound is below, UNDECIDED (and validate() measures more pairs, up to
#   max_trials) otherwise. The noise that matters is the uncertainty of the speed-up, not each side's raw spread.
# cv: NVIDIA's gate, "CV <= 10%" on each side (REJECTED:noisy), then Welch's p < alpha and Cohen's d > min_effect.
NOISE_RULES = ("ratio_ci", "cv")

# How "25% wider" is measured.
# relative (default): each span as a share of its own mean, so a candidate twice as fast is compared like with
#   like; and a candidate whose slow tail (p95 for min) beats the baseline's fast tail (p5) is never rejected for
#   spread: every typical run of it beats every typical run of the baseline, which is what the check protects.
# absolute: NVIDIA's rule, the two spans in the score's own unit. It holds a candidate that became twice as fast
#   to the same absolute jitter, which fails when the remaining noise does not shrink with the run time (a
#   kernel that became memory-bound: its time now depends on the shared caches, see docs/validation.md).
SPREAD_RULES = ("relative", "absolute")

# Reasons in the order they are reported: noise first, because when the measurement is too noisy
# the other checks mean nothing. noisy, not-significant and small-effect decide under noise_rule="cv";
# below-min-speedup and uncertain under "ratio_ci"; mean-not-better and wider-spread under both.
REASONS = ("noisy", "mean-not-better", "below-min-speedup", "not-significant", "small-effect", "wider-spread",
           "uncertain")

REASON_TEXT = {
    "noisy": "CV above {max_cv:.0%} on the baseline or the candidate: too noisy to decide",
    "mean-not-better": "the candidate's mean is not better (a lucky minimum during the search, not a real win)",
    "not-significant": "one-sided Welch p = {p:.3g} is not below {alpha}",
    "small-effect": "Cohen's d = {d:.3g} is not above {min_effect}",
    "wider-spread": "{spread_detail}",
    "below-min-speedup": "the speed-up (median of {pairs} paired ratios) is {ratio:.3f}x and its {conf} interval "
                         "[{low:.3f}, {high:.3f}] lies below the minimum of {floor:.3f}x (min_speedup={min_speedup:g})",
    "uncertain": "{uncertain_detail}",
}


@dataclass(frozen=True)
class Summary:
    """What the decision log keeps of one sample."""

    n: int
    mean: float
    sd: float
    p5: float
    p95: float
    cv: float  # sd / |mean|; inf when the mean is 0 and the sd is not

    @classmethod
    def of(cls, samples: Sequence[float]) -> "Summary":
        x = _as_array(samples, "samples")
        mean = float(x.mean())
        sd = float(x.std(ddof=1)) if len(x) > 1 else 0.0
        p5, p95 = (float(v) for v in np.percentile(x, [5, 95]))
        cv = sd / abs(mean) if mean != 0 else (0.0 if sd == 0 else math.inf)
        return cls(len(x), mean, sd, p5, p95, cv)

    @property
    def spread(self) -> float:
        return self.p95 - self.p5

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class WelchResult:
    t: float
    df: float
    p_value: float


@dataclass(frozen=True)
class Verdict:
    """The outcome of the ship rule for one candidate against the baseline."""

    decision: str                 # "KEPT" or "REJECTED:<first reason>"
    reasons: tuple[str, ...]      # every check that failed, in REASONS order
    baseline: Summary
    candidate: Summary
    p_value: float
    cohens_d: float
    t: float
    df: float
    problem_type: str
    explanations: tuple[str, ...] = field(default=())
    advice: tuple[str, ...] = field(default=())
    spread_rule: str = "relative"
    spread_ratio: float = 1.0   # as the rule measures it
    separated: bool = False     # the candidate's slow tail beats the baseline's fast tail
    noise_rule: str = "ratio_ci"
    min_speedup: float = MIN_SPEEDUP
    ratio: RatioInterval | None = None  # the median paired speed-up and its interval (None when unpaired)
    device: str | None = None           # cpu, gpu or None (unknown): chooses the advice
    load: MachineLoad | None = None     # other processes' CPU use while measuring, when validate() measured it

    @property
    def kept(self) -> bool:
        return self.decision == KEPT

    @property
    def undecided(self) -> bool:
        return self.decision == UNDECIDED

    @property
    def speedup(self) -> float:
        """How many times better the candidate's mean is (>1 = better), in the problem's direction."""
        b, c = self.baseline.mean, self.candidate.mean
        num, den = (b, c) if self.problem_type == "min" else (c, b)
        return num / den if den != 0 else math.inf


def _as_array(samples: Sequence[float], what: str) -> np.ndarray:
    x = np.asarray(list(samples), dtype=float)
    if x.ndim != 1:
        raise ValueError(f"{what} must be a flat sequence of numbers, got shape {x.shape}")
    x = x[np.isfinite(x)]
    if len(x) < 2:
        raise ValueError(f"{what}: at least 2 finite measurements are needed for a t-test, got {len(x)}")
    return x


def _check_problem_type(problem_type: str) -> None:
    if problem_type not in ("min", "max"):
        raise ValueError(f"problem_type={problem_type!r} must be 'min' (lower is better, e.g. time) "
                         "or 'max' (higher is better, e.g. throughput)")


def welch_one_sided(baseline: Sequence[float], candidate: Sequence[float], problem_type: str = "min") -> WelchResult:
    """Welch's unequal-variance t-test of "the candidate improves on the baseline".

    t = (mean_c - mean_b) / sqrt(var_c/n_c + var_b/n_b) with the Welch-Satterthwaite degrees of
    freedom; the p-value is the tail in the direction of improvement (lower tail for "min")."""
    try:
        from scipy.stats import t as student_t  # scipy is heavy: only the ship rule needs it
    except ImportError as e:
        raise ImportError("the Welch t-test of compileiq.validate needs scipy: pip install scipy") from e

    _check_problem_type(problem_type)
    b, c = _as_array(baseline, "baseline samples"), _as_array(candidate, "candidate samples")
    nb, nc = len(b), len(c)
    vb, vc = b.var(ddof=1) / nb, c.var(ddof=1) / nc
    diff = float(c.mean() - b.mean())
    se2 = vb + vc
    if se2 == 0:  # both samples constant: the sign of the difference is certain
        improved = diff < 0 if problem_type == "min" else diff > 0
        t = -math.inf if diff < 0 else (math.inf if diff > 0 else 0.0)
        return WelchResult(t, float(nb + nc - 2), 0.0 if improved else 1.0)
    t = diff / math.sqrt(se2)
    df = se2 ** 2 / (vb ** 2 / (nb - 1) + vc ** 2 / (nc - 1))
    p = float(student_t.cdf(t, df) if problem_type == "min" else student_t.sf(t, df))
    return WelchResult(float(t), float(df), p)


def cohens_d(baseline: Sequence[float], candidate: Sequence[float], problem_type: str = "min") -> float:
    """Effect size, positive when the candidate is better; pooled sd = sqrt((var_b + var_c) / 2)."""
    _check_problem_type(problem_type)
    b, c = _as_array(baseline, "baseline samples"), _as_array(candidate, "candidate samples")
    gain = float(b.mean() - c.mean()) if problem_type == "min" else float(c.mean() - b.mean())
    pooled = math.sqrt((b.var(ddof=1) + c.var(ddof=1)) / 2)
    if pooled == 0:
        return 0.0 if gain == 0 else math.copysign(math.inf, gain)
    return gain / pooled


def spread_check(bs: Summary, cs: Summary, problem_type: str, rule: str, limit: float) -> tuple[bool, float, bool, str]:
    """(too wide, ratio, separated, sentence) for the spread rule ``rule`` (see SPREAD_RULES)."""
    if rule not in SPREAD_RULES:
        raise ValueError(f"spread_rule={rule!r} must be one of {', '.join(SPREAD_RULES)}")
    separated = cs.p95 < bs.p5 if problem_type == "min" else cs.p5 > bs.p95
    if rule == "absolute":
        ratio = cs.spread / bs.spread if bs.spread > 0 else (1.0 if cs.spread == 0 else math.inf)
        text = (f"absolute spread rule (NVIDIA's): the candidate's p5-p95 span is {cs.spread:.4g} against the "
                f"baseline's {bs.spread:.4g}, {ratio:.2f}x (limit {limit:.2f}x)")
        return ratio > limit, ratio, separated, text
    rel_b = bs.spread / abs(bs.mean) if bs.mean else math.inf
    rel_c = cs.spread / abs(cs.mean) if cs.mean else math.inf
    ratio = rel_c / rel_b if rel_b > 0 else (1.0 if rel_c == 0 else math.inf)
    tail, other = ("p95", "p5") if problem_type == "min" else ("p5", "p95")
    text = (f"relative spread rule: the candidate's p5-p95 span is {100 * rel_c:.1f}% of its mean against the "
            f"baseline's {100 * rel_b:.1f}%, {ratio:.2f}x (limit {limit:.2f}x), and its slow tail ({tail} "
            f"{getattr(cs, tail):.4g}) does not beat the baseline's fast tail ({other} {getattr(bs, other):.4g})")
    return ratio > limit and not separated, ratio, separated, text


def check_rules(noise_rule: str, min_speedup: float) -> None:
    if noise_rule not in NOISE_RULES:
        raise ValueError(f"noise_rule={noise_rule!r} must be one of {', '.join(NOISE_RULES)} (ratio_ci: the speed-up's "
                         "interval decides, the default; cv: NVIDIA's CV <= 10% gate)")
    if not (isinstance(min_speedup, (int, float)) and 0 <= min_speedup < 10):
        raise ValueError(f"min_speedup={min_speedup!r} must be a fraction >= 0, e.g. 0.02 for 2%")


def _interval_text(ri: RatioInterval, floor: float, conf: str) -> str:
    if not ri.formed:
        return (f"{ri.n} pairs are too few for a {conf} interval of the speed-up (at least {ri.needed} are needed): "
                "raise the trials")
    return (f"after {ri.n} pairs the speed-up's {conf} interval [{ri.low:.3f}, {ri.high:.3f}] (median "
            f"{ri.median:.3f}x) still contains the minimum {floor:.3f}x: these measurements cannot tell a win of "
            "that size from noise yet")


def welch_decide(baseline_samples: Sequence[float], candidate_samples: Sequence[float], problem_type: str = "min", *,
                 alpha: float = ALPHA, min_effect: float = MIN_EFFECT, max_spread_ratio: float = MAX_SPREAD_RATIO,
                 max_cv: float = MAX_CV, spread_rule: str = "relative", noise_rule: str = "ratio_ci",
                 min_speedup: float = MIN_SPEEDUP, looks: int = 1, device: str | None = None,
                 load: MachineLoad | None = None) -> Verdict:
    """Apply the ship rule to one candidate against the baseline.

    noise_rule="ratio_ci" (default): the samples are pairs by position (baseline_samples[i] was measured
    next to candidate_samples[i], as validate() measures them). KEPT when the (1 - alpha/looks) interval
    of the median paired speed-up lies above 1 + min_speedup, the mean is better and the spread passes
    ``spread_rule``; REJECTED:mean-not-better or REJECTED:below-min-speedup when the candidate is surely
    not that much better; UNDECIDED while the interval still holds 1 + min_speedup. ``looks`` is how many
    times validate() may look at growing samples (the error rate is split between them).

    noise_rule="cv": NVIDIA's rule. KEPT only when p < alpha, d > min_effect, the mean is better, the
    spread passes and neither side's CV exceeds max_cv (REJECTED:noisy first).

    Welch's p, Cohen's d and both CVs are computed and reported under either rule."""
    _check_problem_type(problem_type)
    check_rules(noise_rule, min_speedup)
    if not isinstance(looks, int) or looks < 1:
        raise ValueError(f"looks={looks!r} must be an integer >= 1 (how many times the samples are judged)")
    bs, cs = Summary.of(baseline_samples), Summary.of(candidate_samples)
    w = welch_one_sided(baseline_samples, candidate_samples, problem_type)
    d = cohens_d(baseline_samples, candidate_samples, problem_type)
    better = cs.mean < bs.mean if problem_type == "min" else cs.mean > bs.mean
    wide, ratio, separated, spread_detail = spread_check(bs, cs, problem_type, spread_rule, max_spread_ratio)
    floor = 1 + min_speedup
    confidence = 1 - alpha / looks
    conf = f"{100 * confidence:.4g}%"
    ri = None
    if noise_rule == "ratio_ci" or len(baseline_samples) == len(candidate_samples):
        try:
            ri = median_interval(pair_ratios(baseline_samples, candidate_samples, problem_type), confidence)
        except ValueError:
            if noise_rule == "ratio_ci":
                raise
    failed = {"mean-not-better": not better, "wider-spread": wide}
    if noise_rule == "cv":
        failed.update({"noisy": bs.cv > max_cv or cs.cv > max_cv, "not-significant": not w.p_value < alpha,
                       "small-effect": not d > min_effect})
    else:
        failed.update({"below-min-speedup": ri.formed and ri.high < floor,
                       "uncertain": not ri.formed or (ri.low <= floor <= ri.high)})
    reasons = tuple(r for r in REASONS if failed.get(r))
    if noise_rule == "ratio_ci" and "uncertain" in reasons and not failed["mean-not-better"] \
            and not failed["below-min-speedup"]:
        reasons = ("uncertain", *(r for r in reasons if r != "uncertain"))  # the decisive reason comes first
    values = dict(max_cv=max_cv, p=w.p_value, alpha=alpha, d=d, min_effect=min_effect, spread_detail=spread_detail,
                  pairs=ri.n if ri else 0, ratio=ri.median if ri else math.nan, conf=conf,
                  low=ri.low if ri else math.nan, high=ri.high if ri else math.nan, floor=floor,
                  min_speedup=min_speedup, uncertain_detail=_interval_text(ri, floor, conf) if ri else "")
    explanations = tuple(REASON_TEXT[r].format(**values) for r in reasons)
    # reasons[0] is the decisive one: "uncertain" leads only when nothing rejects for sure
    decision = KEPT if not reasons else (UNDECIDED if reasons[0] == "uncertain" else f"REJECTED:{reasons[0]}")
    # a sure rejection needs no noise fixes, even if its interval was still wide
    advised = reasons if decision == UNDECIDED else tuple(r for r in reasons if r != "uncertain")
    advice = advice_for(advised, device, load, noise_rule)
    return Verdict(decision, reasons, bs, cs, w.p_value, d, w.t, w.df, problem_type, explanations, advice,
                   spread_rule, ratio, separated, noise_rule, min_speedup, ri, device, load)
