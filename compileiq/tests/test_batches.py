"""The records behind ask/tell (pending candidates, batches, told members) and their checkpoint encoding."""

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

import compileiq.search_spaces.base as ss
from compileiq import BASELINE_CONFIG, INVALID_SCORE, Search
from compileiq._batches import Batch, Outcome, PendingBaseline, PendingTrial, Told
from compileiq.utils.validation import Score

# Written by the code before these records existed (tuples, batch -1 for the baseline): a normalize=True
# search with pool_size=6, seed=3 over SPACE, asked once, ids 0 and 1 told; the baseline and 2..5 pending.
V1_CHECKPOINT = Path(__file__).parent / "data" / "checkpoint_v1_pending_baseline.json"
SPACE = {"a": ss.range(0, 30), "b": ss.choice([1, 2, 3, 4])}


def objective(p):
    return (p.get("a", 3) - 17) ** 2 + p.get("b", 1) + 1


def restore(path, policy="resubmit"):
    return Search.from_checkpoint(path, objective_function=objective, search_space=SPACE, worker_type="manual",
                                  pending_policy=policy)


def test_the_baseline_is_its_own_record_and_a_trial_always_has_a_batch():
    b = PendingBaseline()
    assert b.is_baseline and b.params is BASELINE_CONFIG
    t = PendingTrial({"a": 1}, 0, (1, 0))
    assert not t.is_baseline and t.batch == 0
    for bad in (-1, None, True, 1.0):  # -1 was the old marker for the baseline: never a trial's batch
        with pytest.raises(ValueError, match="batch number >= 0"):
            PendingTrial({"a": 1}, bad, (1, 0))
    with pytest.raises(dataclasses.FrozenInstanceError):
        t.batch = 1


def test_a_discarded_member_is_invalid_has_no_row_and_says_so():
    t = Told.discarded(7, {"a": 1}, 2)
    assert t.outcome is Outcome.DISCARDED and t.is_discarded and t.row is None
    assert t.score.param_id == 7 and t.score.score == (INVALID_SCORE, INVALID_SCORE) and t.score.failure == "discarded"
    with pytest.raises(ValueError, match="no results row"):
        Told(t.score, {"generation": 0}, Outcome.DISCARDED)
    with pytest.raises(ValueError, match="failure='discarded'"):
        Told(Score(1.0, 7, {"a": 1}, 1), None, Outcome.DISCARDED)
    scored = Score(1.0, 8, {"a": 2}, 1)
    assert not Told(scored).is_discarded
    # a checkpoint keeps only the Score: its failure is what brings the outcome back
    assert Told.restored(t.score, None).is_discarded and Told.restored(scored, {"r": 1}).row == {"r": 1}


def test_a_batch_pairs_genotypes_with_ids_and_answers_in_ask_order():
    with pytest.raises(ValueError, match="2 genotypes for 3 param_ids"):
        Batch(0, [(0,), (1,)], [4, 5, 6])
    b = Batch(2, [(0,), (1,)], [4, 5])
    assert b.genotype_of(5) == (1,) and not b.complete
    b.told[5] = Told(Score(2.0, 5, {}, 1))
    b.told[4] = Told.discarded(4, {}, 1)
    assert b.complete and [t.score.param_id for t in b.in_ask_order()] == [4, 5]


def test_a_v1_checkpoint_loads_into_the_records_and_saves_back_byte_for_byte(tmp_path):
    s = restore(V1_CHECKPOINT)
    assert isinstance(s._pending["baseline"], PendingBaseline)
    trials = {pid: e for pid, e in s._pending.items() if pid != "baseline"}
    assert list(trials) == [2, 3, 4, 5] and all(isinstance(e, PendingTrial) and e.batch == 0 for e in trials.values())
    assert trials[2].genotype == s._batches[0].genotype_of(2) and trials[2].params == {"a": 20, "b": 1}
    assert [t.outcome for t in s._batches[0].told.values()] == [Outcome.SCORED, Outcome.SCORED]
    s.save_checkpoint(tmp_path / "again.json")
    assert (tmp_path / "again.json").read_text() == V1_CHECKPOINT.read_text()  # same file format, same bytes
    assert json.loads(V1_CHECKPOINT.read_text())["payload"]["pending"][0] == {"param_id": "baseline", "params": {},
                                                                             "batch": -1}


def test_discarded_members_wait_for_the_baseline_through_a_checkpoint_and_never_become_rows(tmp_path):
    # discard: trials 2..5 are told as failed, but with normalize=True the batch waits for the baseline
    d = restore(V1_CHECKPOINT, "discard")
    assert [c.param_id for c in d.pending_candidates] == ["baseline"] and d.engine.generation == 0
    assert [t.outcome for t in d._batches[0].in_ask_order()] == [Outcome.SCORED] * 2 + [Outcome.DISCARDED] * 4
    d.save_checkpoint(tmp_path / "discarded.json")
    payload = json.loads((tmp_path / "discarded.json").read_text())["payload"]
    assert [payload["batches"]["0"]["told"][str(i)]["failure"] for i in range(6)] == [None] * 2 + ["discarded"] * 4
    shutil.copy(tmp_path / "discarded.json", tmp_path / "copy.json")
    again = restore(tmp_path / "copy.json")  # the discarded members come back discarded, not as failed trials
    assert [t.outcome for t in again._batches[0].in_ask_order()] == [Outcome.SCORED] * 2 + [Outcome.DISCARDED] * 4
    again.tell({"baseline": objective(BASELINE_CONFIG)})
    assert again.engine.generation == 1 and not again._batches
    ids = [json.loads(m)["param_id"] for m in again.result.df_results["metadata"]]
    assert sorted(map(str, ids)) == ["0", "1", "baseline"]


def test_start_evaluates_the_pending_trials_of_a_v1_checkpoint_in_their_generation():
    s = Search.from_checkpoint(V1_CHECKPOINT, objective_function=objective, search_space=SPACE,
                               worker_type="sequential", disable_progress_bar=True)
    df = s.start().df_results
    first = df[df["generation"] == 0]
    ids = sorted(str(json.loads(m)["param_id"]) for m in first["metadata"])
    assert ids == ["0", "1", "2", "3", "4", "5", "baseline"] and not s._pending and not s._batches
    assert s.engine.generation == 4  # the checkpoint's generations=4: the restored batch was the first of them


@pytest.mark.parametrize("policy", ["resubmit", "discard"])
def test_a_restored_pending_baseline_is_handed_out_again(policy):
    # Before, ask() after a restore never returned the pending baseline: with normalize=True a plain ask/tell
    # loop then never told it and no batch completed.
    s = restore(V1_CHECKPOINT, policy)
    asked = s.ask(2)
    trials = ["2", "3"] if policy == "resubmit" else [str(c.param_id) for c in asked[1:]]
    assert [str(c.param_id) for c in asked] == ["baseline"] + trials and len(asked) == 3
    assert asked[0].params == BASELINE_CONFIG
    rest = s.ask(2) if policy == "resubmit" else []
    assert [str(c.param_id) for c in rest] == (["4", "5"] if policy == "resubmit" else [])
    s.tell({c.param_id: objective(c.params) for c in asked + rest})
    # the restored batch completes with the baseline's score; under discard the two new trials are a batch too
    assert s.engine.generation == (1 if policy == "resubmit" else 2)
    assert not s._pending and not s._batches
