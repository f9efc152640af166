"""SearchConfiguration and the shared type names, at NVIDIA-compatible import paths."""

from __future__ import annotations

import enum
import math
import numbers
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from .errors import ConfigurationError
from .utils.validation import BASELINE_CONFIG, BASELINE_DNA, INVALID_SCORE, Score

MAX_POOL = 4096


class ProblemType(str, enum.Enum):
    MIN = "min"
    MAX = "max"


def _int(name, v, minimum, where="SearchConfiguration"):
    if isinstance(v, bool) or not isinstance(v, numbers.Integral):
        raise ConfigurationError(f"{where}.{name}={v!r} must be an int >= {minimum}")
    if v < minimum:
        raise ConfigurationError(f"{where}.{name}={v!r} must be >= {minimum}")
    return int(v)


def derived_pool_size(num_objectives: int) -> int:
    # NVIDIA documents max(2k + 1, 32); 2k + 3 because the parents (at least 2) come on top of 1 + 2k survivors
    return max(2 * num_objectives + 3, 32)


def derived_cull_size(pool: int, num_objectives: int) -> int:
    """Parents kept each generation: 3/4 of the pool, even, leaving at least 1 + 2k survivors."""
    cull = (3 * pool // 4) // 2 * 2
    while cull > 2 and pool - cull < 1 + 2 * num_objectives:
        cull -= 2
    return max(cull, 2)


@dataclass
class SearchConfiguration:
    """How the search runs. Every constraint is checked here, naming the field that breaks it."""

    generations: int = None  # required
    problem_type: str = "min"
    normalize: bool = False
    num_objectives: int = 1
    pool_size: int | None = None
    cull_size: int | None = None
    mutate_rate: float = 0.25
    objective_weights: tuple | None = None
    init_with_true_random_threshold: float = 0.9
    enable_large_fail_pool: bool = True  # accepted for NVIDIA scripts; failures never stall a generation here
    seed: int | None = None
    _derived: dict = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self):
        if self.generations is None:
            raise ConfigurationError("SearchConfiguration.generations is required: how many generations to run (e.g. 10)")
        self.generations = _int("generations", self.generations, 1)
        pt = self.problem_type.value if isinstance(self.problem_type, ProblemType) else self.problem_type
        if pt not in ("min", "max"):
            raise ConfigurationError(f"SearchConfiguration.problem_type={self.problem_type!r} must be 'min' or 'max'")
        self.problem_type = pt
        if not isinstance(self.normalize, bool):
            raise ConfigurationError(f"SearchConfiguration.normalize={self.normalize!r} must be True or False")
        self.num_objectives = _int("num_objectives", self.num_objectives, 1)
        k = self.num_objectives
        if self.pool_size is None:
            self.pool_size = derived_pool_size(k)
            self._derived["pool_size"] = True
        self.pool_size = _int("pool_size", self.pool_size, 6)
        if self.pool_size > MAX_POOL:
            raise ConfigurationError(f"SearchConfiguration.pool_size={self.pool_size} is more than {MAX_POOL}")
        if self.pool_size < 2 * k + 3:
            raise ConfigurationError(
                f"SearchConfiguration.pool_size={self.pool_size} is too small for num_objectives={k}: "
                f"need at least {2 * k + 3} (parents plus 1 + 2*num_objectives survivors)")
        if self.cull_size is None:
            self.cull_size = derived_cull_size(self.pool_size, k)
            self._derived["cull_size"] = True
        self.cull_size = _int("cull_size", self.cull_size, 2)
        if self.cull_size % 2:
            raise ConfigurationError(f"SearchConfiguration.cull_size={self.cull_size} must be even (parents mate in pairs)")
        if self.cull_size >= self.pool_size:
            raise ConfigurationError(f"SearchConfiguration.cull_size={self.cull_size} must be smaller than pool_size={self.pool_size}")
        if self.pool_size - self.cull_size < 1 + 2 * k:
            raise ConfigurationError(
                f"SearchConfiguration.cull_size={self.cull_size} leaves {self.pool_size - self.cull_size} survivors; "
                f"pool_size - cull_size must be >= 1 + 2*num_objectives = {1 + 2 * k}")
        mr = self.mutate_rate
        if isinstance(mr, bool) or not isinstance(mr, numbers.Real) or not 0.0 < float(mr) < 1.0:
            raise ConfigurationError(f"SearchConfiguration.mutate_rate={mr!r} must be a number strictly between 0 and 1")
        self.mutate_rate = float(mr)
        if self.objective_weights is not None:
            w = self.objective_weights
            if isinstance(w, (str, bytes)) or not hasattr(w, "__len__") or len(w) != k:
                raise ConfigurationError(f"SearchConfiguration.objective_weights={w!r} must hold num_objectives={k} weights")
            if any(isinstance(x, bool) or not isinstance(x, numbers.Real) or not x >= 0 for x in w):
                raise ConfigurationError(f"SearchConfiguration.objective_weights={w!r} must be non-negative numbers")
            if not math.isclose(sum(w), 1.0, abs_tol=1e-6):
                raise ConfigurationError(f"SearchConfiguration.objective_weights={w!r} must sum to 1 (they sum to {sum(w):g})")
            self.objective_weights = tuple(float(x) for x in w)
        t = self.init_with_true_random_threshold
        if isinstance(t, bool) or not isinstance(t, numbers.Real) or not 0.0 <= float(t) <= 1.0:
            raise ConfigurationError(f"SearchConfiguration.init_with_true_random_threshold={t!r} must be in [0, 1]")
        self.init_with_true_random_threshold = float(t)
        if self.seed is not None:
            self.seed = _int("seed", self.seed, 0)

    @classmethod
    def from_dict(cls, d: dict) -> "SearchConfiguration":
        known = {f.name for f in fields(cls) if not f.name.startswith("_")}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ConfigurationError(f"SearchConfiguration: unknown field(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
        return cls(**d)

    def to_dict(self) -> dict:
        d = asdict(self)
        d.pop("_derived", None)
        return d

    @property
    def survivors(self) -> int:
        return self.pool_size - self.cull_size


class WorkerTypes(str, enum.Enum):
    """Built-in workers by name (a Worker subclass or instance works too)."""

    NATIVE = "native"
    ISOLATED = "isolated"
    ASYNC = "async"
    RAY = "ray"

    def worker_class(self):
        from . import worker as w
        return {"native": w.MultiProcessWorker, "isolated": w.IsoMultiProcessWorker,
                "async": w.AsyncWorker, "ray": w.RayWorker}[self.value]


def __getattr__(name: str) -> Any:
    # Worker lives in compileiq.worker; imported lazily so that importing types stays light
    if name in ("Worker", "BaseWorker"):
        from .worker.base import Worker
        return Worker
    raise AttributeError(f"module 'compileiq.types' has no attribute {name!r}")


__all__ = ["SearchConfiguration", "ProblemType", "WorkerTypes", "Worker", "Score", "INVALID_SCORE",
           "BASELINE_CONFIG", "BASELINE_DNA"]
