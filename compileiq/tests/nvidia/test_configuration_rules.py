"""SearchConfiguration's rules beside NVIDIA 1.1's: weights, cull versus pool, survivors per
objective, the reference-direction count, and legacy ``.config`` files (suffix, malformed values)."""

import itertools
import math

import pytest
from pydantic import ValidationError

from compileiq import SearchConfiguration
from compileiq.configuration import MAX_POOL, MIN_POOL


# -- regressions: 1.1 refuses these, and so do we ------------------------------------------------------------
@pytest.mark.parametrize("kwargs, needle", [
    ({"num_objectives": 2, "objective_weights": [1.0]}, "must hold num_objectives=2 weights"),
    ({"num_objectives": 2, "objective_weights": [0.2, 0.3, 0.5]}, "must hold num_objectives=2 weights"),
    ({"num_objectives": 2, "objective_weights": [0.5, 0.6]}, "must sum to 1 \\(they sum to 1.1\\)"),
    ({"num_objectives": 3, "objective_weights": [0.1, 0.1, 0.1]}, "must sum to 1"),
    ({"pool_size": 10, "cull_size": 10}, "cull_size=10 must be smaller than pool_size=10"),
    ({"pool_size": 10, "cull_size": 12}, "cull_size=12 must be smaller than pool_size=10"),
])
def test_weights_and_cull_against_pool_are_refused(kwargs, needle):
    with pytest.raises(ValidationError, match=needle):
        SearchConfiguration(generations=2, **kwargs)
    SearchConfiguration(generations=2, num_objectives=3, objective_weights=[0.2, 0.3, 0.5])  # sums to 1 in floats


def nvidia_cull(pool: int, k: int) -> int | None:
    """1.1's documented derivation of cull_size for a given pool, or None where 1.1 refuses the pool:
    3/4 of the pool rounded down to even, capped so that 1 + 2k survive, and never under 2 parents."""
    least = 1 + 2 * k
    cull = max(2, min((3 * pool // 4) // 2 * 2, (pool - least) // 2 * 2))
    return cull if pool - cull >= least else None


def test_survivors_per_objective_match_nvidia_wherever_nvidia_accepts_the_pool():
    for k, pool in itertools.product(range(1, 21), range(MIN_POOL, 140)):
        want = nvidia_cull(pool, k)
        if want is None:
            continue
        c = SearchConfiguration(generations=1, num_objectives=k, pool_size=pool)
        assert (c.cull_size, c.survivors) == (want, pool - want), (k, pool)


@pytest.mark.parametrize("k", [3, 5])
def test_a_pool_with_room_for_the_survivors_only_is_ours_alone(k):
    # 1.1 always keeps 2 parents, so it refuses pool_size 2k+1 and 2k+2; we accept them with
    # cull_size=0 (NSGA-II, the engine for several objectives, selects by rank, not by cull_size)
    for pool in (2 * k + 1, 2 * k + 2):
        assert nvidia_cull(pool, k) is None
        c = SearchConfiguration(generations=1, num_objectives=k, pool_size=pool)
        assert c.cull_size == 0 and c.survivors == pool
    with pytest.raises(ValidationError, match=rf"too small for num_objectives={k}: need at least {2 * k + 1}"):
        SearchConfiguration(generations=1, num_objectives=k, pool_size=2 * k)
    assert SearchConfiguration(generations=1, num_objectives=2, pool_size=6).cull_size == 0  # the docs' quick runs


@pytest.mark.parametrize("k, pool, cull", [(1, 6, 4), (2, 10, 6), (3, 12, 6), (4, 16, 8)])
def test_an_explicit_cull_must_leave_one_plus_two_survivors_per_objective(k, pool, cull):
    with pytest.raises(ValidationError, match=rf"pool_size - cull_size must be >= 1 \+ 2\*num_objectives = {1 + 2 * k}"):
        SearchConfiguration(generations=1, num_objectives=k, pool_size=pool, cull_size=cull)
    ok = SearchConfiguration(generations=1, num_objectives=k, pool_size=pool, cull_size=cull - 2)
    assert ok.survivors == pool - cull + 2 >= 1 + 2 * k


def reference_directions(survivors: int, k: int) -> int:
    """How many NSGA-III reference directions 1.1 builds for ``survivors`` and ``k`` objectives, as its
    documentation describes them: the k axis directions, plus the largest simplex lattice with
    C(k + p - 1, p) points (p = 1, 2, ...) that fits in what the survivors leave after the axes and
    one more; a lattice that is only the axes again adds nothing."""
    axes, room = k, survivors - k - 1
    if room <= 0:
        return axes
    inner = 0
    for p in itertools.count(1):
        n = math.comb(k + p - 1, p)
        if n > room or p > survivors:
            break
        inner = n
    return axes if inner == axes else axes + inner


def test_the_reference_direction_rule_never_refuses_a_configuration_we_accept():
    # 1.1 refuses pool_size < its reference-direction count. Once the survivors rule holds that count is
    # below the number of survivors, so the check cannot fail; we state it here instead of repeating it.
    pools = [*range(MIN_POOL, 200), 256, 1000, MAX_POOL]
    for k, pool in itertools.product(range(1, 33), pools):
        try:
            c = SearchConfiguration(generations=1, num_objectives=k, pool_size=pool)
        except ValidationError:
            continue
        assert reference_directions(c.survivors, k) < c.survivors <= c.pool_size, (k, pool)
    assert [reference_directions(8, 1), reference_directions(8, 2), reference_directions(9, 3)] == [1, 7, 3]


# -- legacy .config files ---------------------------------------------------------------------------------
def test_from_legacy_reads_a_path_without_the_config_suffix(tmp_path):
    p = tmp_path / "search.cfg"  # 1.1 refuses any name not ending in .config; the contents decide here
    p.write_text("(generations . 3)\n(pool_size . 12)\n(seek_minimum . #f)\n")
    c = SearchConfiguration.from_legacy(p)
    assert (c.generations, c.pool_size, c.problem_type) == (3, 12, "max")
    assert SearchConfiguration.from_legacy(str(p)) == c


def test_from_legacy_on_a_missing_file_is_a_value_error_naming_it(tmp_path):
    with pytest.raises(ValueError, match="missing.config.*no such file"):
        SearchConfiguration.from_legacy(tmp_path / "missing.config")
    (tmp_path / "prose.config").write_text("generations = 3\n")
    with pytest.raises(ValueError, match="prose.config: no \\(key . value\\) pairs found"):
        SearchConfiguration.from_legacy(tmp_path / "prose.config")


@pytest.mark.parametrize("line, needle", [
    ("(generations . abc)", "generations='abc' must be an int >= 1"),
    ("(generations . 3)\n(mutate_rate . 0.2.5)", "mutate_rate='0.2.5' must be a number in \\(0, 1\\)"),
    ("(generations . 3)\n(num_objectives . 2)\n(objective_weights . ((0.5 abc)))", "objective_weights=.*non-negative"),
    ("(generations . 3)\n(pool_size . #t)", "pool_size=True must be an int"),
    ("(generations . 3)\n(seek_minimum . maybe)", "\\(seek_minimum . maybe\\) must be #t .*or #f"),
    ("(generations . 3)\n(qualitative . 3)", "\\(qualitative . 3\\) must be #t .*or #f"),
    ("(generations . 3)\n(pool_size . 12", "line 2: \\(pool_size . 12 is not closed"),
])
def test_from_legacy_names_a_malformed_value_and_the_file(tmp_path, line, needle):
    p = tmp_path / "main.config"
    p.write_text(line + "\n")
    with pytest.raises(ValueError, match=needle) as info:
        SearchConfiguration.from_legacy(p)
    assert "main.config" in str(info.value)


def test_from_legacy_keeps_a_semicolon_inside_a_quoted_value(tmp_path):
    from compileiq.types import InternalSearchConfiguration
    p = tmp_path / "main.config"
    p.write_text('; generated\n(generations . 2) ; two\n(dna_config . "a;b.config")\n')
    assert InternalSearchConfiguration.from_legacy(p).dna_config == "a;b.config"
