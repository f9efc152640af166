"""The search-space DSL users write spaces in (NVIDIA-compatible names and arguments).

    import compileiq.search_spaces.base as ss
    space = {"unroll": ss.range(1, 8), "sched": ss.choice(["a", "b"]), "fast": ss.literal("-ffast-math", knockout_prob=0.5)}

Every function returns a parameter model (``compileiq.search_spaces.models``); nested dicts of them
form a space, and a list of spaces makes a mixed space. ``knockout_prob`` is the probability that
the key is absent from a candidate. Bools become ints and numpy scalars plain Python numbers, as in
NVIDIA's DSL, so that every value survives the results CSV's JSON.
"""

from __future__ import annotations

from ..space.params import _check_prob, _plain, make_choice, make_literal, make_log_sampling, make_range
from .models import ChoiceParamConfig, LiteralParamConfig, RangeParamConfig

_builtin_range = range


def _knock(knockout_prob, knockable_threshold):
    # knockable_threshold: the older spelling, the probability that the key is *kept*
    if knockable_threshold is not None:
        if knockout_prob is not None:
            raise TypeError("give knockout_prob or knockable_threshold (its older spelling), not both")
        return 1.0 - float(knockable_threshold)
    return knockout_prob


def _threshold(knockout_prob):
    p = _check_prob(knockout_prob, "knockout_prob")
    return None if p is None else 1.0 - p


def range(start, end, step=1, knockout_prob=None, seed_low=None, seed_high=None, *,  # noqa: A001
          knockable_threshold=None) -> RangeParamConfig:
    """Every value from ``start`` to ``end`` inclusive in steps of ``step`` (ints or floats).

    ``seed_low``/``seed_high`` bias the first generation towards that window (see
    SearchConfiguration.init_with_true_random_threshold)."""
    param = make_range(start, end, step, _knock(knockout_prob, knockable_threshold), seed_low, seed_high)
    return RangeParamConfig.wrap(param, low=param.start, high=param.end, step=param.step,
                                 seed_low=_plain(seed_low, "seed_low"), seed_high=_plain(seed_high, "seed_high"),
                                 knockout_threshold=_threshold(param.knockout_prob))


def choice(choice_list=None, knockout_prob=None, *, options=None, knockable_threshold=None) -> ChoiceParamConfig:
    """One of ``choice_list`` (str, int, float; bools become ints, numpy scalars Python numbers)."""
    if options is not None:
        if choice_list is not None:
            raise TypeError("give choice_list or options (its older spelling), not both")
        choice_list = options
    if choice_list is None:
        raise TypeError("choice() needs choice_list, e.g. choice([1, 2, 4])")
    param = make_choice(choice_list, _knock(knockout_prob, knockable_threshold))  # checks and converts the values
    return ChoiceParamConfig.wrap(param, vals=list(param.values), knockout_threshold=_threshold(param.knockout_prob))


def literal(const_value=None, knockout_prob=None, *, value=None, knockable_threshold=None) -> LiteralParamConfig:
    """A constant; with ``knockout_prob`` it becomes an on/off flag (present or absent)."""
    if value is not None:
        if const_value is not None:
            raise TypeError("give const_value or value, not both")
        const_value = value
    param = make_literal(const_value, _knock(knockout_prob, knockable_threshold))
    return LiteralParamConfig.wrap(param, value=param.values[0], knockout_threshold=_threshold(param.knockout_prob))


def log_sampling(start, end, total=10, knockout_prob=None, *, knockable_threshold=None) -> ChoiceParamConfig:
    """``total`` values spaced evenly on a log scale from ``start`` to ``end`` (integers when both ends are)."""
    param = make_log_sampling(start, end, total, _knock(knockout_prob, knockable_threshold))
    return ChoiceParamConfig.wrap(param, vals=list(param.values), knockout_threshold=_threshold(param.knockout_prob))


__all__ = ["range", "choice", "literal", "log_sampling"]
