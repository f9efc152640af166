"""RayWorker: every candidate is a Ray task, on this machine or across a cluster.

Ray is imported on first use only. Connect to a cluster with ``ray.init(address=...)`` before
starting the search; otherwise a local Ray instance is started and shut down again by close().
Task options (num_cpus, num_gpus, resources, scheduling_strategy, ...) come from
``Search.start(...)`` keyword arguments. With normalize=True each node (and each GPU, when
num_gpus is requested) gets its own baseline, since speed-ups only compare on the same hardware.
"""

from __future__ import annotations

import hashlib
import logging
import time
import warnings
from typing import Any, Callable

import cloudpickle

from ..errors import WorkerCapabilityWarning
from ..utils.validation import BASELINE_CONFIG, Score
from ._common import Job, baseline_skipped, pickle_objective, task_timeout_arg
from .base import BASELINE_ID, Worker, evaluate_call, failed_score

log = logging.getLogger("compileiq")

TASK_OPTIONS = ("num_cpus", "num_gpus", "resources", "scheduling_strategy", "memory", "accelerator_type",
                "max_retries", "retry_exceptions", "runtime_env", "placement_group", "placement_group_bundle_index",
                "label_selector", "name")
_BASELINE_TRIES = 3  # attempts to land a per-GPU baseline on a given GPU (Ray picks the GPU, not us)

_loaded: dict[str, Callable] = {}  # per Ray worker process: objectives already unpickled


STARTED = "compileiq-started"


def _ray_evaluate(fn_bytes: bytes, params: Any, param_id: Any, num_objectives: int, is_baseline: bool):
    """A streaming Ray task: yields STARTED once the objective is loaded, then the Score, so that
    task_timeout counts the evaluation only, not the time queued or starting a Ray worker."""
    import ray
    ctx = ray.get_runtime_context()
    gpus = ctx.get_accelerator_ids().get("GPU") or []
    meta = {"task_id": ctx.get_task_id(), "node_id": ctx.get_node_id(), "gpu_id": ",".join(map(str, gpus)) or None}
    digest = hashlib.sha1(fn_bytes).hexdigest()
    try:
        function = _loaded.get(digest) or _loaded.setdefault(digest, cloudpickle.loads(fn_bytes))
    except Exception as exc:
        yield failed_score(param_id, params, num_objectives, "exception",
                           f"the objective could not be loaded on Ray node {meta['node_id']}: "
                           f"{type(exc).__name__}: {exc}; every module it uses must be installed on every node "
                           f"(or shipped with runtime_env)", metadata=meta, is_baseline=is_baseline)
        return
    yield STARTED
    yield evaluate_call(function, params, param_id, num_objectives, metadata=meta, is_baseline=is_baseline)


def _task_meta(task_id: str | None) -> dict:
    # a task that never returned cannot tell where it ran
    return {"task_id": task_id, "node_id": None, "gpu_id": None}


def _generator_task_id(gen) -> str | None:
    ref = getattr(gen, "_generator_ref", None)  # not public API: the id only decorates error messages
    try:
        return ref.task_id().hex()
    except Exception:
        return None


def _import_ray():
    try:
        import ray
    except ImportError as exc:
        raise ImportError('RayWorker needs Ray, which is not installed: pip install ray') from exc
    return ray


class RayWorker(Worker):
    """Candidates as Ray tasks; Ray, not num_workers, decides how many run at once."""

    respects_num_workers = False
    supports_timeout = True

    def __init__(self, cache_folder=None, normalize: bool = False, tracker=None, **kwargs):
        super().__init__(cache_folder=cache_folder, normalize=normalize, tracker=tracker, **kwargs)
        self._started_ray = False
        self._remote = None
        self._warned = False
        self.baselines: dict[tuple, Score] = {}  # (node_id, gpu_id or None) -> that hardware's baseline

    # -- setup -----------------------------------------------------------------------------------
    def _ray(self):
        ray = _import_ray()
        if not ray.is_initialized():
            ray.init(include_dashboard=False, log_to_driver=True, logging_level=logging.WARNING)
            self._started_ray = True
        if self._remote is None:
            self._remote = ray.remote(_ray_evaluate)
        return ray

    def _options(self, kwargs: dict) -> dict:
        ignored = sorted(k for k in kwargs if k not in TASK_OPTIONS)
        if ignored and not self._warned:
            self._warned = True
            warnings.warn(f"RayWorker ignores the start() option(s) {', '.join(ignored)}; Ray task options it "
                          f"passes on: {', '.join(TASK_OPTIONS)}", WorkerCapabilityWarning, stacklevel=3)
        opts = {k: v for k, v in kwargs.items() if k in TASK_OPTIONS}
        opts.setdefault("max_retries", 0)  # a candidate that crashes its worker would crash it again
        return opts

    def close(self) -> None:
        if self._started_ray:
            self._started_ray = False
            ray = _import_ray()
            if ray.is_initialized():
                ray.shutdown()

    # -- run -------------------------------------------------------------------------------------
    def run(self, *, function: Callable, params_pool: list, params_ids: list, num_function_returns: int = 1,
            num_workers=None, task_timeout: float | None = None, **kwargs) -> list[Score]:
        timeout = task_timeout_arg(task_timeout)
        opts = self._options(kwargs)
        fn_bytes = pickle_objective(function, "Ray worker")
        params_pool, params_ids = list(params_pool), list(params_ids)
        if len(params_pool) != len(params_ids):
            raise ValueError(f"params_pool has {len(params_pool)} candidates but params_ids has "
                             f"{len(params_ids)} ids; pass one id per candidate")
        ray = self._ray()
        fn_ref = ray.put(fn_bytes)
        k = num_function_returns
        by_gpu = bool(opts.get("num_gpus"))
        jobs = [Job(i, p, pid, False) for i, (p, pid) in enumerate(zip(params_pool, params_ids))]
        out: list[Score] = []
        if self.needs_baseline():
            baseline = self._batch(ray, fn_ref, [Job(0, BASELINE_CONFIG, BASELINE_ID, True)], k, opts, timeout)[0]
            self.set_baseline(baseline)
            out.append(baseline)
            self.baselines[self._key(baseline, by_gpu)] = baseline
            if baseline.invalid:
                return out + baseline_skipped(jobs, k)
        scores = self._batch(ray, fn_ref, jobs, k, opts, timeout) if jobs else []
        if self.normalize:
            self._normalize_per_hardware(ray, fn_ref, scores, k, opts, timeout, by_gpu)
        return out + scores

    @staticmethod
    def _key(score: Score, by_gpu: bool) -> tuple:
        return (score.metadata.get("node_id"), score.metadata.get("gpu_id") if by_gpu else None)

    def _normalize_per_hardware(self, ray, fn_ref, scores: list[Score], k: int, opts: dict, timeout, by_gpu: bool):
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
        seen = {self._key(s, by_gpu) for s in scores if s.metadata.get("node_id")}
        for _ in range(_BASELINE_TRIES):
            missing = seen - set(self.baselines)
            if not missing:
                break
            # Ray, not us, picks the GPU: run as many baselines at once on a node as it has GPUs in use,
            # so that each lands on a different one
            nodes = sorted({node for node, _ in missing})
            targets = [node for node in nodes for _ in range(len({key for key in seen if key[0] == node}))]
            jobs = [Job(i, BASELINE_CONFIG, BASELINE_ID, True) for i in range(len(targets))]
            pinned = {i: {**opts, "scheduling_strategy": NodeAffinitySchedulingStrategy(node, soft=False)}
                      for i, node in enumerate(targets)}
            for node, b in zip(targets, self._batch(ray, fn_ref, jobs, k, opts, timeout, pinned)):
                if b.metadata.get("node_id") is None:  # a failed baseline still belongs to its node
                    b.metadata["node_id"] = node
                self.set_baseline_for(b, by_gpu)
        for s in scores:
            key = self._key(s, by_gpu)
            base = self.baselines.get(key) or next(
                (b for (node, _), b in self.baselines.items() if node == key[0]), None)
            if base is None and key[0] is not None:
                log.warning("candidate %s ran on node %s, GPU %s, where no baseline could be measured; "
                            "normalised against the first baseline", s.param_id, key[0], key[1])
            base = base or self.baseline_score
            if base is not None:
                s.norm_score = self.normalize_scores(s.score, base.score)

    def set_baseline_for(self, score: Score, by_gpu: bool) -> None:
        """Record a node's (or GPU's) own baseline without replacing the run's first one."""
        score.is_baseline, score.param_id = True, BASELINE_ID
        score.norm_score = self.normalize_scores(score.score, score.score)
        key = self._key(score, by_gpu)
        if score.invalid:
            log.error("the normalisation baseline failed on Ray node %s, GPU %s: %s; candidates evaluated there "
                      "are normalised to INVALID_SCORE", key[0], key[1], score.error)
        self.baselines.setdefault(key, score)

    def _batch(self, ray, fn_ref, jobs: list[Job], k: int, opts: dict, timeout: float | None,
               per_job: dict[int, dict] | None = None) -> list[Score]:
        """Submit every job at once and collect one Score per job, in order; ``per_job`` overrides the
        task options of some job slots."""
        remote = self._remote.options(num_returns="streaming", **opts)
        running: dict = {}  # generator -> [job, submitted, started or None, task id]
        results: dict[int, Score] = {}
        for job in jobs:
            task = remote
            if per_job and job.slot in per_job:
                task = self._remote.options(num_returns="streaming", **per_job[job.slot])
            gen = task.remote(fn_ref, job.params, job.param_id, k, job.is_baseline)
            running[gen] = [job, time.monotonic(), None, _generator_task_id(gen)]
        try:
            while running:
                clocks = [t for _, _, t, _ in running.values() if t is not None]
                wait = None
                if timeout is not None and clocks:
                    wait = max(0.0, min(clocks) + timeout - time.monotonic()) + 0.001
                ready, _ = ray.wait(list(running), num_returns=1, timeout=wait)
                for gen in ready:
                    entry = running[gen]
                    item = self._next(ray, gen, entry, k)
                    if isinstance(item, str) and item == STARTED:
                        entry[2] = time.monotonic()
                    else:
                        results[entry[0].slot] = item
                        del running[gen]
                if timeout is not None:
                    now = time.monotonic()
                    for gen, (job, _, started, task_id) in list(running.items()):
                        if started is not None and now > started + timeout:
                            ray.cancel(gen, force=True)
                            del running[gen]
                            results[job.slot] = failed_score(
                                job.param_id, job.params, k, "timeout",
                                f"candidate {job.param_id!r} exceeded task_timeout={timeout:g}s; its Ray task "
                                f"{task_id} was cancelled (force=True, its worker process killed); raise "
                                f"task_timeout if a clean compile+run takes longer",
                                metadata=_task_meta(task_id), is_baseline=job.is_baseline, elapsed=now - started)
        except BaseException:
            for gen in running:
                ray.cancel(gen, force=True)
            raise
        return [results[j.slot] for j in jobs]

    @staticmethod
    def _next(ray, gen, entry: list, k: int):
        """STARTED or the candidate's Score; a task that died becomes an INVALID crash Score."""
        job, submitted, started, task_id = entry
        try:
            item = ray.get(next(gen))
        except Exception as exc:  # StopIteration included: the task ended without a result
            elapsed = time.monotonic() - (started or submitted)
            return failed_score(
                job.param_id, job.params, k, "crash",
                f"candidate {job.param_id!r}: its Ray task {task_id} died after {elapsed:.1f}s: "
                f"{type(exc).__name__}: {str(exc).rstrip('. ')}. The objective or native code it calls ended the Ray "
                f"worker process (a crash, os._exit, out of memory); scored INVALID_SCORE",
                metadata=_task_meta(task_id), is_baseline=job.is_baseline, elapsed=elapsed)
        if isinstance(item, Score):
            item.params = job.params
        return item
