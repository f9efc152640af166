"""SearchConfiguration and InternalSearchConfiguration: pydantic models, as in NVIDIA's CompileIQ.

pydantic because NVIDIA's users already validate with it: ``model_dump``, ``model_validate``,
``model_json_schema`` work, and a broken constraint raises ``pydantic.ValidationError`` whose
message names the field, the rule and a valid example. Our checks are stricter than NVIDIA's in
one way: a bool is not accepted where a number is expected (``generations=True`` is a typo).

The derived sizes follow one rule, written once here (docs and skills quote it):
``pool_size = max(2 * num_objectives + 1, 32)``; ``cull_size`` = 3/4 of the pool rounded down to
even, capped so that at least ``1 + 2 * num_objectives`` survivors remain.
"""

from __future__ import annotations

import enum
import math
import numbers
import warnings
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator, model_validator

MAX_POOL = 4096
MIN_POOL = 6


class ProblemType(str, enum.Enum):
    """Whether lower ("min", e.g. time) or higher ("max", e.g. throughput) scores are better."""

    MIN = "min"
    MAX = "max"


def derived_pool_size(num_objectives: int) -> int:
    """The pool size used when none is given: the rule NVIDIA's seed documents."""
    return max(2 * num_objectives + 1, 32)


def min_survivors(num_objectives: int) -> int:
    return 1 + 2 * num_objectives


def derived_cull_size(pool: int, num_objectives: int) -> int:
    """Parents kept each generation: 3/4 of the pool, even, leaving at least 1 + 2k survivors.

    0 only when the pool has room for nothing but the survivors (16+ objectives at the derived
    pool size); the engines then keep their own minimum of parents."""
    cap = pool - min_survivors(num_objectives)
    cull = min((3 * pool // 4) // 2 * 2, cap // 2 * 2)
    return cull if cull >= 2 else max(cap // 2 * 2, 0)


def _strict_int(where: str, v: Any, minimum: int) -> int:
    if isinstance(v, bool) or not isinstance(v, numbers.Integral):
        raise ValueError(f"{where}={v!r} must be an int >= {minimum}")
    if v < minimum:
        raise ValueError(f"{where}={v!r} must be >= {minimum}")
    return int(v)


def _unit_number(where: str, v: Any, low_open: bool, high_open: bool) -> float:
    ok = not isinstance(v, bool) and isinstance(v, numbers.Real) and not math.isnan(float(v))
    if ok:
        x = float(v)
        ok = (x > 0.0 if low_open else x >= 0.0) and (x < 1.0 if high_open else x <= 1.0)
    if not ok:
        lo, hi = ("(" if low_open else "["), (")" if high_open else "]")
        raise ValueError(f"{where}={v!r} must be a number in {lo}0, 1{hi}")
    return float(v)


class SearchConfiguration(BaseModel):
    """How the search runs. ``generations`` is required; everything else has a default."""

    model_config = ConfigDict(extra="forbid", validate_default=False)

    problem_type: str = Field("min", description="'min' (lower is better) or 'max'")
    normalize: bool = Field(False, description="divide every score by the baseline's (BASELINE_CONFIG)")
    num_objectives: int = Field(1, description="how many numbers the objective returns")
    generations: int | None = Field(None, validate_default=True, description="generations to run (required)")
    pool_size: int | None = Field(None, description="candidates per generation; None: max(2 * num_objectives + 1, 32)")
    cull_size: int | None = Field(None, description="parents kept per generation; None: derived from pool_size")
    mutate_rate: float = Field(0.25, description="mutation rate in (0, 1)")
    objective_weights: list[float] | None = Field(None, description="one weight per objective, summing to 1")
    init_with_true_random_threshold: float = Field(0.9, description="share of generation 0 drawn inside seed windows")
    enable_large_fail_pool: bool = Field(True, description="accepted for NVIDIA scripts; failures never stall a generation here")
    seed: int | None = Field(None, description="random seed of the engine (ours; NVIDIA 1.1 takes it as an engine option)")

    _derived: dict = PrivateAttr(default_factory=dict)

    # -- field checks (each message names the field and the rule) -------------------------------------
    @model_validator(mode="before")
    @classmethod
    def _known_fields(cls, data: Any) -> Any:
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(cls.model_fields))
            if unknown:
                raise ValueError(f"{cls.__name__}: unknown field(s) {', '.join(map(str, unknown))}; "
                                 f"known: {', '.join(sorted(cls.model_fields))}")
        return data

    @field_validator("generations", mode="before")
    @classmethod
    def _generations(cls, v):
        if v is None:
            raise ValueError(f"{cls.__name__}.generations is required: how many generations to run (e.g. 10)")
        return _strict_int(f"{cls.__name__}.generations", v, 1)

    @field_validator("problem_type", mode="before")
    @classmethod
    def _problem_type(cls, v):
        pt = v.value if isinstance(v, ProblemType) else v
        if pt not in ("min", "max"):
            raise ValueError(f"{cls.__name__}.problem_type={v!r} must be 'min' or 'max'")
        return pt

    @field_validator("normalize", "enable_large_fail_pool", mode="before")
    @classmethod
    def _bool(cls, v, info):
        if not isinstance(v, bool):
            raise ValueError(f"{cls.__name__}.{info.field_name}={v!r} must be True or False")
        return v

    @field_validator("num_objectives", mode="before")
    @classmethod
    def _num_objectives(cls, v):
        return _strict_int(f"{cls.__name__}.num_objectives", v, 1)

    @field_validator("pool_size", mode="before")
    @classmethod
    def _pool_size(cls, v):
        if v is None:
            return v
        v = _strict_int(f"{cls.__name__}.pool_size", v, MIN_POOL)
        if v > MAX_POOL:
            raise ValueError(f"{cls.__name__}.pool_size={v} is more than {MAX_POOL}")
        return v

    @field_validator("cull_size", mode="before")
    @classmethod
    def _cull_size(cls, v):
        if v is None:
            return v
        v = _strict_int(f"{cls.__name__}.cull_size", v, 2)
        if v % 2:
            raise ValueError(f"{cls.__name__}.cull_size={v} must be even (parents mate in pairs)")
        return v

    @field_validator("mutate_rate", mode="before")
    @classmethod
    def _mutate_rate(cls, v):
        return _unit_number(f"{cls.__name__}.mutate_rate", v, True, True)

    @field_validator("init_with_true_random_threshold", mode="before")
    @classmethod
    def _threshold(cls, v):
        return _unit_number(f"{cls.__name__}.init_with_true_random_threshold", v, False, False)

    @field_validator("objective_weights", mode="before")
    @classmethod
    def _weights(cls, v):
        if v is None:
            return v
        if isinstance(v, (str, bytes)) or not hasattr(v, "__len__"):
            raise ValueError(f"{cls.__name__}.objective_weights={v!r} must be a list of numbers, one per objective")
        if any(isinstance(x, bool) or not isinstance(x, numbers.Real) or not x >= 0 for x in v):
            raise ValueError(f"{cls.__name__}.objective_weights={v!r} must be non-negative numbers")
        return [float(x) for x in v]

    @field_validator("seed", mode="before")
    @classmethod
    def _seed(cls, v):
        return None if v is None else _strict_int(f"{cls.__name__}.seed", v, 0)

    # -- cross-field rules and derived sizes ------------------------------------------------------------
    @model_validator(mode="after")
    def _sizes(self):
        name, k = type(self).__name__, self.num_objectives
        if self.objective_weights is not None:
            w = self.objective_weights
            if len(w) != k:
                raise ValueError(f"{name}.objective_weights={w!r} must hold num_objectives={k} weights")
            if not math.isclose(sum(w), 1.0, abs_tol=1e-6):
                raise ValueError(f"{name}.objective_weights={w!r} must sum to 1 (they sum to {sum(w):g})")
        derived = {}
        if self.pool_size is None:
            self.pool_size = derived_pool_size(k)
            derived["pool_size"] = True
        if self.pool_size < min_survivors(k):
            raise ValueError(f"{name}.pool_size={self.pool_size} is too small for num_objectives={k}: need at "
                             f"least {min_survivors(k)} (1 + 2*num_objectives survivors)")
        if self.cull_size is None:
            self.cull_size = derived_cull_size(self.pool_size, k)
            derived["cull_size"] = True
        else:
            if self.cull_size >= self.pool_size:
                raise ValueError(f"{name}.cull_size={self.cull_size} must be smaller than pool_size={self.pool_size}")
            if self.pool_size - self.cull_size < min_survivors(k):
                raise ValueError(f"{name}.cull_size={self.cull_size} leaves {self.pool_size - self.cull_size} "
                                 f"survivors; pool_size - cull_size must be >= 1 + 2*num_objectives = {min_survivors(k)}")
        self._derived = derived
        return self

    # -- helpers ----------------------------------------------------------------------------------------
    @property
    def survivors(self) -> int:
        return self.pool_size - self.cull_size

    @classmethod
    def from_dict(cls, d: dict) -> "SearchConfiguration":
        return cls.model_validate(dict(d))

    def to_dict(self) -> dict:
        return self.model_dump()

    def with_objectives(self, num_objectives: int) -> "SearchConfiguration":
        """A copy for another objective count; sizes that were derived are derived again."""
        d = self.to_dict()
        d["num_objectives"] = num_objectives
        for f in ("pool_size", "cull_size"):
            if self._derived.get(f):
                d[f] = None
        return type(self).model_validate(d)

    def to_json_dict(self) -> dict:
        return {k: v for k, v in self.model_dump(mode="json").items() if v is not None}

    # -- the legacy ``.config`` format ------------------------------------------------------------------
    @classmethod
    def from_legacy(cls, legacy: str | Path) -> "SearchConfiguration":
        """Read a legacy ``.config`` file (``(key . value)`` lines). Keys this class does not have are
        ignored with a warning naming them, as NVIDIA's reader does."""
        from ._legacy_config import parse_legacy
        pairs, path = parse_legacy(legacy)
        known = {k: v for k, v in pairs.items() if k in cls.model_fields}
        for key in sorted(set(pairs) - set(known)):
            warnings.warn(f"{path}: legacy configuration key {key!r} is not a {cls.__name__} field; it is ignored",
                          UserWarning, stacklevel=2)
        try:
            return cls.model_validate(known)
        except ValidationError as exc:
            raise ValidationError.from_exception_data(f"{cls.__name__} from {path}", exc.errors()) from None

    def to_legacy(self, path: str | Path | None = None) -> str:
        """This configuration in the legacy ``.config`` format; also written to ``path`` when given."""
        from ._legacy_config import render_legacy
        return render_legacy(self, path)


class InternalSearchConfiguration(SearchConfiguration):
    """SearchConfiguration plus the fields NVIDIA's engine glue sets itself (legacy ``main.config``
    files carry them). Accepted and written back by to_legacy; our engines do not use them."""

    dna_config: str | list[str] = ""
    experience_mode: str = "solar"
    enable_result_file: bool = False


__all__ = ["SearchConfiguration", "InternalSearchConfiguration", "ProblemType", "derived_pool_size",
           "derived_cull_size", "MAX_POOL"]
