"""NVIDIA's documented example patterns, written out here, run unchanged against our package."""

import logging

import pytest

from compileiq import BASELINE_CONFIG, INVALID_SCORE, Search, SearchConfiguration


def test_import_paths_match_nvidias():
    import compileiq.ciq
    import compileiq.results
    import compileiq.search_spaces.base as ss
    import compileiq.types as t
    import compileiq.utils.helpers as h
    import compileiq.utils.validation as v
    import compileiq.worker as w
    assert compileiq.ciq.Search is Search and t.SearchConfiguration is SearchConfiguration
    assert t.INVALID_SCORE == v.INVALID_SCORE == INVALID_SCORE == "*"
    assert t.BASELINE_CONFIG == BASELINE_CONFIG == {} and t.BASELINE_DNA == {}
    assert {"NATIVE", "ISOLATED", "RAY", "ASYNC"} <= set(t.WorkerTypes.__members__)
    assert t.Worker is w.BaseWorker and v.Score is t.Score
    for name in ("MultiProcessWorker", "IsoMultiProcessWorker", "RayWorker", "AsyncWorker"):
        assert issubclass(getattr(w, name), t.Worker)
    assert callable(h.save_compiler_config) and callable(h.load_compiler_config)
    assert callable(ss.range) and callable(ss.choice) and callable(ss.literal) and callable(ss.log_sampling)
    assert hasattr(compileiq.results.SearchResult, "pareto_front")


def test_single_objective_getting_started():
    from compileiq.ciq import Search
    from compileiq.types import SearchConfiguration
    import compileiq.search_spaces.base as ss

    def objective(config):
        score = config["x"] ** 2 + config["y"]
        return score

    dna_config = {
        "x": ss.range(start=1.0, end=20.0, step=0.5),
        "y": ss.choice([1, 2, 3]),
        "z": ss.literal(const_value="constant", knockable_threshold=0.5),
    }
    main_config = SearchConfiguration(pool_size=12, generations=3, mutate_rate=0.5, problem_type="min")
    tuner = Search.single_objective(objective_function=objective, search_space=dna_config, search_config=main_config,
                                    disable_progress_bar=True)
    results = tuner.start()
    best = results.get_best_result()
    assert best["score_1"] == best["params"]["x"] ** 2 + best["params"]["y"]
    samples = tuner.sample(5)
    assert len(samples) == 5 and all(set(s) <= {"x", "y", "z"} for s in samples)


def test_multi_objective_with_process_workers():
    import compileiq.search_spaces.base as ss
    from compileiq.worker import MultiProcessWorker

    def multiobjective(config):
        return config["x"] ** 2 + config["y"], config["y"] ** 2 + config["x"]

    dna_config = {"x": ss.range(start=1.0, end=20.0, step=0.5), "y": ss.choice([1, 2, 3])}
    tuner = Search.multi_objective(objective_function=multiobjective, search_space=dna_config,
                                   search_config=SearchConfiguration(pool_size=12, generations=3, mutate_rate=0.5),
                                   num_objectives=2, worker_type=MultiProcessWorker, disable_progress_bar=True)
    results = tuner.start(num_workers=2)
    front = results.pareto_front()
    assert front and all({"score_1", "score_2", "params"} <= set(r) for r in front)
    rows = [(r["score_1"], r["score_2"]) for _, r in results.get_results().iterrows()]
    for r in front:  # nothing evaluated dominates a front row
        a, b = r["score_1"], r["score_2"]
        assert not any(x <= a and y <= b and (x, y) != (a, b) for x, y in rows)


def test_nested_search_space():
    import compileiq.search_spaces.base as ss

    def objective(config):
        return config["outer"]["inner"]["n"] + config["flag"]

    space = {"outer": {"inner": {"n": ss.range(0, 10)}, "m": ss.log_sampling(1, 64, 7)}, "flag": ss.choice([0, 1])}
    res = Search(objective, space, SearchConfiguration(generations=2, pool_size=8), disable_progress_bar=True,
                 worker_type="native").start()
    # The native worker evaluates in its own process, so what was evaluated is read from the results, not
    # from a list the objective appends to (that list stays empty here).
    rows = res.get_results().to_dict("records")
    assert len(rows) >= 8
    for r in rows:  # nested params keep their shape and types, and each row's score is its params' score
        p = r["params"]
        assert isinstance(p["outer"]["inner"]["n"], int) and 0 <= p["outer"]["inner"]["n"] <= 10  # range() is inclusive
        assert p["outer"]["m"] in (1, 2, 4, 8, 16, 32, 64) and p["flag"] in (0, 1)
        assert r["score_1"] == p["outer"]["inner"]["n"] + p["flag"]
    # The best row is the minimum of what was evaluated (a fixed bound such as "n <= 3" depends on what the
    # random samples drew, and failed in CI).
    best = res.get_best_result()
    assert best["score_1"] == min(r["score_1"] for r in rows)
    assert best["params"]["outer"]["inner"]["n"] + best["params"]["flag"] == best["score_1"]


def test_normalisation_example():
    import compileiq.search_spaces.base as ss
    from compileiq.types import BASELINE_DNA

    def objective(sample):
        if sample == BASELINE_DNA:
            return 200.0
        return 100.0 + sample["u"]

    cfg = SearchConfiguration(normalize=True, generations=2, pool_size=8)
    res = Search(objective, {"u": ss.range(0, 100, 5)}, cfg, disable_progress_bar=True).start(num_workers=2)
    best = res.get_best_result()
    assert best["norm_score_1"] == pytest.approx(best["score_1"] / 200.0) and best["norm_score_1"] < 1


def test_custom_worker_from_the_documentation():
    import compileiq.search_spaces.base as ss
    from compileiq.types import BASELINE_DNA
    from compileiq.utils.validation import Score
    from compileiq.worker import BaseWorker
    logger = logging.getLogger("custom-worker-example")
    seen_kwargs = {}

    class SequentialWorker(BaseWorker):
        def run(self, *, function, params_pool, params_ids, num_function_returns=1, **kwargs):
            seen_kwargs.update(kwargs)
            scores = []
            if self.normalize and self.baseline_score is None:
                baseline_score = function(BASELINE_DNA)
                self.baseline_score = Score(score=baseline_score, param_id="baseline", params=BASELINE_DNA,
                                            norm_score=self.normalize_scores(baseline_score, baseline_score),
                                            num_objectives=num_function_returns, is_baseline=True)
                scores.append(self.baseline_score)
            for i, param in enumerate(params_pool):
                try:
                    func_return = function(param)
                except Exception as e:
                    logger.warning(f"Unhandled exception {e} with params {param}. We will return an invalid score.")
                    func_return = [INVALID_SCORE] * num_function_returns if num_function_returns > 1 else INVALID_SCORE
                valid_score = Score(score=func_return, param_id=params_ids[i], params=param,
                                    num_objectives=num_function_returns)
                if self.normalize:
                    valid_score.norm_score = self.normalize_scores(valid_score.score, self.baseline_score.score)
                scores.append(valid_score)
            return scores

    def objective(c):
        return 8.0 if c == {} else 4.0 + c["v"]

    main_config = SearchConfiguration(normalize=True, generations=2, pool_size=8)
    tuner = Search(objective_function=objective, search_space={"v": ss.range(0, 20)}, search_config=main_config,
                   disable_progress_bar=True)
    tuner.worker_type = SequentialWorker(cache_folder=tuner.cache_folder, normalize=main_config.normalize)
    results = tuner.start(gpu_hint="H200")
    assert seen_kwargs["gpu_hint"] == "H200"
    assert results.get_best_result()["norm_score_1"] == pytest.approx(results.get_best_result()["score_1"] / 8.0)
    # and the class itself, created through Worker.create
    results = Search(objective, {"v": ss.range(0, 20)}, main_config, worker_type=SequentialWorker,
                     disable_progress_bar=True).start()
    assert len(results) == 17


def test_mixed_space_gives_the_objective_a_list():
    import compileiq.search_spaces.base as ss

    def objective(cfg):
        user, other = cfg
        return user["tile"] * 2 + other["k"]

    res = Search(objective, [{"tile": ss.choice([16, 32, 64])}, {"k": ss.range(0, 3)}],
                 SearchConfiguration(generations=2, pool_size=6), disable_progress_bar=True).start()
    assert isinstance(res.get_best_result()["params"], list)


def test_controls_helpers_round_trip(tmp_path):
    from compileiq.utils.helpers import load_compiler_config, save_compiler_config
    p = save_compiler_config(tmp_path / "c.acf", "00ff10")
    assert p.read_bytes() == b"\x00\xff\x10" and load_compiler_config(p) == "00ff10"
    with pytest.raises(TypeError, match="dict search space"):
        save_compiler_config(tmp_path / "d", {"a": 1})
    with pytest.raises(ValueError, match="not a hex string"):
        save_compiler_config(tmp_path / "d", "xyz")
    assert not (tmp_path / "d").exists()


def test_loguru_tracker_example(tmp_path, monkeypatch):
    """NVIDIA's examples/loguru_tracker.py: a file sink at DEBUG."""
    pytest.importorskip("loguru")
    import compileiq.search_spaces.base as ss
    from compileiq.types import LoguruTrackerConfig
    monkeypatch.chdir(tmp_path)
    tracker_config = LoguruTrackerConfig(sink=["tracker.log"], level="DEBUG")
    tuner = Search(objective_function=lambda c: c["x"] ** 2 + c["y"],
                   search_space={"x": ss.range(start=1.0, end=20.0, step=0.5), "y": ss.choice([1, 2, 3])},
                   tracker_config=tracker_config, disable_progress_bar=True,
                   search_config=SearchConfiguration(pool_size=10, generations=2, mutate_rate=0.5, problem_type="min"))
    results = tuner.start()
    log = (tmp_path / "tracker.log").read_text()
    assert results.get_best_result()["score_1"] >= 2 and log.count("-> score") == 20 and "generation 0 started" in log


# NVIDIA's examples/mlflow_tracker.py: its equivalent is tests/nvidia/test_trackers.py::test_mlflow_sqlite_store_holds_the_run
