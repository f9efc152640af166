"""noise_rule="ratio_ci": the interval of the paired speed-up decides KEPT / REJECTED / UNDECIDED, and
validate() measures more pairs while a candidate is undecided, up to max_trials."""

import itertools
import math

import numpy as np
import pytest
from scipy.stats import binom

from compileiq.validate import validate, welch_decide
from compileiq.validate.ratio import median_interval, pair_ratios, pairs_needed


def brute_interval(r, confidence):
    """The textbook construction, by enumeration: the widest rank l whose two tails stay within 1 - confidence."""
    r, n = sorted(r), len(r)
    ls = [l for l in range(1, n // 2 + 1) if 2 * binom.cdf(l - 1, n, 0.5) <= 1 - confidence + 1e-12]
    return (r[max(ls) - 1], r[n - max(ls)]) if ls else None


@pytest.mark.parametrize("n", [5, 6, 7, 8, 13, 30, 61, 100, 240])
@pytest.mark.parametrize("confidence", [0.95, 0.9875])
def test_interval_is_the_order_statistic_interval_of_the_median(n, confidence):
    r = np.random.default_rng(n).lognormal(0, 0.2, n)
    got, want = median_interval(r, confidence), brute_interval(r, confidence)
    assert got.n == n and got.median == pytest.approx(float(np.median(r)))
    if want is None:
        assert not got.formed and n < got.needed
    else:
        assert (got.low, got.high) == want and n >= got.needed


def test_pairs_needed():
    assert pairs_needed(0.95) == 6 and pairs_needed(0.9875) == 8


def test_interval_covers_the_true_median_at_least_as_often_as_promised():
    # Cauchy ratios (no mean, no variance): the interval needs no assumption about their shape
    rng = np.random.default_rng(7)
    misses = 0
    for _ in range(2000):
        iv = median_interval(1.0 + 0.1 * rng.standard_cauchy(30), 0.95)
        misses += not (iv.low <= 1.0 <= iv.high)
    assert misses / 2000 <= 0.05


def test_pair_ratios_follow_the_direction_and_refuse_what_is_not_a_pair():
    assert list(pair_ratios([2.0, 4.0], [1.0, 2.0], "min")) == [2.0, 2.0]
    assert list(pair_ratios([2.0, 4.0], [1.0, 2.0], "max")) == [0.5, 0.5]
    with pytest.raises(ValueError, match="as pairs.*noise_rule='cv'"):
        pair_ratios([1.0, 2.0, 3.0], [1.0, 2.0], "min")
    with pytest.raises(ValueError, match="positive measurements.*noise_rule='cv'"):
        pair_ratios([1.0, 0.0], [1.0, 2.0], "min")


def loaded_pairs(speedup, n, seed, cv=0.25):
    """Pairs from a shared machine: each round's slowdown hits both sides (bursts of another job),
    and each run has 1% noise of its own. Each side's CV is far above 10%."""
    rng = np.random.default_rng(seed)
    load = 1 + np.where(rng.random(n) < 0.35, rng.uniform(0.3, 2 * cv * 3, n), 0.0)
    base = 65.4 * load * rng.normal(1, 0.01, n)
    cand = 65.4 / speedup * load * rng.normal(1, 0.01, n)
    return base, cand


def test_a_big_win_on_a_loaded_machine_is_kept_where_nvidias_cv_gate_calls_it_noisy():
    # the case: 2.5x faster, p ~ 1e-38, yet CV > 10% on each side
    base, cand = loaded_pairs(2.5, 60, seed=1)
    v = welch_decide(base, cand)
    assert v.baseline.cv > 0.10 and v.candidate.cv > 0.10
    assert v.kept and v.noise_rule == "ratio_ci" and v.reasons == () and v.advice == ()
    assert v.ratio.low > 2.4 and v.ratio.high < 2.6
    nvidia = welch_decide(base, cand, noise_rule="cv")
    assert nvidia.decision == "REJECTED:noisy" and nvidia.p_value < 1e-10


def test_an_a_a_comparison_on_a_loaded_machine_is_almost_never_kept():
    kept = sum(welch_decide(*loaded_pairs(1.0, 60, seed=s)).kept for s in range(300))
    assert kept == 0  # kept needs the interval's lower bound above 1.02: same code is never 2% faster


def test_outcomes_and_their_reasons():
    base, slower = loaded_pairs(0.9, 60, seed=2)
    v = welch_decide(base, slower)
    assert v.decision == "REJECTED:mean-not-better" and "below-min-speedup" in v.reasons
    base, tiny = loaded_pairs(1.005, 200, seed=3)
    v = welch_decide(base, tiny)
    assert v.decision == "REJECTED:below-min-speedup" and v.reasons == ("below-min-speedup",)
    assert "lies below the minimum of 1.020x (min_speedup=0.02)" in v.explanations[0]
    assert not v.advice  # a sure answer needs no fixing
    rng = np.random.default_rng(4)
    base = rng.normal(100, 1, 60)
    close = base / 1.02 * rng.normal(1, 0.03, 60)
    v = welch_decide(base, close)
    assert v.decision == "UNDECIDED" and v.undecided and not v.kept and v.reasons[0] == "uncertain"
    assert "still contains the minimum 1.020x" in v.explanations[0] and v.advice


def test_too_few_pairs_is_undecided_and_says_how_many_it_takes():
    v = welch_decide([2.0, 2.1, 2.0, 2.1, 2.0], [1.0, 1.05, 1.0, 1.05, 1.0])
    assert v.decision == "UNDECIDED" and "5 pairs are too few for a 95% interval" in v.explanations[0]
    assert "at least 6" in v.explanations[0]


def test_min_speedup_and_looks_are_parameters():
    base, cand = loaded_pairs(1.05, 100, seed=5)
    assert welch_decide(base, cand).kept
    assert welch_decide(base, cand, min_speedup=0.10).decision == "REJECTED:below-min-speedup"
    narrow, wide = welch_decide(base, cand).ratio, welch_decide(base, cand, looks=4).ratio
    assert wide.confidence == 1 - 0.05 / 4 and wide.low <= narrow.low and wide.high >= narrow.high


@pytest.mark.parametrize("kwargs, message", [
    (dict(noise_rule="median"), "noise_rule='median' must be one of ratio_ci, cv"),
    (dict(min_speedup=-0.1), "min_speedup=-0.1 must be a fraction >= 0"),
    (dict(looks=0), "looks=0 must be an integer >= 1"),
])
def test_bad_rule_options_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        welch_decide([1.0, 2.0, 3.0], [1.0, 2.0, 3.0], **kwargs)


def counting(values):
    it = itertools.cycle(values)
    calls = []

    def measure():
        calls.append(1)
        return next(it)
    measure.calls = calls
    return measure


def test_undecided_candidates_get_more_pairs_up_to_max_trials_and_decided_ones_stop():
    rng = np.random.default_rng(6)
    base = counting(rng.normal(100, 1, 997).tolist())
    win = counting((rng.normal(100, 1, 997) / 1.5).tolist())
    close = counting((rng.normal(100, 1, 997) / 1.02).tolist())  # exactly at the minimum: never decided
    ds = validate(base, {"win": win, "close": close}, trials=20, warmup=2, max_trials=70)
    by = {d.name: d for d in ds}
    assert by["win"].kept and by["win"].verdict.ratio.n == 20 and len(win.calls) == 22
    assert by["close"].undecided and by["close"].verdict.ratio.n == 70 and len(close.calls) == 72
    assert len(base.calls) == 72  # the baseline is measured beside every pair
    assert by["close"].verdict.ratio.confidence == pytest.approx(1 - 0.05 / 4)  # looks at 20, 40, 60, 70 pairs
    assert "max_trials" in " ".join(by["close"].verdict.advice)


def test_nvidias_rule_measures_exactly_trials_pairs():
    base, close = counting([100.0, 101.0, 99.0]), counting([98.0, 99.0, 97.0])
    d = validate(base, [close], trials=12, warmup=0, noise_rule="cv", max_trials=48)[0]
    assert d.verdict.noise_rule == "cv" and len(close.calls) == 12


def test_pairs_skip_rounds_where_a_side_had_no_score():
    base = counting([10.0, 10.2, 9.8, 10.1])
    flaky = counting([5.0, None, 5.1, 4.9, 5.0, None])
    d = validate(base, [flaky], trials=24, warmup=0)[0]
    assert d.kept and len(d.baseline_samples) == len(d.candidate_samples) == 16  # 8 of 24 runs gave no score
    assert d.verdict.ratio.n == 16 and math.isclose(d.verdict.ratio.median, 2.0, rel_tol=0.05)


@pytest.mark.parametrize("kwargs, message", [
    (dict(max_trials=10), "max_trials=10 must be an integer >= trials \\(20\\)"),
    (dict(noise_rule="mad"), "noise_rule='mad' must be one of ratio_ci, cv"),
    (dict(min_speedup=-1), "min_speedup=-1 must be a fraction >= 0"),
    (dict(device="tpu"), "device='tpu' must be 'cpu', 'gpu' or None"),
])
def test_validate_refuses_bad_options_before_measuring(kwargs, message):
    calls = counting([1.0])
    with pytest.raises(ValueError, match=message):
        validate(calls, [calls], trials=20, warmup=0, **kwargs)
    assert calls.calls == []
