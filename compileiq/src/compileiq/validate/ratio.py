"""The speed-up's own uncertainty: an exact interval for the median of the paired ratios.

Each interleaved round measures the baseline and the candidate back to back, so the ratio of the
two runs cancels what they shared (another job's burst, a clock step, a slow phase of the machine)
where each side's raw spread keeps all of it. The median of n independent ratios has a
distribution-free interval from order statistics: the number of ratios below the true median is
Binomial(n, 1/2), so the l-th smallest and the l-th largest ratio enclose it with probability at
least 1 - 2 P(B <= l - 1), whatever the ratios' distribution. No resampling and no seed: the same
pairs always give the same interval.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np


@dataclass(frozen=True)
class RatioInterval:
    """Median paired ratio (>1 = the candidate is better) with its interval; low/high are NaN when
    ``n`` pairs are too few for the confidence asked (``needed`` says how many it takes)."""

    n: int
    median: float
    low: float
    high: float
    confidence: float
    needed: int

    @property
    def formed(self) -> bool:
        return not (math.isnan(self.low) or math.isnan(self.high))


def pair_ratios(baseline: Sequence[float], candidate: Sequence[float], problem_type: str = "min") -> np.ndarray:
    """baseline/candidate per pair for "min" (a time), candidate/baseline for "max" (a throughput)."""
    b, c = np.asarray(baseline, dtype=float), np.asarray(candidate, dtype=float)
    if b.shape != c.shape or b.ndim != 1:
        raise ValueError(f"the ratio rule needs the samples as pairs, measured round by round: got {len(b)} baseline "
                         f"and {len(c)} candidate values. validate() pairs them itself; for unpaired samples use "
                         "noise_rule='cv'")
    keep = np.isfinite(b) & np.isfinite(c)
    b, c = b[keep], c[keep]
    if np.any(b <= 0) or np.any(c <= 0):
        raise ValueError("the ratio rule needs positive measurements (times, throughputs): a pair holds a value <= 0. "
                         "Return a positive number per run, or use noise_rule='cv' for scores that can be 0 or negative")
    return b / c if problem_type == "min" else c / b


def _lower_rank(n: int, tail: float) -> int:
    """The largest l with P(Binomial(n, 1/2) <= l - 1) <= tail; 0 when even l = 1 is too wide a bet."""
    from scipy.stats import binom

    cdf = binom.cdf(np.arange(n + 1), n, 0.5)
    return int(np.searchsorted(cdf, tail * (1 + 1e-12), side="right"))


def pairs_needed(confidence: float) -> int:
    """The fewest pairs whose extreme ratios form an interval at ``confidence``: 2 * 0.5**n <= 1 - confidence."""
    return max(1, math.ceil(math.log2(2 / (1 - confidence)) - 1e-12))


def median_interval(ratios: Sequence[float], confidence: float = 0.95) -> RatioInterval:
    """The median of ``ratios`` and its two-sided ``confidence`` order-statistic interval."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence={confidence!r} must be between 0 and 1, e.g. 0.95")
    r = np.sort(np.asarray(ratios, dtype=float))
    n = len(r)
    med = float(np.median(r)) if n else math.nan
    needed = pairs_needed(confidence)
    l = _lower_rank(n, (1 - confidence) / 2) if n else 0
    if l < 1:
        return RatioInterval(n, med, math.nan, math.nan, confidence, needed)
    return RatioInterval(n, med, float(r[l - 1]), float(r[n - l]), confidence, needed)
