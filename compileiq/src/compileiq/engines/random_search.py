"""Uniform random search over the priors, never repeating a candidate: the baseline every engine must beat."""

from __future__ import annotations

from typing import Sequence

from .base import Engine, Objectives
from .ga import TellBook, batch_size


class RandomEngine(Engine):
    name = "random"
    multi_objective = True  # it ignores scores, so any number of objectives is fine

    def __init__(self, space, settings):
        super().__init__(space, settings)
        self.book = TellBook(space, settings.num_objectives)

    def ask(self, n: int | None = None) -> list:
        n = batch_size(n, self.settings)
        # generation 0 honours the seed windows like every other engine; later draws are uniform
        out = self.initial(n) if not self.book.issued_any else self.fresh(n)
        self.book.issued(out)
        return out

    def tell(self, genotypes: Sequence, objectives: Sequence[Objectives | None]) -> None:
        self.book.take(genotypes, objectives)
        self.generation += 1
