"""The records Search, AskTell and CheckpointMixin share: what is pending, what each batch holds.

Every asked candidate is pending until its score is told: a ``PendingTrial`` (asked from the
engine, so it belongs to a batch and has a genotype) or the ``PendingBaseline`` (normalize=True:
BASELINE_CONFIG, which belongs to no batch and which the engine never learns). A ``Batch`` is the
candidates one ask issued; the engine is told it whole and in ask order once every member is
``Told``. A told member is either scored (the engine learns its score, a results row records it) or
discarded (``restore_checkpoint(pending_policy="discard")``: the engine learns it failed, and no
row, tracker or diagnosis ever sees it).

These are in-memory records. The checkpoint file keeps its own encoding of them (checkpoint.py):
a baseline's pending entry is written as batch -1, a discarded member as a Score with failure
"discarded", so that checkpoints written before these records existed still load.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, ClassVar

from .utils.validation import BASELINE_CONFIG, INVALID_SCORE, Score

DISCARDED_FAILURE = "discarded"  # the Score.failure a discarded member carries (and checkpoints store)


@dataclass(frozen=True, slots=True)
class PendingBaseline:
    """The baseline candidate, asked and not told yet."""

    is_baseline: ClassVar[bool] = True

    @property
    def params(self) -> dict:
        return BASELINE_CONFIG  # always the one shared {}, as NVIDIA hands it out


@dataclass(frozen=True, slots=True)
class PendingTrial:
    """A candidate from the engine, asked and not told yet: its params, batch and genotype."""

    params: Any
    batch: int
    genotype: Any

    is_baseline: ClassVar[bool] = False

    def __post_init__(self):
        # a batch number is a key of Search._batches, numbered from 0; anything else is a bookkeeping bug
        if isinstance(self.batch, bool) or not isinstance(self.batch, int) or self.batch < 0:
            raise ValueError(f"PendingTrial.batch={self.batch!r} must be a batch number >= 0 (the baseline is "
                             "PendingBaseline, not a batch)")


Pending = PendingBaseline | PendingTrial


class Outcome(enum.Enum):
    """How a batch member was told."""

    SCORED = "scored"         # a Score from the objective (a failed one included): the engine learns it
    DISCARDED = "discarded"   # dropped when a checkpoint was restored: the engine learns it as failed, nothing else


@dataclass(frozen=True, slots=True)
class Told:
    """A batch member whose score is in. ``row`` is its results row when ask/tell wrote one (a baseline
    told after it rewrites the row in place with the normalised score); None under start()."""

    score: Score
    row: dict | None = None
    outcome: Outcome = Outcome.SCORED

    def __post_init__(self):
        # a checkpoint stores only the Score, so a discarded member must be recognisable from it alone
        if self.outcome is Outcome.DISCARDED and (self.score.failure != DISCARDED_FAILURE or self.row is not None):
            raise ValueError(f"Told: a discarded member carries failure={DISCARDED_FAILURE!r} and no results row "
                             f"(got failure={self.score.failure!r}, row={'set' if self.row is not None else None})")

    @classmethod
    def discarded(cls, param_id: Any, params: Any, num_objectives: int) -> "Told":
        score = Score(INVALID_SCORE, param_id, params, num_objectives, failure=DISCARDED_FAILURE, strict=False)
        return cls(score, None, Outcome.DISCARDED)

    @classmethod
    def restored(cls, score: Score, row: dict | None) -> "Told":
        """The record for a Score read back from a checkpoint, where a discarded member is stored as a
        Score whose failure is "discarded" (and has no row)."""
        if score.failure == DISCARDED_FAILURE:
            return cls(score, None, Outcome.DISCARDED)
        return cls(score, row)

    @property
    def is_discarded(self) -> bool:
        return self.outcome is Outcome.DISCARDED


@dataclass(slots=True)
class Batch:
    """The candidates one ask issued, in ask order, and those of them told so far."""

    generation: int
    genotypes: list
    ids: list
    told: dict[Any, Told] = field(default_factory=dict)

    def __post_init__(self):
        if len(self.genotypes) != len(self.ids):
            raise ValueError(f"Batch: {len(self.genotypes)} genotypes for {len(self.ids)} param_ids; one each")

    @property
    def complete(self) -> bool:
        return len(self.told) == len(self.ids)

    def genotype_of(self, param_id: Any):
        return self.genotypes[self.ids.index(param_id)]

    def in_ask_order(self) -> list[Told]:
        """Every member's record, in ask order (the batch must be complete)."""
        return [self.told[pid] for pid in self.ids]


__all__ = ["PendingBaseline", "PendingTrial", "Pending", "Outcome", "Told", "Batch", "DISCARDED_FAILURE"]
