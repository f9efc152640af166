"""Search(...) arguments as 1.1 scripts pass them: a default loguru tracker, every worker_type
spelling, a Worker class or instance, a plain-dict search_config; a wrong worker_type fails when
the Search is built, as NVIDIA's does, not at start()."""

import sys

import cloudpickle
import pytest

import compileiq.search_spaces.base as ss
from compileiq import Search, SearchConfiguration
from compileiq.errors import ConfigurationError
from compileiq.tracker import LoguruTracker
from compileiq.types import LoguruTrackerConfig, WorkerTypes
from compileiq.utils.validation import Score
from compileiq.worker import (AsyncWorker, IsoMultiProcessWorker, ManualWorker, MultiProcessWorker, RayWorker,
                              SequentialWorker)

pytestmark = pytest.mark.timeout(60)  # a worker bug must fail the test, not hang the run

# pytest imports this file under a name worker processes cannot import: ship its functions by value
cloudpickle.register_pickle_by_value(sys.modules[__name__])

SPACE = {"x": ss.range(0, 20), "y": ss.choice([1, 2, 3])}
CFG = {"generations": 2, "pool_size": 6, "seed": 3}  # a plain dict, as 1.1 scripts often write it


def objective(p):
    return (p["x"] - 5) ** 2 + p["y"]


async def async_objective(p):
    return (p["x"] - 5) ** 2 + p["y"]


def test_loguru_tracker_config_with_its_defaults_logs_to_the_console(capfd):
    pytest.importorskip("loguru")
    cfg = LoguruTrackerConfig()  # sink=None, enqueue=True: 1.1 scripts write exactly this
    assert cfg.sink == [None]
    s = Search(objective, SPACE, CFG, tracker_config=cfg, worker_type="sequential", disable_progress_bar=True)
    assert isinstance(s.tracker, LoguruTracker)
    assert len(s.start()) == 12
    err = capfd.readouterr().err
    assert "search started: 2 generations x 6 candidates" in err and "generation 1: 6 candidates, 6 valid" in err
    assert "-> score" not in err  # the console gets no line per candidate unless log_candidates=True
    assert LoguruTrackerConfig(sink="run.log").sink == ["run.log"]


@pytest.mark.parametrize("bad", ["threads", "", 42, dict, print], ids=["name", "empty", "int", "class", "function"])
def test_a_wrong_worker_type_fails_when_the_search_is_built(bad):
    with pytest.raises(ConfigurationError) as info:
        Search(objective, SPACE, CFG, worker_type=bad)
    msg = str(info.value)
    assert f"worker_type={bad!r}" in msg
    assert "'native', 'isolated', 'async', 'ray', 'manual', 'sequential'" in msg  # the fix: the valid strings
    assert "Worker subclass" in msg


@pytest.mark.parametrize("name, cls", [("native", MultiProcessWorker), ("isolated", IsoMultiProcessWorker),
                                       ("async", AsyncWorker), ("ray", RayWorker), ("manual", ManualWorker),
                                       ("sequential", SequentialWorker)])
def test_every_worker_type_name_selects_its_worker(name, cls):
    assert WorkerTypes(name).worker_type() is cls
    for spelling in (name, name.upper(), WorkerTypes(name)):
        Search(objective, SPACE, CFG, worker_type=spelling)  # builds; nothing starts yet
    assert WorkerTypes.DEFAULT is WorkerTypes.NATIVE


@pytest.mark.parametrize("name", ["native", "isolated", "async", "sequential"])
def test_every_running_worker_type_name_runs_a_search(name):
    fn = async_objective if name == "async" else objective
    kw = {"num_workers": 2} if name != "sequential" else {}
    res = Search(fn, SPACE, SearchConfiguration(**CFG), worker_type=name, disable_progress_bar=True).start(**kw)
    assert len(res) == 12 and res.get_best_result()["params"]["x"] in range(0, 21)


def test_manual_worker_type_is_driven_by_ask_and_tell():
    s = Search(objective, SPACE, CFG, worker_type="manual")
    for _ in range(2):
        s.tell([Score(score=objective(c.params), param_id=c.param_id, num_objectives=1) for c in s.ask()])
    assert len(s.result) == 12
    with pytest.raises(ConfigurationError, match="ask\\(\\) and tell\\(\\)"):
        s.start()


def test_a_worker_class_or_instance_passed_directly():
    assert len(Search(objective, SPACE, CFG, worker_type=SequentialWorker, disable_progress_bar=True).start()) == 12
    mine = SequentialWorker.create(None, False)
    assert len(Search(objective, SPACE, CFG, worker_type=mine, disable_progress_bar=True).start()) == 12


def test_a_plain_dict_search_config_is_the_configuration():
    s = Search(objective, SPACE, {"generations": 3, "num_objectives": 1, "problem_type": "max"})
    assert isinstance(s.search_config, SearchConfiguration)
    assert (s.search_config.generations, s.search_config.pool_size, s.search_config.problem_type) == (3, 32, "max")
    with pytest.raises(ValueError, match="unknown field.*popsize"):
        Search(objective, SPACE, {"generations": 3, "popsize": 8})
