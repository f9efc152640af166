import math

import numpy as np
import pytest
from scipy.stats import ttest_ind

from compileiq.validate import Summary, cohens_d, welch_decide, welch_one_sided


@pytest.mark.parametrize("problem_type, alternative", [("min", "less"), ("max", "greater")])
def test_welch_p_value_matches_scipy(problem_type, alternative):
    rng = np.random.default_rng(3)
    for _ in range(50):
        nb, nc = rng.integers(3, 80, 2)
        b = rng.normal(10, rng.uniform(0.1, 3), nb)
        c = rng.normal(rng.uniform(9, 11), rng.uniform(0.1, 3), nc)
        ref = ttest_ind(c, b, equal_var=False, alternative=alternative)
        got = welch_one_sided(b, c, problem_type)
        assert got.p_value == pytest.approx(ref.pvalue, rel=1e-9, abs=1e-15)
        assert got.t == pytest.approx(ref.statistic, rel=1e-12)
        assert got.df == pytest.approx(ref.df, rel=1e-9)


def test_cohens_d_uses_root_mean_of_the_variances_and_points_to_improvement():
    b, c = [10.0, 12.0, 14.0], [8.0, 9.0, 10.0]  # variances 4 and 1
    pooled = math.sqrt((4 + 1) / 2)
    assert cohens_d(b, c, "min") == pytest.approx(3 / pooled)
    assert cohens_d(b, c, "max") == pytest.approx(-3 / pooled)


def test_constant_samples_have_a_certain_answer():
    assert welch_one_sided([2.0, 2.0], [1.0, 1.0], "min").p_value == 0.0
    assert welch_one_sided([2.0, 2.0], [2.0, 2.0], "min").p_value == 1.0
    assert cohens_d([2.0, 2.0], [1.0, 1.0]) == math.inf
    assert cohens_d([2.0, 2.0], [2.0, 2.0]) == 0.0


def test_summary_statistics():
    s = Summary.of(np.arange(1.0, 101.0))
    assert (s.n, s.mean) == (100, 50.5)
    assert s.p5 == pytest.approx(np.percentile(np.arange(1.0, 101.0), 5))
    assert s.cv == pytest.approx(np.std(np.arange(1.0, 101.0), ddof=1) / 50.5)
    assert Summary.of([0.0, 0.0]).cv == 0.0


def ideal(mean, sd, n=100, seed=0):
    from scipy.stats import norm

    return np.random.default_rng(seed).permutation(mean + sd * norm.ppf((np.arange(n) + 0.5) / n))


def test_real_win_is_kept_in_both_directions():
    assert welch_decide(ideal(100, 1.5), ideal(95, 1.5), "min").decision == "KEPT"
    assert welch_decide(ideal(100, 1.5), ideal(105, 1.5), "max").decision == "KEPT"
    v = welch_decide(ideal(100, 1.5), ideal(95, 1.5), "min")
    assert v.kept and v.reasons == () and v.speedup == pytest.approx(100 / 95)


@pytest.mark.parametrize("rule, tiny", [("cv", "REJECTED:not-significant"), ("ratio_ci", "REJECTED:below-min-speedup")])
def test_each_false_positive_is_rejected_with_its_reason(rule, tiny):
    base = ideal(100, 1.5)
    lucky = ideal(100.5, 1.5, seed=1)
    lucky[np.argsort(lucky)[:3]] = 90.0
    assert welch_decide(base, lucky, noise_rule=rule).decision == "REJECTED:mean-not-better"
    assert welch_decide(base, ideal(99.8, 1.5, seed=2), noise_rule=rule).decision == tiny
    wide = welch_decide(base, ideal(97, 2.5, seed=3), noise_rule=rule)
    assert wide.decision == "REJECTED:wider-spread" and wide.reasons == ("wider-spread",)


def test_nvidia_cv_gate_keeps_its_name_message_and_gpu_advice():
    # noise_rule="cv" is NVIDIA's "CV <= 10%" gate, with the message and fixes the troubleshooting page promises
    noisy = welch_decide(ideal(100, 20), ideal(80, 16, seed=4), noise_rule="cv")
    assert noisy.decision == "REJECTED:noisy" and noisy.noise_rule == "cv"
    assert noisy.explanations[0] == "CV above 10% on the baseline or the candidate: too noisy to decide"
    assert any("lock-gpu-clocks" in a for a in noisy.advice) and any("CUDA_VISIBLE_DEVICES" in a for a in noisy.advice)


def test_small_effect_alone_rejects_a_significant_difference():
    # with many samples even a tiny shift is significant; d <= 0.2 still rejects it (NVIDIA's rule), and
    # the ratio rule rejects it for being surely below the 2% minimum
    base, cand = ideal(100, 1.5, n=5000), ideal(99.8, 1.5, n=5000, seed=1)
    v = welch_decide(base, cand, noise_rule="cv")
    assert v.p_value < 0.05 and v.decision == "REJECTED:small-effect"
    assert welch_decide(base, cand).decision == "REJECTED:below-min-speedup"


def test_thresholds_are_parameters():
    base, cand = ideal(100, 1.5, n=2000), ideal(99.8, 1.5, n=2000, seed=1)
    assert welch_decide(base, cand, noise_rule="cv").decision == "REJECTED:small-effect"
    assert welch_decide(base, cand, noise_rule="cv", min_effect=0.1).decision == "KEPT"
    assert welch_decide(base, cand).decision == "REJECTED:below-min-speedup"
    assert welch_decide(base, cand, min_speedup=0.0).decision == "KEPT"  # surely faster, by about 0.2%


@pytest.mark.parametrize("bad", [[1.0], [], [float("nan"), 1.0]])
def test_too_few_samples_is_a_clear_error(bad):
    with pytest.raises(ValueError, match="at least 2 finite measurements"):
        welch_decide([1.0, 2.0, 3.0], bad)


def test_unknown_problem_type():
    with pytest.raises(ValueError, match="'min'.*'max'"):
        welch_decide([1.0, 2.0], [1.0, 2.0], "fastest")
