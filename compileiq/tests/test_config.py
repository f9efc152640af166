import pytest
from pydantic import ValidationError

from compileiq import SearchConfiguration
from compileiq.errors import ConfigurationError
from compileiq.types import ProblemType


def test_defaults_and_derived_sizes():
    c = SearchConfiguration(generations=3)
    assert (c.problem_type, c.normalize, c.num_objectives, c.pool_size, c.mutate_rate) == ("min", False, 1, 32, 0.25)
    assert c.cull_size == 24 and c.survivors == 8
    # the one pool rule (the seed's): max(2 * num_objectives + 1, 32)
    assert SearchConfiguration(generations=1, num_objectives=15).pool_size == 32
    big = SearchConfiguration(generations=1, num_objectives=20)
    assert big.pool_size == 41 and big.survivors >= 41 - big.cull_size >= 41 - 41
    c = SearchConfiguration(generations=3, pool_size=12, mutate_rate=0.5, problem_type=ProblemType.MAX)
    assert c.problem_type == "max" and c.cull_size % 2 == 0 and c.pool_size - c.cull_size >= 3


@pytest.mark.parametrize("kwargs, field", [
    ({}, "generations"), ({"generations": 0}, "generations"), ({"generations": 2, "problem_type": "best"}, "problem_type"),
    ({"generations": 2, "normalize": 1}, "normalize"), ({"generations": 2, "num_objectives": 0}, "num_objectives"),
    ({"generations": 2, "pool_size": 5}, "pool_size"), ({"generations": 2, "num_objectives": 4, "pool_size": 8}, "pool_size"),
    ({"generations": 2, "pool_size": 10, "cull_size": 3}, "cull_size"),
    ({"generations": 2, "pool_size": 10, "cull_size": 10}, "cull_size"),
    ({"generations": 2, "pool_size": 10, "cull_size": 8}, "cull_size"),
    ({"generations": 2, "mutate_rate": 0}, "mutate_rate"), ({"generations": 2, "mutate_rate": 1.0}, "mutate_rate"),
    ({"generations": 2, "num_objectives": 2, "objective_weights": (1.0,)}, "objective_weights"),
    ({"generations": 2, "num_objectives": 2, "objective_weights": (0.5, 0.6)}, "objective_weights"),
    ({"generations": 2, "init_with_true_random_threshold": 1.5}, "init_with_true_random_threshold"),
    ({"generations": 2, "seed": -1}, "seed"), ({"generations": True}, "generations"),
])
def test_every_constraint_names_its_field(kwargs, field):
    with pytest.raises(ValidationError, match=rf"SearchConfiguration\.{field}"):
        SearchConfiguration(**kwargs)


def test_from_dict_rejects_unknown_fields():
    with pytest.raises(ValidationError, match="unknown field.*pool"):
        SearchConfiguration.from_dict({"generations": 2, "pool": 4})
    assert SearchConfiguration.from_dict({"generations": 2, "seed": 3}).seed == 3


def test_legacy_config_file(tmp_path):
    from compileiq._legacy_config import read_legacy_config
    p = tmp_path / "main.config"
    p.write_text("((generations . 4)\n (pool_size . 12)\n (seek_minimum . #f)\n (qualitative . #t)\n (mutate_rate . 0.3))\n")
    c = read_legacy_config(p)
    assert (c.generations, c.pool_size, c.problem_type, c.normalize, c.mutate_rate) == (4, 12, "max", False, 0.3)
    p.write_text("((generations . 0))")
    with pytest.raises(ValidationError, match="main.config(.|\n)*generations"):
        read_legacy_config(p)
    with pytest.raises(ConfigurationError, match="no such file"):
        read_legacy_config(tmp_path / "missing.config")
