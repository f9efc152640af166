"""Search-space internals: DSL parameter kinds and the compiled, gene-level space engines search."""

from .params import ChoiceParam, LiteralParam, Param, RangeParam
from .space import Component, DictComponent, Gene, Genotype, SearchSpace, params_key

__all__ = ["Param", "RangeParam", "ChoiceParam", "LiteralParam", "SearchSpace", "Gene", "Genotype",
           "Component", "DictComponent", "params_key"]
