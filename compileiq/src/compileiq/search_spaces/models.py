"""The parameter models the DSL returns (NVIDIA's ``compileiq.search_spaces.models``).

``range`` / ``choice`` / ``literal`` / ``log_sampling`` return these pydantic models, with NVIDIA's
attributes (``type``, ``low``, ``high``, ``step``, ``seed_low``, ``seed_high``, ``vals``, ``value``,
``knockout_threshold`` = the probability that the key is *kept*). Each is checked when it is made
(the domain is built then, so a bad step or an empty choice fails on the line that wrote it) and
carries the compiled parameter the search uses. ``model_dump(by_alias=True)`` gives NVIDIA's file
format (``seed-low`` / ``seed-high``).
"""

from __future__ import annotations

from typing import Any, Literal, Union

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from ..space.params import Param, make_choice, make_literal, make_range


class ParamConfigBase(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="forbid", frozen=True)
    knockout_threshold: float | None = None
    _param: Param | None = PrivateAttr(default=None)

    @property
    def knockout_prob(self) -> float | None:
        """The probability that the key is left out of a candidate (1 - knockout_threshold)."""
        return None if self.knockout_threshold is None else 1.0 - self.knockout_threshold

    @property
    def values(self) -> tuple:
        """Every value the parameter can take, in order (the range's inclusive grid, the choices)."""
        return self.to_param().values

    @property
    def knockable(self) -> bool:
        return self.to_param().knockable

    @property
    def seed_window(self) -> tuple[int, int] | None:
        return self.to_param().seed_window

    def describe(self) -> dict:
        return self.to_param().describe()

    @classmethod
    def wrap(cls, param: Param, **fields):
        """The model for a parameter the DSL already built and checked (its exact knockout_prob kept)."""
        m = cls.model_construct(**fields)
        object.__setattr__(m, "_param", param)
        return m

    def to_param(self) -> Param:
        if self._param is None:
            object.__setattr__(self, "_param", self._build())
        return self._param

    def _build(self) -> Param:
        raise NotImplementedError

    @model_validator(mode="after")
    def _check(self):
        self.to_param()  # the domain is built (and checked) now, not when the search starts
        return self


class RangeParamConfig(ParamConfigBase):
    type: Literal["range"] = "range"
    low: int | float
    high: int | float
    step: int | float = 1
    seed_low: int | float | None = Field(default=None, validation_alias=AliasChoices("seed-low", "seed_low"),
                                         serialization_alias="seed-low")
    seed_high: int | float | None = Field(default=None, validation_alias=AliasChoices("seed-high", "seed_high"),
                                          serialization_alias="seed-high")

    def _build(self) -> Param:
        return make_range(self.low, self.high, self.step, self.knockout_prob, self.seed_low, self.seed_high)


class ChoiceParamConfig(ParamConfigBase):
    type: Literal["enum"] = "enum"
    vals: list[Any]

    def _build(self) -> Param:
        return make_choice(self.vals, self.knockout_prob)


class LiteralParamConfig(ParamConfigBase):
    type: Literal["literal"] = "literal"
    value: int | float | str

    def _build(self) -> Param:
        return make_literal(self.value, self.knockout_prob)


ParamConfig = Union[RangeParamConfig, ChoiceParamConfig, LiteralParamConfig]

__all__ = ["ParamConfigBase", "RangeParamConfig", "ChoiceParamConfig", "LiteralParamConfig", "ParamConfig"]
