"""Validation: re-measure search winners against the baseline and keep only real wins.

>>> from compileiq.validate import validate, welch_decide, validate_result
>>> decisions = validate("./bench -O2", ["./bench -O3"], score_regex=r"time: ([0-9.]+)", trials=100, warmup=50)

See docs/validation.md for the ship rule and the decision log's columns.
"""

from .measure import CallableMeasure, CommandMeasure, NoScore, parse_score
from .runner import Candidate, Decision, NoScoreError, measure_interleaved, pick_candidates, validate, validate_result
from .stats import KEPT, NOISE_RULES, REASONS, UNDECIDED, Summary, Verdict, cohens_d, welch_decide, welch_one_sided

__all__ = ["validate", "validate_result", "welch_decide", "welch_one_sided", "cohens_d", "Decision", "Verdict",
           "Summary", "Candidate", "NoScoreError", "NoScore", "CommandMeasure", "CallableMeasure", "parse_score",
           "measure_interleaved", "pick_candidates", "KEPT", "UNDECIDED", "REASONS", "NOISE_RULES"]
