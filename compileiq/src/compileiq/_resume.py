"""Resume from a results CSV: an earlier run's rows, looked up by candidate identity.

A resumed run replays the same asks (same seed) and takes the scores the CSV already holds instead
of evaluating them again. Checkpoints (compileiq.checkpoint) restore the engine itself instead; see
docs/search.md, "Resume and checkpoints", for when to use which.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

from .configuration import SearchConfiguration
from .errors import ConfigurationError
from .results.csv_io import read_csv, score_columns
from .space.space import params_key
from .utils.validation import Score, metadata_dict


class ResumeLedger:
    """Rows of an earlier run's CSV, looked up by candidate identity so that none is evaluated twice."""

    def __init__(self, path, cfg: SearchConfiguration, space_id: str):
        self.path = Path(path)
        df = read_csv(self.path)
        k = len(score_columns(df))
        if k != cfg.num_objectives:
            raise ConfigurationError(f"resume_from={str(path)!r} holds {k} score column(s) but num_objectives="
                                     f"{cfg.num_objectives}; resume with the configuration of the original run")
        norm = any(c.startswith("norm_score_") for c in df.columns)
        if norm != cfg.normalize:
            raise ConfigurationError(f"resume_from={str(path)!r} was written with normalize={norm}; resume with the same setting")
        self.rows = df.to_dict("records")
        self.by_key: dict[str, Score] = {}
        self.baseline: Score | None = None
        seeds = set()
        for r in self.rows:
            meta = metadata_dict(r.get("metadata"))
            if "seed" in meta:
                seeds.add(meta["seed"])
            score = tuple(r[f"score_{i + 1}"] for i in range(k))
            s = Score(score[0] if k == 1 else score, meta.get("param_id"), r["params"], k, metadata=meta,
                      failure=meta.get("failure"), strict=False)
            if norm:
                nv = tuple(r[f"norm_score_{i + 1}"] for i in range(k))
                s.norm_score = nv[0] if k == 1 else nv
            if meta.get("baseline"):
                s.is_baseline = True
                self.baseline = s
            else:
                self.by_key[params_key(r["params"])] = s
        metas = [metadata_dict(r.get("metadata")) for r in self.rows]
        for field, mine in (("space", space_id), ("problem_type", cfg.problem_type)):
            theirs = {m[field] for m in metas if field in m}
            if theirs and theirs != {mine}:
                what = "search space" if field == "space" else f"problem_type ({', '.join(sorted(theirs))})"
                raise ConfigurationError(f"resume_from={str(path)!r} was written by a search with another {what}; "
                                         "resume with the original search space and configuration, or start a new "
                                         "results file")
        ids = [m.get("param_id") for m in metas]
        self.next_id = max([i for i in ids if isinstance(i, int)], default=-1) + 1
        self.seed = None
        if len(seeds) == 1:
            self.seed = seeds.pop()
        if cfg.seed is not None and self.seed is not None and cfg.seed != self.seed:
            warnings.warn(f"resume_from={str(path)!r} was run with seed={self.seed} but this search has seed={cfg.seed}: "
                          "candidates will differ from the original run (ones already in the CSV are still not "
                          "evaluated again)", UserWarning, stacklevel=3)
        if cfg.seed is None and self.seed is None and self.rows:
            warnings.warn(f"resume_from={str(path)!r} records no seed; the resumed run cannot replay the original "
                          "candidates exactly (ones already in the CSV are still not evaluated again)", UserWarning,
                          stacklevel=3)

    def lookup(self, params: Any) -> Score | None:
        s = self.by_key.get(params_key(params))
        if s is None:
            return None
        return Score(s.score, s.param_id, s.params, s.num_objectives, norm_score=s.norm_score, metadata=s.metadata,
                     failure=s.failure, strict=False)
