"""Checkpoints restore the engine exactly; what they refuse, they refuse clearly."""

import json
import os
import stat

import pytest

import compileiq.search_spaces.base as ss
from compileiq import Search, SearchConfiguration
from compileiq.errors import CheckpointError, CompileIQError
from compileiq.utils.validation import Score
from compileiq.worker import SequentialWorker

SPACE = {"a": ss.range(0, 30), "b": ss.choice([1, 2, 3, 4]), "c": ss.literal("-x", knockout_prob=0.5),
         "d": {"e": ss.range(0.0, 1.0, 0.125)}}


def objective(p):
    return (p["a"] - 17) ** 2 + p["b"] + (0 if "c" in p else 3) + abs(p["d"]["e"] - 0.5)


def two(p):
    return objective(p), p["b"] * 10 - p["a"]


def drive(search, generations, fn=objective, k=1):
    """The documented manual loop; scores told in reverse ask order, so order independence is tested too."""
    asked = []
    for _ in range(generations):
        cands = search.ask()
        asked.append([c.params for c in cands])
        search.tell([Score(score=fn(c.params), param_id=c.param_id, num_objectives=k) for c in reversed(cands)])
    return asked


@pytest.mark.parametrize("k", [1, 2])
def test_a_restored_search_asks_what_the_original_would_have(tmp_path, k):
    fn = objective if k == 1 else two
    cfg = SearchConfiguration(generations=8, pool_size=8, num_objectives=k, seed=11)
    make = lambda: Search(fn, SPACE, cfg, worker_type="manual")  # noqa: E731
    uninterrupted = drive(make(), 8, fn, k)
    first = make()
    head = drive(first, 4, fn, k)
    first.save_checkpoint(tmp_path / "run.ckpt")
    restored = Search.from_checkpoint(tmp_path / "run.ckpt", objective_function=fn, search_space=SPACE,
                                      worker_type="manual")
    assert head + drive(restored, 4, fn, k) == uninterrupted
    df = restored.result.df_results  # every row, from both halves; told in reverse, so sorted by param_id here
    order = sorted(range(len(df)), key=lambda i: json.loads(df["metadata"][i])["param_id"])
    assert [df["params"][i] for i in order] == [p for gen in uninterrupted for p in gen]
    assert stat.S_IMODE(os.stat(tmp_path / "run.ckpt").st_mode) == 0o600


class Interrupt(SequentialWorker):
    """Evaluates, but the Ctrl-C arrives while the fourth generation runs."""
    batches = 0

    def run(self, **kw):
        type(self).batches += 1
        if type(self).batches == 4:
            raise KeyboardInterrupt
        return super().run(**kw)


def test_start_writes_a_checkpoint_every_generation_and_continues_exactly(tmp_path):
    cfg = SearchConfiguration(generations=6, pool_size=8, seed=5)
    whole = Search(objective, SPACE, cfg, worker_type=SequentialWorker, disable_progress_bar=True).start()
    ckpt = tmp_path / "search.ckpt"
    with pytest.raises(KeyboardInterrupt):
        Search(objective, SPACE, cfg, worker_type=Interrupt, disable_progress_bar=True).start(checkpoint_path=ckpt)
    saved = json.loads(ckpt.read_text())["payload"]
    assert saved["generation"] == 3 and len(saved["result_ledger"]) == 24 and saved["pending"] == []
    again = Search.from_checkpoint(ckpt, objective_function=objective, search_space=SPACE, worker_type=SequentialWorker,
                                   disable_progress_bar=True).start(checkpoint_path=ckpt)
    cols = ["generation", "score_1", "params"]
    assert again.df_results[cols].equals(whole.df_results[cols])
    assert json.loads(ckpt.read_text())["payload"]["generation"] == 6


def test_pending_candidates_are_resubmitted_or_discarded(tmp_path):
    cfg = SearchConfiguration(generations=4, pool_size=6, seed=9)
    s = Search(objective, SPACE, cfg, worker_type="manual")
    drive(s, 1)
    pending = s.ask()
    s.tell([Score(score=objective(pending[0].params), param_id=pending[0].param_id, num_objectives=1)])
    with pytest.raises(CheckpointError, match="5 candidate\\(s\\) are asked and not told"):
        s.save_checkpoint(tmp_path / "c.ckpt", require_no_pending=True)
    s.save_checkpoint(tmp_path / "c.ckpt")
    r = Search.from_checkpoint(tmp_path / "c.ckpt", objective_function=objective, search_space=SPACE, worker_type="manual")
    assert r.pending_candidates == pending[1:]
    again = r.ask(num_samples=3)
    assert again == pending[1:4]  # resubmitted first, same ids and params
    d = Search.from_checkpoint(tmp_path / "c.ckpt", objective_function=objective, search_space=SPACE,
                               worker_type="manual", pending_policy="discard")
    assert d.pending_candidates == [] and d.engine.generation == 2  # the half-told batch is closed
    fresh = d.ask()
    assert {c.param_id for c in fresh}.isdisjoint(c.param_id for c in pending) and len(fresh) == 6
    with pytest.raises(ValueError, match="pending_policy"):
        d.restore_checkpoint(tmp_path / "c.ckpt", pending_policy="keep")


def test_refusals_name_the_problem(tmp_path):
    cfg = SearchConfiguration(generations=2, pool_size=6, seed=1)
    s = Search(objective, SPACE, cfg, worker_type="manual")
    drive(s, 1)
    path = s.save_checkpoint(tmp_path / "ok.ckpt")
    with pytest.raises(CheckpointError, match="another search space"):
        Search.from_checkpoint(path, objective_function=objective, search_space={"a": ss.range(0, 5)})
    with pytest.raises(CheckpointError, match="pool_size was 6, this search has 8"):
        Search.from_checkpoint(path, objective_function=objective, search_space=SPACE,
                               search_config=SearchConfiguration(generations=2, pool_size=8, seed=1))
    with pytest.warns(UserWarning, match="restored anyway"):
        Search.from_checkpoint(path, objective_function=objective, search_space=SPACE, allow_unsafe_provenance_mismatch=True,
                               search_config=SearchConfiguration(generations=2, pool_size=8, seed=1))
    doc = json.loads(path.read_text())
    doc["payload"]["next_id"] += 1
    (tmp_path / "edited.ckpt").write_text(json.dumps(doc))
    with pytest.raises(CheckpointError, match="does not match its sha256"):
        s.restore_checkpoint(tmp_path / "edited.ckpt")
    (tmp_path / "cut.ckpt").write_text(path.read_text()[:100])
    with pytest.raises(CheckpointError, match="not JSON"):
        s.restore_checkpoint(tmp_path / "cut.ckpt")
    (tmp_path / "nvidia.ckpt").write_text(json.dumps({"format": "compileiq-checkpoint-v1", "engine": "amber",
                                                       "sealed_blob": "AAAA", "sealed_blob_sha256": "00"}))
    with pytest.raises(CheckpointError, match="sealed .*NVIDIA.*resume_from"):
        s.restore_checkpoint(tmp_path / "nvidia.ckpt")
    with pytest.raises(CheckpointError, match="does not exist"):
        s.restore_checkpoint(tmp_path / "missing.ckpt")
    with pytest.raises(CompileIQError, match="objective_function=.*search_space="):
        Search.from_checkpoint(path)
    assert s.pending_candidates == [] and len(s.result) == 6  # a refused restore changed nothing


def test_the_optuna_adapter_cannot_checkpoint(tmp_path):
    pytest.importorskip("optuna")
    s = Search(objective, SPACE, SearchConfiguration(generations=2, pool_size=6, seed=1), worker_type="manual",
               engine="optuna-tpe")
    with pytest.raises(CheckpointError, match="'optuna-tpe' engine cannot be checkpointed.*resume_from"):
        s.save_checkpoint(tmp_path / "x.ckpt")
    with pytest.raises(CheckpointError, match="cannot be checkpointed"):
        Search(objective, SPACE, SearchConfiguration(generations=1, pool_size=6), engine="optuna-tpe",
               worker_type=SequentialWorker).start(checkpoint_path=tmp_path / "x.ckpt")
    assert not (tmp_path / "x.ckpt").exists()
