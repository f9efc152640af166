"""A Search over the open ptxas space with the example objective, and what a failing candidate prints."""

import hashlib
import logging
import re
from pathlib import Path

import pytest

from compileiq import Search, SearchConfiguration
from compileiq.compilers import ptxas
from compileiq.examples import ptxas_spill
from compileiq.worker import SequentialWorker


@pytest.fixture
def ptxas_space(ptxas_tool, needs_sass):
    from compileiq.search_spaces.compilers import PtxasSearchSpace
    return PtxasSearchSpace()


def test_objective_baseline_and_candidate(ptxas_space, spill_ptx, tmp_path):
    base = ptxas_spill.objective({})
    direct = ptxas(spill_ptx, out=tmp_path / "k.cubin")
    assert base == (direct.spill_bytes, direct.sass_count) and base[0] > 0
    cand = Search(ptxas_spill.objective, ptxas_space, SearchConfiguration(generations=1, pool_size=8, seed=3)).sample(1)[0]
    assert isinstance(cand, str)
    spill, count = ptxas_spill.objective(cand)
    assert spill >= 0 and count > 0


class BreakSome(ptxas_spill.PtxasSpillObjective):
    """The example objective, but every other candidate also gets an option ptxas rejects."""

    def __call__(self, config):
        if isinstance(config, str) and hashlib.sha256(config.encode()).digest()[0] % 2:
            from compileiq.utils.helpers import save_compiler_config
            import tempfile
            with tempfile.TemporaryDirectory() as d:
                ctl = save_compiler_config(Path(d) / "c.ctl", config)
                ptxas(self.ptx, controls=ctl, extra=["--no-such-option"], out=Path(d) / "k.cubin")
        return super().__call__(config)


def test_search_logs_one_line_per_failing_compile(ptxas_space, tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("CIQ_KEEP_CACHE", "1")
    caplog.set_level(logging.INFO, logger="compileiq")
    cfg = SearchConfiguration(generations=2, pool_size=8, num_objectives=2, seed=11)
    res = Search(BreakSome(), ptxas_space, cfg, worker_type=SequentialWorker, cache_folder=tmp_path,
                 disable_progress_bar=True).start()
    df = res.get_results()
    failed = [r for _, r in df.iterrows() if r["score_1"] == "*"]
    assert 0 < len(failed) < len(df)
    console = [r.getMessage() for r in caplog.records if r.name == "compileiq" and "failed [exception]" in r.getMessage()]
    assert console
    for msg in console:
        errors = [ln for ln in msg.splitlines() if "CompileError:" in ln]
        assert len(errors) == 1 and "Unknown option '-no-such-option'" in errors[0]
        assert errors[0].endswith("(full compiler output in the run log)")
        assert "--- stderr ---" not in msg and "command: " not in msg  # the compiler's output stays in the log
    (log,) = tmp_path.glob("*/run.log")
    text = log.read_text()
    assert text.count("--- stderr ---") == len(failed) and "exit code: 255" in text
    best = min(float(r["score_1"]) for _, r in df.iterrows() if r["score_1"] != "*")
    assert best <= ptxas_spill.objective({})[0]


def test_demo_prints_front_and_result_file(ptxas_space, tmp_path, capsys):
    res = ptxas_spill.run_ptxas_demo(generations=1, pool_size=8, num_workers=2, output=tmp_path / "r.csv",
                                     gpu=False, disable_progress_bar=True)
    out = capsys.readouterr().out
    assert re.search(r"baseline \(no controls\): \d+ spill bytes, \d+ SASS instructions", out)
    assert "Pareto front:" in out
    assert f"results: {tmp_path / 'r.csv'}" in out and (tmp_path / "r.csv").is_file()
    assert "| spill B | SASS instr |" in out
    assert len(res) == 8
