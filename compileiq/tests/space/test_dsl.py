import json
import random

import numpy as np
import pytest

import compileiq.search_spaces.base as ss
from compileiq.errors import DuplicateChoiceWarning, SearchSpaceError
from compileiq.space import SearchSpace


def test_range_includes_end_and_float_steps_are_exact():
    assert ss.range(0, 8, 2).values == (0, 2, 4, 6, 8)
    assert ss.range(1, 3).values == (1, 2, 3)
    assert ss.range(0.1, 0.3, 0.1).values == (0.1, 0.2, 0.3)
    assert ss.range(1.0, 20.0, 0.5).values[-1] == 20.0
    assert len(ss.range(1.0, 20.0, 0.5).values) == 39


@pytest.mark.parametrize("args, needle", [
    ((5, 5), "end must be greater"), ((0, 4, 0), "step must be positive"), ((0, 4, -1), "step must be positive"),
    ((0, float("inf")), "finite"), (("a", 3), "finite int or float"),
])
def test_range_rejects_bad_bounds_with_the_reason(args, needle):
    with pytest.raises(SearchSpaceError, match=needle):
        ss.range(*args)


def test_range_seed_window_must_lie_inside():
    assert ss.range(0, 10, seed_low=2, seed_high=4).seed_window == (2, 4)
    with pytest.raises(SearchSpaceError, match="seed window"):
        ss.range(0, 10, seed_low=8, seed_high=12)


def test_choice_normalises_bools_and_numpy_scalars_and_keeps_a_duplicate_once():
    assert ss.choice([True, False, np.int64(7), np.float32(0.5)]).values == (1, 0, 7, 0.5)
    with pytest.warns(DuplicateChoiceWarning, match=r"choice\(\[1, 2, 1\]\): the value 1 appears twice"):
        assert ss.choice([1, 2, 1]).values == (1, 2)
    with pytest.raises(SearchSpaceError, match="at least one"):
        ss.choice([])
    with pytest.raises(SearchSpaceError, match="list of values"):
        ss.choice("abc")


def test_log_sampling_and_literal():
    assert ss.log_sampling(1, 1024, 11).values == tuple(2**i for i in range(11))
    v = ss.log_sampling(0.001, 1.0, 4).values
    assert v == pytest.approx((0.001, 0.01, 0.1, 1.0))
    assert ss.literal("x").values == ("x",)
    assert ss.literal(const_value="c", knockable_threshold=0.25).knockout_prob == pytest.approx(0.75)
    with pytest.raises(SearchSpaceError, match="knockout_prob"):
        ss.literal("x", knockout_prob=1.5)
    with pytest.raises(SearchSpaceError, match="0 < start < end"):
        ss.log_sampling(0, 10)


def test_knocked_out_key_is_absent_and_frequency_follows_the_prior():
    space = SearchSpace({"a": ss.range(0, 3), "flag": ss.literal("-x", knockout_prob=0.3)})
    rng = random.Random(5)
    present = sum("flag" in space.decode(space.random_genotype(rng)) for _ in range(4000))
    assert abs(present / 4000 - 0.7) < 0.03


def test_nested_spaces_keep_key_order_and_mixed_spaces_give_lists():
    space = SearchSpace([{"x": ss.range(1, 2), "inner": {"y": ss.choice(["a", "b"])}, "z": ss.literal(3)},
                         {"w": ss.choice([0.5])}])
    out = space.decode(space.random_genotype(random.Random(1)))
    assert isinstance(out, list) and len(out) == 2
    assert list(out[0]) == ["x", "inner", "z"] and set(out[0]["inner"]) == {"y"}
    assert out[1] == {"w": 0.5}
    json.dumps(out)  # everything the objective gets survives the results CSV


def test_space_size_counts_knockout_as_an_extra_value_and_never_offers_the_baseline():
    space = SearchSpace({"a": ss.literal(1, knockout_prob=0.5), "b": ss.choice([1, 2], knockout_prob=0.5)})
    # (absent|1) x (absent|1|2) minus the all-absent candidate, which would equal BASELINE_CONFIG {}
    assert space.size == 2 * 3 - 1
    allc = space.enumerate(100)
    assert len(allc) == 5 and all(space.decode(c) != {} for c in allc)


def test_canonical_ignores_the_value_of_a_knocked_out_key():
    space = SearchSpace({"a": ss.range(0, 9, knockout_prob=0.5), "b": ss.range(0, 3)})
    assert space.canonical((7, 0, 2)) == space.canonical((3, 0, 2)) == (0, 0, 2)


@pytest.mark.parametrize("bad, needle", [
    ({"a": 3}, "not a search-space parameter"), ({1: ss.range(0, 2)}, "keys must be strings"),
    ({}, "empty"), ([], "at least one component"), (42, "not a search space"),
])
def test_bad_spaces_are_refused_with_what_to_do(bad, needle):
    with pytest.raises(SearchSpaceError, match=needle):
        SearchSpace(bad)
