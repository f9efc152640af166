"""The engine seam at NVIDIA 1.1's import path: ``Search(engine=EngineConfig(name=..., options=...))``.

NVIDIA 1.1 ships one engine, ``"amber"`` (NSGA-III on pymoo, closed). Its name is accepted and
runs ours ("auto": the GA for one objective, NSGA-II for several); its options are mapped to ours
where they mean the same thing, and an option we cannot honour gives a warning naming it, never a
silent drop. See docs/nvidia-compatibility.md for the table.
"""

from __future__ import annotations

import enum
import warnings
from dataclasses import dataclass
from typing import Any, Callable

from pydantic import BaseModel, ConfigDict, Field

from ..errors import ConfigurationError, SearchSpaceExhaustedError  # noqa: F401 (re-exported)

# NVIDIA engine name -> ours
ENGINE_ALIASES = {"amber": "auto", "default": "auto"}

# NVIDIA amber option -> (SearchConfiguration / engine setting it maps to, how the value converts)
OPTION_MAP: dict[str, tuple[str, Callable[[Any, Any], Any]]] = {
    "seed": ("seed", lambda v, cfg: v),
    "mutation_probability": ("mutate_rate", lambda v, cfg: v),
    "reference_direction_weights": ("objective_weights", lambda v, cfg: list(v)),
    "seeded_range_probability": ("init_with_true_random_threshold", lambda v, cfg: v),
    "survivor_count": ("cull_size", lambda v, cfg: cfg.pool_size - int(v)),
}
# options with no counterpart here, and why (the warning quotes this)
UNSUPPORTED = {
    "max_refill_batches_per_generation": "our engines never stall a generation on failures (a failed candidate is "
                                         "told as failed and the generation moves on), so there is nothing to refill",
}

_registry: dict[str, Callable] = {}


class EngineConfig(BaseModel):
    """An engine by name with its options; NVIDIA's ``EngineConfig(name="amber", options={...})``."""

    model_config = ConfigDict(extra="forbid")
    name: str = "amber"
    options: dict[str, Any] = Field(default_factory=dict)


class PendingCandidatePolicy(str, enum.Enum):
    """What restore_checkpoint does with candidates asked but not told when the checkpoint was written."""

    RESUBMIT = "resubmit"  # hand them out again (ask() returns them first; start() evaluates them first)
    DISCARD = "discard"    # tell the engine they failed, so their slots are refilled with new candidates


@dataclass(frozen=True)
class BackendCandidate:
    """One candidate from ``Search.ask``: evaluate ``params``, then ``tell`` a Score with this ``param_id``."""

    param_id: Any
    params: Any


@dataclass(frozen=True)
class BackendCapabilities:
    arbitrary_batch_size: bool = True
    checkpoint: bool = True
    sealed_checkpoint: bool = False  # our checkpoints are plain JSON, readable and diffable
    multiple_outstanding_asks: bool = True


def register_backend(name: str, factory: Callable) -> None:
    """Make ``EngineConfig(name=name)`` build ``factory(space, settings)`` (an ``compileiq.engines.base.Engine``)."""
    if not isinstance(name, str) or not name:
        raise ConfigurationError(f"register_backend: name={name!r} must be a non-empty string")
    if not callable(factory):
        raise ConfigurationError(f"register_backend({name!r}): factory={factory!r} is not callable")
    _registry[name] = factory


def registered_backend(name: str) -> Callable | None:
    return _registry.get(name)


def capabilities(engine) -> BackendCapabilities:
    return BackendCapabilities(checkpoint=getattr(engine, "checkpointable", True))


def resolve_engine(engine: Any, cfg) -> tuple[Any, Any]:
    """(engine spec for make_engine, configuration with the options applied) for ``Search(engine=...)``.

    ``engine`` is a name, an EngineConfig, an Engine subclass or instance. Options that map onto
    SearchConfiguration fields override them (an explicit option wins over the default)."""
    if isinstance(engine, dict):
        engine = EngineConfig.model_validate(engine)
    if not isinstance(engine, EngineConfig):
        return ENGINE_ALIASES.get(engine, engine) if isinstance(engine, str) else engine, cfg
    name = ENGINE_ALIASES.get(engine.name, engine.name)
    updates = {}
    for key, value in engine.options.items():
        if key in OPTION_MAP:
            if value is None:
                continue  # amber's "derive it" default: ours derives it too
            field, convert = OPTION_MAP[key]
            updates[field] = convert(value, cfg)
        elif key in UNSUPPORTED:
            warnings.warn(f"EngineConfig option {key}={value!r} has no effect here: {UNSUPPORTED[key]}",
                          UserWarning, stacklevel=4)
        else:
            warnings.warn(f"EngineConfig option {key}={value!r} is not known and is ignored; known options: "
                          f"{', '.join(sorted([*OPTION_MAP, *UNSUPPORTED]))}", UserWarning, stacklevel=4)
    if updates:
        d = cfg.model_dump()
        d.update(updates)
        cfg = type(cfg).model_validate(d)
    return name, cfg


__all__ = ["EngineConfig", "PendingCandidatePolicy", "BackendCandidate", "BackendCapabilities", "register_backend",
           "SearchSpaceExhaustedError", "ENGINE_ALIASES", "OPTION_MAP", "UNSUPPORTED", "resolve_engine"]
