"""RayWorker on a local Ray instance (one per module: Ray takes seconds to start)."""

import ctypes
import json
import sys
import time

import cloudpickle
import pytest

from compileiq.errors import WorkerCapabilityWarning
from compileiq.utils.validation import INVALID_SCORE
from compileiq.worker import RayWorker

ray = pytest.importorskip("ray", reason="ray is not installed (pip install ray)")

cloudpickle.register_pickle_by_value(sys.modules[__name__])


def objective(p):
    if p == {}:
        return 4.0
    if p == "hang":
        time.sleep(60)
    if p == "segv":
        ctypes.string_at(0)
    return p if isinstance(p, tuple) else float(p)


@pytest.fixture(scope="module")
def local_ray():
    # two declared GPUs (none real) give every task a GPU id, to check per-GPU baselines anywhere
    ray.init(num_cpus=2, num_gpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    yield
    ray.shutdown()


@pytest.mark.timeout(120)
def test_ray_normalisation_metadata_failures(local_ray):
    w = RayWorker.create(None, True)
    with pytest.warns(WorkerCapabilityWarning, match="bogus_option"):
        scores = w.run(function=objective, params_pool=[2, 8, (1, 2), "segv"], params_ids=[0, 1, 2, 3],
                       num_cpus=1, bogus_option=1)
    by = {s.param_id: s for s in scores}
    assert scores[0].is_baseline and scores[0].score == 4.0 and scores[0].norm_score == 1.0
    assert by[0].norm_score == 0.5 and by[1].norm_score == 2.0
    assert {"task_id", "node_id", "gpu_id"} <= set(by[0].metadata) and by[0].metadata["gpu_id"] is None
    assert by[0].metadata["node_id"] == ray.get_runtime_context().get_node_id()
    assert set(w.baselines) == {(by[0].metadata["node_id"], None)}
    assert by[2].failure == "format" and "not in expected format" in by[2].error
    assert by[3].failure == "crash" and by[3].score == INVALID_SCORE
    t0 = time.monotonic()
    (hang, ok) = w.run(function=objective, params_pool=["hang", 3], params_ids=[4, 5], task_timeout=1.5)
    assert time.monotonic() - t0 < 30
    assert hang.failure == "timeout" and "exceeded task_timeout=1.5s" in hang.error
    assert ok.score == 3.0 and ok.norm_score == 0.75
    w.close()
    assert ray.is_initialized(), "close() must not shut down a Ray instance the user started"


def per_gpu(p):
    gpu = str(ray.get_runtime_context().get_accelerator_ids()["GPU"][0])
    time.sleep(0.2)  # concurrent tasks hold different GPUs
    if p == {}:
        return 2.0 if gpu == "0" else 4.0
    return 8.0


@pytest.mark.timeout(120)
def test_ray_baseline_per_gpu(local_ray):
    w = RayWorker.create(None, True)
    scores = w.run(function=per_gpu, params_pool=list(range(6)), params_ids=list(range(6)), num_gpus=1)
    w.close()
    assert scores[0].is_baseline
    gpus = {s.metadata["gpu_id"] for s in scores[1:]}
    assert gpus == {"0", "1"}, "both declared GPUs should have run candidates"
    assert {key[1] for key in w.baselines} == {"0", "1"}
    for s in scores[1:]:
        assert s.norm_score == 8.0 / (2.0 if s.metadata["gpu_id"] == "0" else 4.0), s.metadata


def test_ray_missing_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(ImportError, match=r"pip install ray"):
        RayWorker.create(None, False).run(function=objective, params_pool=[1], params_ids=[0])


def distributed_objective(config):
    time.sleep(0.02)
    return config["x"] ** 2 + config["y"] if "z" in config else config["y"] ** 2 + config["x"]


@pytest.mark.timeout(120)
def test_nvidias_distributed_example_on_the_local_cluster(local_ray):
    """Our equivalent of NVIDIA's examples/distributed.py: RayWorker, Ray task options through start()."""
    import compileiq.search_spaces.base as ss
    from compileiq import Search, SearchConfiguration
    space = {"x": ss.range(start=1.0, end=20.0, step=0.5), "y": ss.choice([1, 2, 3]),
             "z": ss.log_sampling(start=1e-4, end=1.0, knockout_prob=0.2)}
    tuner = Search(objective_function=distributed_objective, search_space=space,
                   search_config=SearchConfiguration(pool_size=8, generations=2, mutate_rate=0.25, problem_type="max"),
                   worker_type=RayWorker, disable_progress_bar=True)
    with pytest.warns(WorkerCapabilityWarning, match="ignores num_workers"):
        tuner.start(num_workers=2, num_cpus=1, num_gpus=0, scheduling_strategy="DEFAULT")
    results = tuner.start(num_cpus=1, num_gpus=0, scheduling_strategy="DEFAULT")
    best = results.get_best_result()
    assert len(results) == 16 and best["score_1"] == results.get_results()["score_1"].max()
    assert {"task_id", "node_id"} <= set(json.loads(best["metadata"]))
