"""The validation spread rule compares like with like, and a rejection names the rule that made it."""

import numpy as np
import pytest

from compileiq.validate import welch_decide
from compileiq.validate.stats import SPREAD_RULES


def sample(mean, rel_spread, n=100, seed=0):
    """n values around mean whose p5-p95 span is about rel_spread * mean."""
    return list(mean * (1 + rel_spread / 3.29 * np.random.default_rng(seed).standard_normal(n)))


def test_the_demos_case_twice_as_fast_same_jitter_in_microseconds_is_kept():
    base = sample(40.0, 0.04, seed=1)                 # 40 us, 1.6 us span
    cand = sample(19.0, 0.105, seed=2)                # 19 us, ~2.0 us span: wider in us, and relative to its mean
    nvidia = welch_decide(base, cand, "min", spread_rule="absolute")
    assert nvidia.decision == "REJECTED:wider-spread" and "absolute spread rule (NVIDIA's)" in nvidia.explanations[0]
    ours = welch_decide(base, cand, "min")
    assert ours.kept and ours.spread_rule == "relative" and ours.separated  # its p95 beats the baseline's p5
    assert ours.spread_ratio > 1.25  # wider even relative to its mean: kept because every typical run wins


def test_relative_rule_rejects_a_genuinely_less_predictable_candidate():
    base = sample(100.0, 0.04, seed=3)
    cand = sample(97.0, 0.12, seed=4)                 # 3% faster on average, three times the relative spread
    v = welch_decide(base, cand, "min")
    assert v.decision == "REJECTED:wider-spread" and not v.separated
    text = v.explanations[0]
    assert text.startswith("relative spread rule:") and "of its mean against the baseline's" in text
    assert "does not beat the baseline's fast tail" in text
    assert any("quiet machine" in a for a in v.advice) and any("--spread-rule absolute" in a for a in v.advice)


def test_like_with_like_for_max_problems_too():
    base = sample(1000.0, 0.04, seed=5)               # throughput: higher is better
    cand = sample(2100.0, 0.05, seed=6)               # 2.1x the throughput, 2.6x the span in its unit
    assert welch_decide(base, cand, "max", spread_rule="absolute").decision == "REJECTED:wider-spread"
    assert welch_decide(base, cand, "max").kept


def test_unknown_rule_is_refused():
    assert SPREAD_RULES == ("relative", "absolute")
    with pytest.raises(ValueError, match="spread_rule='median' must be one of relative, absolute"):
        welch_decide([1.0, 2.0, 3.0], [1.0, 2.0, 3.0], "min", spread_rule="median")


def test_cli_option_and_decision_log(tmp_path):
    from compileiq.validate.cli import main
    out = tmp_path / "v.csv"
    rc = main(["--baseline-cmd", "echo 10", "--candidate-cmd", "echo 9", "--trials", "5", "--warmup", "1",
               "--spread-rule", "absolute", "--output", str(out), "--quiet"])
    assert rc in (0, 1)
    import csv
    with out.open() as fh:
        row = next(csv.DictReader(fh))
    assert row["spread_rule"] == "absolute"
