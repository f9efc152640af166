"""The DSL's keywords and return types (compileiq.search_spaces.models), and the SearchSpaceProvider protocol."""

import numpy as np
import pytest

import compileiq.search_spaces.base as ss
from compileiq import Search, SearchConfiguration
from compileiq.errors import DuplicateChoiceWarning, SearchSpaceError
from compileiq.search_spaces.compilers import GccSearchSpace, LocalSearchSpaceBin, SearchSpaceProvider
from compileiq.search_spaces.models import ChoiceParamConfig, LiteralParamConfig, RangeParamConfig
from compileiq.worker import SequentialWorker


def test_the_dsl_returns_nvidias_models_with_their_attributes():
    r = ss.range(start=0, end=8, step=2, knockout_prob=0.25, seed_low=2, seed_high=4)
    assert isinstance(r, RangeParamConfig) and r.type == "range"
    assert (r.low, r.high, r.step, r.seed_low, r.seed_high, r.knockout_threshold) == (0, 8, 2, 2, 4, 0.75)
    assert r.values == (0, 2, 4, 6, 8)  # inclusive, as NVIDIA 1.1 documents
    assert r.model_dump(by_alias=True)["seed-low"] == 2
    c = ss.choice(choice_list=[True, False, np.int64(3), np.float32(0.5)])
    assert isinstance(c, ChoiceParamConfig) and c.type == "enum"
    assert c.vals == [1, 0, 3, 0.5] and [type(v) for v in c.vals] == [int, int, int, float]  # bools become ints
    lit = ss.literal(const_value="-O3", knockout_prob=0.5)
    assert isinstance(lit, LiteralParamConfig) and (lit.type, lit.value, lit.knockout_threshold) == ("literal", "-O3", 0.5)
    assert ss.literal(True).value == 1
    log = ss.log_sampling(start=1, end=64, total=7)
    assert isinstance(log, ChoiceParamConfig) and log.vals == [1, 2, 4, 8, 16, 32, 64]
    with pytest.raises(SearchSpaceError, match="end must be greater than start"):
        ss.range(5, 5)


def test_a_choice_listing_a_value_twice_is_searched_once_with_a_warning():
    # 1.1 accepts [True, False, 1] (bools become ints, so 1 is there twice): scripts written for it must run
    with pytest.warns(DuplicateChoiceWarning, match=r"choice\(\[True, False, 1\]\): the value 1 appears twice "
                                                    r"\(True and 1\); it is searched once"):
        c = ss.choice([True, False, 1])
    assert c.vals == [1, 0] and c.values == (1, 0)
    with pytest.warns(DuplicateChoiceWarning, match="the value 'a' appears twice.*the value 2 appears twice"):
        assert ss.choice(["a", 2, "a", 2.0, 3]).vals == ["a", 2, 3]
    with pytest.warns(DuplicateChoiceWarning):
        space = {"flag": ss.choice(choice_list=[True, False, 1]), "x": ss.range(0, 3)}
    seen = []
    Search(lambda p: seen.append(p) or p["x"] + p["flag"], space, SearchConfiguration(generations=2, pool_size=6, seed=1),
           worker_type=SequentialWorker, disable_progress_bar=True).start()
    assert len(seen) == 8 and {p["flag"] for p in seen} == {0, 1}  # the 8 distinct candidates, each once
    assert len({(p["flag"], p["x"]) for p in seen}) == 8


def test_models_built_directly_search_like_the_dsl():
    space = {"n": RangeParamConfig(low=0, high=10, step=2, knockout_threshold=0.5),
             "m": ChoiceParamConfig(vals=["a", "b"]), "k": LiteralParamConfig.model_validate({"type": "literal", "value": 3}),
             "s": RangeParamConfig.model_validate({"low": 0, "high": 4, "seed-low": 1, "seed-high": 2})}
    seen = []
    Search(lambda p: seen.append(p) or len(p), space, SearchConfiguration(generations=2, pool_size=6, seed=1),
           worker_type=SequentialWorker, disable_progress_bar=True).start()
    assert all(p["m"] in ("a", "b") and p["k"] == 3 and p.get("n", 0) in (0, 2, 4, 6, 8, 10) for p in seen)
    assert any("n" not in p for p in seen) and any("n" in p for p in seen)  # knockout_threshold 0.5: present half the time
    with pytest.raises(Exception, match="end must be greater than start"):
        RangeParamConfig(low=3, high=1)


class MirrorProvider:
    """A provider of our own that only implements NVIDIA's protocol: retrieve() -> the path of a space file."""

    def __init__(self, path):
        self.path = path
        self.calls = 0

    def retrieve(self) -> str:
        self.calls += 1
        return str(self.path)


def test_a_custom_search_space_provider(tmp_path):
    shipped = GccSearchSpace().retrieve()
    provider = MirrorProvider(shipped)
    assert isinstance(provider, SearchSpaceProvider) and isinstance(LocalSearchSpaceBin(shipped), SearchSpaceProvider)
    got = []
    Search(lambda cfg: got.append(cfg) or 1.0 + len(got), provider, SearchConfiguration(generations=1, pool_size=6, seed=3),
           worker_type=SequentialWorker, disable_progress_bar=True).start()
    assert provider.calls == 1 and len(got) == 6 and all(isinstance(g, str) and bytes.fromhex(g) for g in got)
    (tmp_path / "enc.bin").write_bytes(np.random.default_rng(0).bytes(4096))
    with pytest.raises(Exception, match="encrypted"):
        Search(lambda c: 1.0, MirrorProvider(tmp_path / "enc.bin"), SearchConfiguration(generations=1))
