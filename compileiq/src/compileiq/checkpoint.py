"""Checkpoints: a search's whole state in one JSON file, restored exactly.

    search.save_checkpoint("run.ckpt.json")                  # or Search.start(checkpoint_path=...)
    search = Search.from_checkpoint("run.ckpt.json", objective_function=objective, search_space=space)

What a checkpoint holds: the engine's state (``engines.state``: random state, population, model,
every candidate ever issued), the result rows, the baseline, the candidates asked and not yet
told, and what identifies the search (configuration, seed, a hash of the search space). A
restored search asks exactly the candidates the original would have asked next.

How this relates to ``resume_from=`` (a results CSV): resume replays the run from the seed and
takes the scores the CSV holds instead of evaluating them again; it needs the same seed and tell
order, works only with start(), and re-runs the engine from generation 0. A checkpoint needs none
of that: it works with ask/tell too, keeps pending candidates, and continues in O(1).

Not supported, with a clear error: engines that cannot write their state (the Optuna adapter: its
study lives in Optuna's memory) and NVIDIA's sealed checkpoints (their engine state is encrypted
for their closed engine; nothing here can read it). The file is written atomically (a temporary
file, fsync, rename) with mode 0600, and carries a sha256 of its content so that a truncated or
hand-edited file is refused instead of restoring something else.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from ._batches import Batch, Pending, PendingBaseline, PendingTrial, Told
from .errors import CheckpointError, ConfigurationError

FORMAT = "compileiq-open-checkpoint-v1"
NVIDIA_FORMAT = "compileiq-checkpoint-v1"
# configuration fields that change what the engine proposes: a restore must not change them
_SAME = ("problem_type", "normalize", "num_objectives", "pool_size", "cull_size", "mutate_rate", "objective_weights",
         "init_with_true_random_threshold")


def _digest(payload: dict) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _score_state(s) -> dict | None:
    if s is None:
        return None
    return {"score": list(s.values()), "norm_score": list(s.norm_values()) if s.norm_values() else None,
            "param_id": s.param_id, "params": s.params, "metadata": s.metadata, "is_baseline": s.is_baseline,
            "failure": s.failure}


def _score_from(d: dict | None, k: int):
    from .utils.validation import Score
    if d is None:
        return None
    vals = d["score"][0] if k == 1 else tuple(d["score"])
    s = Score(vals, d["param_id"], d["params"], k, metadata=d["metadata"], is_baseline=d["is_baseline"],
              failure=d["failure"], strict=False)
    if d["norm_score"] is not None:
        s.norm_score = d["norm_score"][0] if k == 1 else tuple(d["norm_score"])
    return s


# How the file marks the baseline's pending entry: it belongs to no batch. The in-memory record is
# PendingBaseline (_batches.py); the number stays in the file so that every v1 checkpoint loads.
_BASELINE_BATCH = -1


def _pending_state(param_id, entry: Pending) -> dict:
    batch = _BASELINE_BATCH if entry.is_baseline else entry.batch
    return {"param_id": param_id, "params": entry.params, "batch": batch}


def _pending_from(d: dict, batches: dict[int, Batch]) -> Pending:
    if d["batch"] == _BASELINE_BATCH:
        return PendingBaseline()
    batch = batches[d["batch"]]  # a pending trial's batch is never complete, so the file still holds it
    return PendingTrial(d["params"], d["batch"], batch.genotype_of(d["param_id"]))


def _batch_state(batch: Batch) -> dict:
    return {"genos": [list(g) for g in batch.genotypes], "ids": batch.ids, "generation": batch.generation,
            "told": {str(pid): _score_state(t.score) for pid, t in batch.told.items()}}


def _batch_from(d: dict, k: int, rows_by_id: dict) -> Batch:
    """A batch as saved; each told member gets back its results row (the same dict as in the ledger, so
    a baseline told after the restore still rewrites it) and, if it was discarded, its outcome."""
    batch = Batch(d["generation"], [tuple(g) for g in d["genos"]], d["ids"])
    for sd in d["told"].values():
        s = _score_from(sd, k)
        batch.told[s.param_id] = Told.restored(s, rows_by_id.get(s.param_id))
    return batch


def read_checkpoint(path) -> dict:
    p = Path(path)
    if not p.is_file():
        raise CheckpointError(f"checkpoint {p} does not exist; write one with Search.save_checkpoint(path) or "
                              "Search.start(checkpoint_path=path)")
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise CheckpointError(f"checkpoint {p} is not JSON ({exc}); it may be truncated: restore an earlier copy") from None
    if not isinstance(doc, dict):
        raise CheckpointError(f"checkpoint {p} is not a CompileIQ checkpoint (a JSON object was expected)")
    if doc.get("format") == NVIDIA_FORMAT or "sealed_blob" in doc:
        raise CheckpointError(
            f"checkpoint {p} was written by NVIDIA's CompileIQ ({doc.get('engine', 'amber')} engine): its engine state "
            "is sealed (encrypted) for NVIDIA's closed engine and cannot be read here. Its results can: load the run's "
            "dump_results CSV with SearchResult.from_csv, or continue it with Search(..., resume_from=that_csv)")
    if doc.get("format") != FORMAT:
        raise CheckpointError(f"checkpoint {p}: format {doc.get('format')!r} is not {FORMAT!r}; is this a CompileIQ "
                              "checkpoint?")
    payload = doc.get("payload")
    if not isinstance(payload, dict) or doc.get("sha256") != _digest(payload):
        raise CheckpointError(f"checkpoint {p}: its content does not match its sha256 (truncated or edited); restore "
                              "an earlier copy or start the search again")
    return payload


class CheckpointMixin:
    """Mixed into Search."""

    def _check_checkpointable(self) -> None:
        if not getattr(self.engine, "checkpointable", True):
            raise CheckpointError(
                f"the {getattr(self.engine, 'name', type(self.engine).__name__)!r} engine cannot be checkpointed (its "
                "state lives inside Optuna's study); use engine='auto' (or 'ga' / 'nsga2' / 'random'), or continue a "
                "run from its results CSV with resume_from=")

    def _checkpoint_payload(self) -> dict:
        from .engines.state import dump_state
        self._check_checkpointable()
        batches = {str(b): _batch_state(v) for b, v in self._batches.items()}
        pending = [_pending_state(pid, entry) for pid, entry in self._pending.items()]
        worker = self.worker_type
        return {
            "engine": getattr(self.engine, "name", type(self.engine).__name__),
            "engine_spec": self._engine_spec if isinstance(self._engine_spec, str) else None,
            "engine_state": dump_state(self.engine),
            "search_space_identity": self._space_id,
            "search_config": self.search_config.model_dump(),
            "seed": self.seed,
            "exit_on_failure": self.exit_on_failure,
            "worker_type_name": "native" if worker is None else getattr(worker, "value", getattr(worker, "__name__",
                                                                                                 type(worker).__name__)),
            "tracker_type_name": type(self.tracker).__name__,
            "result_ledger": self._rows,
            "baseline": _score_state(self._baseline),
            "next_id": self._next_id,
            "generation": self._generation,
            "next_batch": self._next_batch,
            "batches": batches,
            "pending": pending,
        }

    def save_checkpoint(self, path: str | os.PathLike, require_no_pending: bool = False) -> Path:
        """Write the search's state to ``path`` (JSON, atomically, mode 0600); returns the path.

        ``require_no_pending=True`` refuses while candidates are asked and not told (they would be
        evaluated again, or dropped, after a restore: see ``restore_checkpoint``)."""
        if require_no_pending and self._pending:
            raise CheckpointError(f"save_checkpoint(require_no_pending=True): {len(self._pending)} candidate(s) are asked "
                                  f"and not told yet ({', '.join(map(str, list(self._pending)[:5]))}); tell their scores "
                                  "first, or save without require_no_pending")
        payload = self._checkpoint_payload()
        doc = {"format": FORMAT, "sha256": _digest(payload), "payload": payload}
        try:
            text = json.dumps(doc, separators=(",", ":"), default=_not_json)
        except _NotJSON as exc:
            raise CheckpointError(f"save_checkpoint: {exc}") from None
        from .utils.fs import atomic_write
        return atomic_write(Path(path), text, fsync=True, mode=0o600)

    def restore_checkpoint(self, path: str | os.PathLike, pending_policy: str = "resubmit",
                           allow_unsafe_provenance_mismatch: bool = False) -> None:
        """Load a checkpoint into this search (built with the same space and configuration).

        ``pending_policy``: "resubmit" hands candidates that were pending out again (``ask`` returns
        them first, ``start`` evaluates them first); "discard" tells the engine they failed, so new
        candidates take their place. ``allow_unsafe_provenance_mismatch=True`` (or
        CIQ_UNSAFE_ALLOW_CHECKPOINT_PROVENANCE_MISMATCH=1) turns a different configuration into a warning."""
        from .backends import PendingCandidatePolicy
        from .engines.state import load_state
        try:
            policy = PendingCandidatePolicy(getattr(pending_policy, "value", pending_policy))
        except ValueError:
            raise ConfigurationError(f"pending_policy={pending_policy!r} must be 'resubmit' or 'discard'") from None
        payload = read_checkpoint(path)
        self._check_checkpointable()
        self._check_provenance(payload, path, allow_unsafe_provenance_mismatch)
        self.seed = payload["seed"]
        fresh = self._new_engine(self._engine_spec)
        try:
            load_state(fresh, payload["engine_state"])
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise CheckpointError(f"checkpoint {path}: the engine state does not fit the {payload['engine']!r} engine "
                                  f"({type(exc).__name__}: {exc})") from None
        k = self.k
        self.engine = fresh
        self._rows = list(payload["result_ledger"])
        self._baseline = _score_from(payload["baseline"], k)
        self._next_id = payload["next_id"]
        self._generation = payload["generation"]
        self._next_batch = payload["next_batch"]
        from .utils.validation import metadata_dict
        by_row = {metadata_dict(row.get("metadata")).get("param_id"): row for row in self._rows}
        self._batches = {int(b): _batch_from(v, k, by_row) for b, v in payload["batches"].items()}
        self._pending = {d["param_id"]: _pending_from(d, self._batches) for d in payload["pending"]}
        trials = [pid for pid, entry in self._pending.items() if not entry.is_baseline]
        # A pending baseline is handed out again under either policy: with normalize=True no batch
        # completes before its score is in, and discarding it would leave them waiting forever.
        self._resubmit = [pid for pid, entry in self._pending.items() if entry.is_baseline]
        if policy is PendingCandidatePolicy.RESUBMIT:
            self._resubmit += trials
        else:
            self._settle([Told.discarded(pid, self._pending[pid].params, k) for pid in trials])

    def _check_provenance(self, payload: dict, path, allow: bool) -> None:
        from . import _env
        problems = []
        if payload["search_space_identity"] != self._space_id:
            problems.append("it was written for another search space")
        theirs = payload["search_config"]
        mine = self.search_config.model_dump()
        for f in _SAME:
            if theirs.get(f) != mine.get(f):
                problems.append(f"{f} was {theirs.get(f)!r}, this search has {mine.get(f)!r}")
        if payload["engine"] != getattr(self.engine, "name", type(self.engine).__name__):
            problems.append(f"it holds the {payload['engine']!r} engine, this search uses "
                            f"{getattr(self.engine, 'name', type(self.engine).__name__)!r}")
        if not problems:
            return
        text = f"checkpoint {path} does not match this search: " + "; ".join(problems)
        if payload["search_space_identity"] != self._space_id or payload["engine"] != getattr(self.engine, "name", None):
            raise CheckpointError(text + ". Restore with the search space, engine and configuration of the original run")
        if allow or _env.unsafe_checkpoint_mismatch():
            import warnings
            from .errors import CheckpointCompatibilityWarning
            warnings.warn(text + " (restored anyway: allow_unsafe_provenance_mismatch)", CheckpointCompatibilityWarning,
                          stacklevel=3)
            return
        raise CheckpointError(text + ". Restore with the configuration of the original run, or pass "
                              "allow_unsafe_provenance_mismatch=True to continue with this one")

    @classmethod
    def from_checkpoint(cls, path: str | os.PathLike, objective_function=None, search_space: Any = None,
                        pending_policy: str = "resubmit", allow_unsafe_provenance_mismatch: bool = False, **kwargs):
        """A Search continuing a checkpoint. ``search_space`` must be the original one (checked by hash);
        the configuration comes from the checkpoint unless ``search_config=`` is given."""
        if objective_function is None or search_space is None:
            raise ConfigurationError("Search.from_checkpoint(path, objective_function=..., search_space=...): both are "
                                     "needed (neither can be stored in a checkpoint: a function and a provider are code)")
        payload = read_checkpoint(path)
        kwargs.setdefault("search_config", payload["search_config"])
        kwargs.setdefault("exit_on_failure", payload["exit_on_failure"])
        if payload.get("engine_spec"):
            kwargs.setdefault("engine", payload["engine_spec"])
        search = cls(objective_function, search_space, **kwargs)
        search.restore_checkpoint(path, pending_policy, allow_unsafe_provenance_mismatch)
        return search


class _NotJSON(TypeError):
    pass


def _not_json(v):
    raise _NotJSON(f"{type(v).__name__} {v!r:.80} in the search's results or candidates cannot be written as JSON; "
                   "candidates and metadata must be plain data")


__all__ = ["CheckpointMixin", "read_checkpoint", "FORMAT"]
