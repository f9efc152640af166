"""The search-space DSL users write spaces in (NVIDIA-compatible names and arguments).

    import compileiq.search_spaces.base as ss
    space = {"unroll": ss.range(1, 8), "sched": ss.choice(["a", "b"]), "fast": ss.literal("-ffast-math", knockout_prob=0.5)}

Every function returns a parameter object; nested dicts of them form a space, and a list of spaces
makes a mixed space. ``knockout_prob`` is the probability that the key is absent from a candidate.
"""

from __future__ import annotations

from ..space.params import (ChoiceParam, LiteralParam, RangeParam, make_choice, make_literal,
                            make_log_sampling, make_range)

_builtin_range = range


def _knock(knockout_prob, knockable_threshold):
    # knockable_threshold: the older spelling, the probability that the key is *kept*
    if knockable_threshold is not None:
        if knockout_prob is not None:
            raise TypeError("give knockout_prob or knockable_threshold (its older spelling), not both")
        return 1.0 - float(knockable_threshold)
    return knockout_prob


def range(start, end, step=1, knockout_prob=None, seed_low=None, seed_high=None, *, knockable_threshold=None) -> RangeParam:  # noqa: A001
    """Every value from ``start`` to ``end`` inclusive in steps of ``step`` (ints or floats).

    ``seed_low``/``seed_high`` bias the first generation towards that window (see
    SearchConfiguration.init_with_true_random_threshold)."""
    return make_range(start, end, step, _knock(knockout_prob, knockable_threshold), seed_low, seed_high)


def choice(options, knockout_prob=None, *, knockable_threshold=None) -> ChoiceParam:
    """One of ``options`` (str, int, float; bools become ints)."""
    return make_choice(options, _knock(knockout_prob, knockable_threshold))


def literal(value=None, knockout_prob=None, *, const_value=None, knockable_threshold=None) -> LiteralParam:
    """A constant; with ``knockout_prob`` it becomes an on/off flag (present or absent)."""
    if const_value is not None:
        if value is not None:
            raise TypeError("give value or const_value (its older spelling), not both")
        value = const_value
    return make_literal(value, _knock(knockout_prob, knockable_threshold))


def log_sampling(start, end, total=10, knockout_prob=None, *, knockable_threshold=None) -> ChoiceParam:
    """``total`` values spaced evenly on a log scale from ``start`` to ``end`` (integers when both ends are)."""
    return make_log_sampling(start, end, total, _knock(knockout_prob, knockable_threshold))


__all__ = ["range", "choice", "literal", "log_sampling"]
