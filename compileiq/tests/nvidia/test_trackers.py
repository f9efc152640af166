"""Trackers with the real libraries: loguru sinks, and an MLflow sqlite tracking store in a temporary folder."""

import json
import sys

import pytest

import compileiq.search_spaces.base as ss
from compileiq import Search, SearchConfiguration
from compileiq.tracker import (BaseTracker, DisabledTracker, LoguruTracker, MLflowTracker, TrackerWarning,
                               make_tracker)
from compileiq.types import LoguruTrackerConfig, MLflowTrackerConfig, TrackerTypes
from compileiq.worker import SequentialWorker

SPACE = {"x": ss.range(0, 20), "y": ss.choice([1, 2, 3])}
CFG = SearchConfiguration(generations=2, pool_size=6, seed=4)


def objective(p):
    return (p["x"] - 5) ** 2 + p["y"]


def test_no_tracker_by_default():
    s = Search(objective, SPACE, CFG)
    assert isinstance(s.tracker, DisabledTracker) and TrackerTypes.DEFAULT is TrackerTypes.DISABLED


def test_loguru_file_sink_gets_every_candidate_the_console_only_generations(tmp_path, capfd):
    logger = pytest.importorskip("loguru").logger
    mine = logger.add(tmp_path / "user.log")  # a sink of the user's own: it must survive the search
    log = tmp_path / "tracker.log"
    cfg = LoguruTrackerConfig(sink=[str(log), sys.stderr], level="DEBUG", enqueue=False)
    Search(objective, SPACE, CFG, tracker_config=cfg, worker_type=SequentialWorker, disable_progress_bar=True).start()
    text = log.read_text()
    assert text.count("-> score") == 12 and "generation 0: 6 candidates, 6 valid" in text
    assert "search started: 2 generations x 6 candidates" in text and "search ended: 12 candidates evaluated" in text
    err = capfd.readouterr().err
    assert "generation 1: 6 candidates" in err and "-> score" not in err  # no line per candidate on the console
    logger.info("after the search")
    logger.remove(mine)
    assert "after the search" in (tmp_path / "user.log").read_text()
    assert "after the search" not in log.read_text()  # our sinks are gone, and only ours
    verbose = LoguruTrackerConfig(sink=sys.stderr, log_candidates=True, enqueue=False)
    Search(objective, SPACE, CFG, tracker_config=verbose, worker_type=SequentialWorker, disable_progress_bar=True).start()
    assert capfd.readouterr().err.count("-> score") == 12


# MLflow's own store code trips SQLAlchemy 2.1's deprecation of `noload`: theirs to fix, not a finding here
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_mlflow_sqlite_store_holds_the_run(tmp_path, monkeypatch):
    pytest.importorskip("mlflow")
    monkeypatch.chdir(tmp_path)  # MLflow puts run artifacts in ./mlruns: never in the source tree
    from mlflow.tracking import MlflowClient
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    cfg = MLflowTrackerConfig(tracking_uri=uri, experiment_name="ciq-test", run_name="r1", description="unit test",
                              score_names=["latency"])
    s = Search(objective, SPACE, CFG, tracker_config=cfg, worker_type=SequentialWorker, disable_progress_bar=True)
    assert isinstance(s.tracker, MLflowTracker)
    res = s.start()
    client = MlflowClient(tracking_uri=uri)
    run = client.search_runs([client.get_experiment_by_name("ciq-test").experiment_id])[0]
    assert run.info.status == "FINISHED" and run.info.run_name == "r1"
    assert run.data.params["pool_size"] == "6" and run.data.tags["mlflow.note.content"] == "unit test"
    history = client.get_metric_history(run.info.run_id, "latency")
    assert sorted((m.step, m.value) for m in history) == sorted(
        (json.loads(m)["param_id"], v) for m, v in zip(res.df_results["metadata"], res.df_results["score_1"]))
    best = client.get_metric_history(run.info.run_id, "best_latency")
    assert [m.step for m in best] == [0, 1]
    assert [m.value for m in best] == [min(res.df_results["score_1"][:6]), min(res.df_results["score_1"][6:])]
    assert [m.value for m in client.get_metric_history(run.info.run_id, "valid")] == [6.0, 6.0]
    arts = {a.path for a in client.list_artifacts(run.info.run_id, "candidates")}
    assert arts == {"candidates/generation_0000.json", "candidates/generation_0001.json"}


class Broken(BaseTracker):
    def search_starts(self, **kw): pass
    def search_ends(self, **kw): pass
    def generation_starts(self, generation_number, **kw): pass
    def generation_ends(self, generation_number, **kw): raise RuntimeError("disk full")
    def pre_objective(self, config, **kw): pass
    def post_objective(self, scores, **kw): pass


def test_a_failing_tracker_warns_once_and_the_search_goes_on():
    from compileiq.types import TrackerConfig
    tracker = Broken(TrackerConfig(type=TrackerTypes.LOGURU))
    with pytest.warns(TrackerWarning, match="Broken.generation_ends failed \\(RuntimeError: disk full\\)") as rec:
        res = Search(objective, SPACE, CFG, tracker_config=tracker, worker_type=SequentialWorker,
                     disable_progress_bar=True).start()
    assert len(res) == 12 and len([w for w in rec if w.category is TrackerWarning]) == 1
    with pytest.raises(Exception, match="must be a TrackerConfig"):
        make_tracker("loguru")
    assert isinstance(make_tracker({"type": "loguru", "sink": None, "enqueue": False}), LoguruTracker)
