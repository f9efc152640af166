"""Search end to end with the in-process worker (fast), plus the process worker where it matters."""

import json
import math

import pytest

import compileiq.search_spaces.base as ss
from compileiq import BASELINE_CONFIG, INVALID_SCORE, Search, SearchConfiguration
from compileiq.errors import ConfigurationError, SearchFailedError, SearchSpaceExhaustedWarning
from compileiq.results import read_csv
from compileiq.utils.validation import metadata_dict
from compileiq.worker import MultiProcessWorker, SequentialWorker

SPACE = {"a": ss.range(0, 15), "b": ss.range(0, 15), "c": ss.choice(["x", "y", "z"])}


def quad(cfg):
    return (cfg["a"] - 11) ** 2 + (cfg["b"] - 4) ** 2 + {"x": 3, "y": 0, "z": 5}[cfg["c"]]


def search(obj=quad, space=SPACE, **kw):
    cfg = kw.pop("config", None) or SearchConfiguration(generations=kw.pop("generations", 6), seed=kw.pop("seed", 1),
                                                         **kw.pop("cfg", {}))
    kw.setdefault("worker_type", SequentialWorker)
    kw.setdefault("disable_progress_bar", True)
    return Search(obj, space, cfg, **kw)


def test_finds_the_optimum_and_writes_the_documented_columns(tmp_path):
    out = tmp_path / "results.csv"
    res = search(generations=12, dump_results=out).start()
    best = res.get_best_result()
    assert best["score_1"] == 0 and best["params"] == {"a": 11, "b": 4, "c": "y"}
    df = read_csv(out)
    assert list(df.columns) == ["metadata", "generation", "score_1", "params"]
    assert len(df) == len(res) and df["generation"].max() == 11
    keys = [json.dumps(p, sort_keys=True) for p in df["params"]]
    assert len(keys) == len(set(keys)), "a candidate was evaluated twice"
    assert {"param_id", "seed", "pid"} <= set(json.loads(df.loc[0, "metadata"]))  # a JSON string, as NVIDIA keeps it


def test_max_problem_type():
    res = search(lambda c: -quad(c), generations=10, cfg={"problem_type": "max"}).start()
    assert res.get_best_result()["score_1"] == 0


@pytest.mark.parametrize("ret, k", [(True, 1), ((1.0,), 1), ([1.0], 1), ("fast", 1), ((1.0, 2.0, 3.0), 2), (1.0, 2)])
def test_return_values_not_in_expected_format_score_invalid_and_say_the_rule(ret, k, ciq_log):
    s = search(lambda c: ret, generations=1, cfg={"num_objectives": k}, exit_on_failure=False)
    res = s.start()
    df = res.get_results()
    assert (df["score_1"] == INVALID_SCORE).all()
    msg = "\n".join(r.getMessage() for r in ciq_log.records)
    assert "not in expected format" in msg and repr(ret) in msg
    assert ("must return one int or float" if k == 1 else f"exactly {k} numbers") in msg


@pytest.mark.filterwarnings("ignore::compileiq.errors.IdenticalScoresWarning")  # constant on purpose
def test_nan_and_inf_become_invalid():
    vals = iter([math.nan, math.inf, -math.inf] + [1.0] * 100)
    res = search(lambda c: next(vals), generations=1).start()
    assert list(res.get_results()["score_1"][:3]) == [INVALID_SCORE] * 3


def test_every_first_generation_failure_raises_a_diagnosis():
    with pytest.raises(SearchFailedError) as e:
        search(lambda c: (1.0,), generations=3).start()
    text = str(e.value)
    assert "not in expected format" in text and "tuple (1.0,)" in text and "num_objectives=1" in text
    assert "exit_on_failure=False" in text

    def boom(c):
        raise RuntimeError("nvcc exploded")
    with pytest.raises(SearchFailedError, match="RuntimeError: nvcc exploded"):
        search(boom, generations=3).start()


def test_objective_exceptions_go_to_the_run_log_and_the_first_few_to_the_console(tmp_path, monkeypatch, ciq_log):
    monkeypatch.setenv("CIQ_KEEP_CACHE", "1")

    def flaky(c):
        if c["a"] % 2:
            raise ValueError(f"odd a={c['a']}")
        return quad(c)
    res = search(flaky, generations=2, cache_folder=tmp_path / "cache").start()
    failed = res.get_results()["score_1"].eq(INVALID_SCORE).sum()
    assert failed > 3
    console = [r.getMessage() for r in ciq_log.records if "failed [exception]" in r.getMessage()]
    assert len(console) == failed  # one console entry per failure ...
    full = [m for m in console if "Traceback" in m]
    assert len(full) == 3 and "ValueError: odd a=" in full[0]  # ... the first three with their traceback
    assert all(m.count("\n") == 0 and m.endswith(("1", "3", "5", "7", "9")) for m in console if m not in full)
    runs = list((tmp_path / "cache").iterdir())
    assert len(runs) == 1
    log = (runs[0] / "run.log").read_text()
    assert log.count("ValueError: odd a=") == failed and "Traceback" in log
    kept = list((runs[0] / "failures").iterdir())
    assert len(kept) == failed
    assert json.loads((kept[0] / "params.json").read_text())["a"] % 2 == 1
    assert "ValueError" in (kept[0] / "error.txt").read_text()


def test_run_folder_is_removed_unless_kept(tmp_path):
    search(generations=1, cache_folder=tmp_path / "c").start()
    assert list((tmp_path / "c").iterdir()) == []


def test_kept_failures_hold_the_controls_file_of_hex_candidates(tmp_path, monkeypatch):
    monkeypatch.setenv("CIQ_KEEP_CACHE", "yes")
    from compileiq._runfolder import RunFolder
    run = RunFolder(tmp_path)
    run.record_failure(7, [{"a": 1}, "0a0b"], "boom")
    d = run.path / "failures" / "7"
    assert (d / "controls_1.bin").read_bytes() == b"\x0a\x0b" and "boom" in (d / "error.txt").read_text()
    run.close()
    assert d.exists()


def test_fromhex_legacy_pattern_gets_the_hint():
    def legacy(config_blob):
        return len(bytes.fromhex(config_blob))
    with pytest.raises(SearchFailedError) as e:
        search(legacy, generations=2).start()
    assert "save_compiler_config" in str(e.value) and "fromhex" in str(e.value)


def test_normalize_divides_by_the_baseline_which_is_evaluated_first(tmp_path):
    calls = []

    def obj(c):
        calls.append(c)
        return 10.0 if c == BASELINE_CONFIG else 10.0 + quad(c)
    out = tmp_path / "r.csv"
    res = search(obj, generations=3, cfg={"normalize": True}, dump_results=out).start()
    assert calls[0] == {} and sum(1 for c in calls if c == {}) == 1
    df = res.get_results()
    assert list(df.columns)[-1] == "norm_score_1"
    row = df.iloc[1]
    assert row["norm_score_1"] == pytest.approx(row["score_1"] / 10.0)
    assert metadata_dict(df.iloc[0]["metadata"])["baseline"] is True
    assert res.get_best_result()["params"] != {}


@pytest.mark.parametrize("baseline, needle", [(0.0, "returned 0"), (INVALID_SCORE, "failed")])
def test_a_zero_or_failed_baseline_stops_the_run(baseline, needle):
    obj = lambda c: baseline if c == {} else 1.0  # noqa: E731
    with pytest.raises(SearchFailedError, match=needle):
        search(obj, generations=2, cfg={"normalize": True}).start()


def test_small_space_stops_with_a_warning_and_returns_what_it_evaluated():
    space = {"a": ss.choice([1, 2, 3]), "b": ss.literal("on", knockout_prob=0.5)}
    with pytest.warns(SearchSpaceExhaustedWarning, match="6 distinct candidates"):
        res = search(lambda c: c["a"], space=space, generations=5).start()
    assert len(res) == 6


def test_sample_returns_distinct_candidates_shaped_like_the_objective_input():
    s = search(space=[SPACE, {"k": ss.literal(1)}])
    samples = s.sample(20)
    assert len(samples) == 20 and len({json.dumps(x, sort_keys=True) for x in samples}) == 20
    assert all(isinstance(x, list) and set(x[0]) == {"a", "b", "c"} for x in samples)
    with pytest.raises(ConfigurationError, match="num_samples"):
        s.sample(0)


def test_start_argument_checks():
    s = search()
    with pytest.raises(ConfigurationError, match="num_workers"):
        s.start(num_workers=0)
    with pytest.raises(ConfigurationError, match="task_timeout"):
        s.start(task_timeout=-1)
    with pytest.raises(ConfigurationError, match="dump_results"):
        search(dump_results="/nonexistent-dir/x.csv")
    with pytest.raises(ConfigurationError, match="engine="):
        search(engine="simulated-annealing")


def test_sequential_worker_warns_that_it_ignores_task_timeout():
    with pytest.warns(UserWarning, match="ignores task_timeout"):
        search(generations=1).start(task_timeout=5)


def test_ask_tell_drives_the_same_engine():
    s = search(generations=50)
    for _ in range(8):
        cands = s.ask()
        s.tell({c.param_id: quad(c.params) for c in cands})
    assert s.result.get_best_result()["score_1"] <= 2
    cands = s.ask(4)
    s.tell([(cands[0].param_id, 1.0)])
    assert len(s.pending_candidates) == 3
    with pytest.raises(ValueError, match="never asked or were already told"):
        s.tell({cands[0].param_id: 1.0})
    with pytest.raises(ValueError, match="given twice"):
        s.tell([(cands[1].param_id, 1.0), (cands[1].param_id, 2.0)])
    s.tell({c.param_id: 2.0 for c in cands[1:]})
    assert not s.pending_candidates


def test_ask_tell_with_normalisation_asks_for_the_baseline_first():
    s = search(cfg={"normalize": True})
    cands = s.ask(3)
    assert cands[0].param_id == "baseline" and cands[0].params == {}
    s.tell({c.param_id: (4.0 if c.param_id == "baseline" else 2.0) for c in cands})
    df = s.result.get_results()
    assert set(df["norm_score_1"][1:]) == {0.5}


def test_process_worker_runs_closures_and_lambdas_end_to_end(tmp_path):
    offset = 3
    res = search(lambda c: quad(c) + offset, generations=2, worker_type=MultiProcessWorker).start(num_workers=2)
    pids = {metadata_dict(r["metadata"])["pid"] for _, r in res.get_results().iterrows()}
    import os
    assert os.getpid() not in pids and res.get_best_result()["score_1"] >= 3


def test_progress_bar_shows_generation_and_best(capsys):
    search(generations=3, disable_progress_bar=False).start()
    err = capsys.readouterr().err
    assert "Generation 3/3" in err and "best" in err and "(generation" in err


def test_the_diagnosis_groups_failures_that_differ_only_in_temporary_paths():
    import tempfile

    def obj(c):
        with tempfile.TemporaryDirectory() as d:
            raise FileNotFoundError(f"{d}/kernel.cubin was not written")
    with pytest.raises(SearchFailedError) as e:
        search(obj, generations=2, cfg={"pool_size": 8}).start()
    assert "kernel.cubin was not written (x8)" in str(e.value) and "<tmp>" in str(e.value)


def test_tell_normalises_scores_told_before_the_baseline():
    s = search(cfg={"normalize": True})
    cands = s.ask(3)
    s.tell({c.param_id: 2.0 for c in cands[1:]})  # candidates first ...
    s.tell({"baseline": 4.0})  # ... the baseline last
    df = s.result.get_results()
    assert set(df["norm_score_1"][df["score_1"] == 2.0]) == {0.5}
    s2 = search(cfg={"normalize": True})
    c2 = s2.ask(2)
    s2.tell({c2[1].param_id: 2.0, "baseline": 4.0})  # in one call, in any order
    assert 0.5 in set(s2.result.get_results()["norm_score_1"])


@pytest.mark.filterwarnings("ignore::compileiq.errors.IdenticalScoresWarning")  # constant on purpose
def test_a_custom_worker_that_returns_its_baseline_without_set_baseline_is_normalised_once():
    from compileiq.utils.validation import Score
    from compileiq.worker import BaseWorker
    calls = []

    class Minimal(BaseWorker):
        def run(self, *, function, params_pool, params_ids, num_function_returns=1, **kwargs):
            out = []
            if self.normalize and self.baseline_score is None:
                calls.append("baseline")
                out.append(Score(function({}), "baseline", {}, num_function_returns, is_baseline=True))
            return out + [Score(function(p), i, p, num_function_returns) for p, i in zip(params_pool, params_ids)]

    obj = lambda c: 10.0 if c == {} else 5.0  # noqa: E731
    res = search(obj, generations=3, cfg={"normalize": True}, worker_type=Minimal).start()
    df = res.get_results()
    assert calls == ["baseline"] and (df["norm_score_1"][1:] == 0.5).all()


@pytest.mark.filterwarnings("ignore::compileiq.errors.IdenticalScoresWarning")  # constant on purpose
def test_a_reused_worker_instance_does_not_carry_the_previous_baseline():
    w = SequentialWorker(normalize=True)
    search(lambda c: 10.0 if c == {} else 5.0, generations=1, cfg={"normalize": True}, worker_type=w).start()
    res = search(lambda c: 100.0 if c == {} else 50.0, generations=1, cfg={"normalize": True}, worker_type=w).start()
    df = res.get_results()
    assert metadata_dict(df.iloc[0]["metadata"])["baseline"] and (df["norm_score_1"][1:] == 0.5).all()


def test_a_failed_baseline_keeps_its_traceback_in_the_run_log_and_csv(tmp_path, monkeypatch):
    monkeypatch.setenv("CIQ_KEEP_CACHE", "1")

    def obj(c):
        if c == {}:
            raise ValueError("reference build broke")
        return 1.0
    with pytest.raises(SearchFailedError, match="reference build broke.*run.log"):
        search(obj, generations=2, cfg={"normalize": True}, cache_folder=tmp_path / "c",
               dump_results=tmp_path / "r.csv").start()
    (log,) = (tmp_path / "c").glob("*/run.log")
    assert "Traceback" in log.read_text() and "reference build broke" in log.read_text()
    assert metadata_dict(read_csv(tmp_path / "r.csv").iloc[0]["metadata"])["baseline"] is True


def test_resume_refuses_another_space_or_problem_type_and_ask_tell(tmp_path):
    out = tmp_path / "r.csv"
    search(generations=1, dump_results=out).start()
    with pytest.raises(ConfigurationError, match="another search space"):
        search(space={"a": ss.range(0, 3)}, resume_from=out)
    with pytest.raises(ConfigurationError, match="another problem_type"):
        search(cfg={"problem_type": "max"}, resume_from=out)
    with pytest.raises(ConfigurationError, match="works with start"):
        search(resume_from=out).ask()
