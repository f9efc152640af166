"""``--self-test``: synthetic samples whose right decision is known, run through the ship rule,
plus an interleaved run with a decision log and a refusal, all in a temporary folder."""

from __future__ import annotations

import csv
import tempfile
from pathlib import Path
from typing import Callable

import numpy as np

from .record import COLUMNS
from .runner import NoScoreError, validate
from .stats import welch_decide, welch_one_sided

N = 100


def _normal(rng: np.random.Generator, mean: float, sd: float, n: int = N) -> np.ndarray:
    """An "ideal" normal sample (evenly spaced quantiles, shuffled): its mean, sd and p5-p95 span are
    exactly the ones asked for, so a case tests the rule and not the luck of a random draw (with 100
    random draws the p5-p95 span of two equal distributions differs by over 25% about 4% of the time)."""
    from scipy.stats import norm

    return rng.permutation(mean + sd * norm.ppf((np.arange(n) + 0.5) / n))


def _loaded(rng: np.random.Generator, n: int = N) -> np.ndarray:
    """Per-round slowdown of a shared machine: mostly quiet, with bursts of another job (CV ~20%)."""
    return 1 + np.where(rng.random(n) < 0.3, rng.uniform(0.2, 0.8, n), 0.0)


def _cases(rng: np.random.Generator) -> list[tuple[str, str, str, np.ndarray, np.ndarray, Callable[[str], bool]]]:
    base = _normal(rng, 100.0, 1.5)
    lucky = _normal(rng, 100.5, 1.5)
    lucky[np.argsort(lucky)[:3]] = 90.0  # the few fast runs that made the search pick it
    wide = _normal(rng, 97.0, 2.5)  # faster on average but far less predictable
    noisy_base, noisy_cand = rng.normal(100.0, 20.0, N), rng.normal(80.0, 16.0, N)
    load = _loaded(rng)  # both sides of a round share the machine's state
    busy_base, busy_win = 100.0 * load * _normal(rng, 1, 0.01), 70.0 * load * _normal(rng, 1, 0.01)
    busy_same = 100.0 * load * _normal(rng, 1, 0.01)
    close = base / 1.02 * _normal(rng, 1, 0.03)  # 2% faster, at the minimum, with 3% noise of its own
    not_better = ("REJECTED:mean-not-better", "REJECTED:below-min-speedup", "REJECTED:not-significant",
                  "REJECTED:small-effect")
    return [
        ("real win", "ratio_ci", "min", base, _normal(rng, 95.0, 1.5), lambda d: d == "KEPT"),
        ("real win (max: throughput)", "ratio_ci", "max", 1e4 / base, 1e4 / _normal(rng, 95.0, 1.5),
         lambda d: d == "KEPT"),
        ("no difference", "ratio_ci", "min", base, _normal(rng, 100.0, 1.5), lambda d: d in not_better),
        ("tiny effect", "ratio_ci", "min", base, _normal(rng, 99.8, 1.5), lambda d: d in not_better),
        ("lucky minimum", "ratio_ci", "min", base, lucky, lambda d: d == "REJECTED:mean-not-better"),
        ("wider spread", "ratio_ci", "min", base, wide, lambda d: d == "REJECTED:wider-spread"),
        ("busy machine, 1.43x win", "ratio_ci", "min", busy_base, busy_win, lambda d: d == "KEPT"),
        ("busy machine, A/A", "ratio_ci", "min", busy_base, busy_same, lambda d: d in not_better),
        ("2% win, 3% noise: unsure", "ratio_ci", "min", base, close, lambda d: d == "UNDECIDED"),
        ("busy machine, 1.43x (cv)", "cv", "min", busy_base, busy_win, lambda d: d == "REJECTED:noisy"),
        ("tiny effect (cv)", "cv", "min", base, _normal(rng, 99.8, 1.5), lambda d: d == "REJECTED:not-significant"),
        ("noisy (cv)", "cv", "min", noisy_base, noisy_cand, lambda d: d == "REJECTED:noisy"),
    ]


def _check_scipy(rng: np.random.Generator) -> str:
    from scipy.stats import ttest_ind

    worst = 0.0
    for _ in range(20):
        b, c = rng.normal(10, rng.uniform(0.5, 2), 30), rng.normal(9.8, rng.uniform(0.5, 2), 45)
        for pt, alt in (("min", "less"), ("max", "greater")):
            ref = ttest_ind(c, b, equal_var=False, alternative=alt).pvalue
            worst = max(worst, abs(welch_one_sided(b, c, pt).p_value - ref))
    if worst > 1e-9:
        raise AssertionError(f"Welch p-values differ from scipy.stats.ttest_ind by up to {worst:.3g}")
    return f"p-values match scipy.stats.ttest_ind(equal_var=False) (max |diff| {worst:.1e})"


def _check_run(tmp: Path, rng: np.random.Generator) -> str:
    draws = {"base": iter(rng.normal(2.0, 0.02, 200)), "fast": iter(rng.normal(1.0, 0.01, 200))}
    out = tmp / "decisions.csv"
    ds = validate(lambda: next(draws["base"]), {"fast": lambda: next(draws["fast"])}, trials=30, warmup=5,
                  output=out, input_shape="synthetic")
    with out.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    if [d.decision for d in ds] != ["KEPT"] or len(rows) != 1 or tuple(rows[0]) != COLUMNS:
        raise AssertionError(f"interleaved run: got {[d.decision for d in ds]} and {len(rows)} log row(s)")
    return f"interleaved run of callables: KEPT, one log row with {len(COLUMNS)} provenance columns"


def _check_refusal() -> str:
    try:
        validate(lambda: 1.0, [lambda: None], trials=10, warmup=0)
    except NoScoreError as e:
        if "no score in 6 of its first 6 trial runs" not in str(e):
            raise AssertionError(f"refusal message does not count the failures: {e}") from None
        return "refuses when more than half the trials produce no score"
    raise AssertionError("a candidate that never returns a number was not refused")


def run(echo: Callable[[str], None] = print) -> int:
    """Run every check, print one line each, return the number of failures."""
    rng = np.random.default_rng(20240611)
    failures = 0
    echo("CompileIQ validation self-test")
    for name, rule, pt, b, c, ok in _cases(rng):
        v = welch_decide(b, c, pt, noise_rule=rule)
        passed = ok(v.decision)
        failures += not passed
        ri = v.ratio
        paired = f"paired {ri.median:.3f}x [{ri.low:.3f}, {ri.high:.3f}]" if ri is not None and ri.formed else ""
        echo(f"  {'PASS' if passed else 'FAIL'}  {name:<28} {v.decision:<27} p={v.p_value:<9.3g} d={v.cohens_d:<6.3g} "
             f"CV {v.baseline.cv:.1%}/{v.candidate.cv:.1%} spread x{v.candidate.spread / v.baseline.spread:.2f} "
             f"{paired}")
    with tempfile.TemporaryDirectory(prefix="ciq-validate-selftest-") as tmp:
        for check in (lambda: _check_scipy(rng), lambda: _check_run(Path(tmp), rng), _check_refusal):
            try:
                echo(f"  PASS  {check()}")
            except Exception as e:  # a self-test reports every failed check instead of stopping at the first
                failures += 1
                echo(f"  FAIL  {type(e).__name__}: {e}")
    echo("all checks passed" if not failures else f"{failures} check(s) FAILED")
    return failures
