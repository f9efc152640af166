"""try_pack: every configuration of a pack is judged against the baseline by the validation rule."""

import csv
import pytest

from compileiq import BASELINE_CONFIG
from compileiq.boosters import debug_pack, try_pack
from compileiq.boosters.cli import main as pack_main
from compileiq.controls import parse_controls
from compileiq.validate import NoScoreError


def test_gcc_debug_pack_rejects_o0_and_lists_every_config(cached_objective):
    result = try_pack(cached_objective, "debug-pack-gcc", trials=5, warmup=1)
    assert [d.name for d in result.decisions] == ["O0", "O1", "O2", "O3"]
    o0 = result["O0"]
    assert o0.decision.startswith("REJECTED:") and not o0.kept
    assert "mean-not-better" in o0.validation.reasons
    assert o0.speedup < 0.5  # O0 is several times slower than the -O3 baseline
    assert "O0" not in result.kept
    text = result.report()
    for name in ("O0", "O1", "O2", "O3"):
        assert name in text
    assert "trials=100, warmup=50" in text  # screening counts are flagged as such


JITTER = (-0.1, 0.05, 0.0, 0.1, -0.05)


def noisy(table: dict, fail=()):
    """Scores table[option] plus the same small jitter cycle for every configuration (so the spreads
    are equal and only the means differ); configurations in ``fail`` raise."""
    calls: dict[str, int] = {}

    def objective(config):
        key = "base" if config == BASELINE_CONFIG else " ".join(parse_controls(bytes.fromhex(config)).options)
        if key in fail:
            raise RuntimeError(f"{key} does not build")
        calls[key] = calls.get(key, 0) + 1
        return table[key] + JITTER[calls[key] % len(JITTER)]
    return objective


TABLE = {"base": 10.0, "-O0": 40.0, "-O1": 12.0, "-O2": 8.0, "-O3": 10.0}


def test_a_faster_configuration_is_kept():
    result = try_pack(noisy(TABLE), debug_pack("ptxas"), trials=20, warmup=2)
    assert result.kept == ["O2"]
    assert result["O2"].decision == "KEPT" and result["O2"].speedup == pytest.approx(1.25, rel=0.05)
    assert result["O3"].decision.startswith("REJECTED:")


def test_a_failing_configuration_is_rejected_alone():
    result = try_pack(noisy(TABLE, fail=("-O1",)), "debug-pack-ptxas", trials=8, warmup=1)
    o1 = result["O1"]
    assert o1.decision == "REJECTED:no-score" and o1.validation is None
    assert "does not build" in o1.error
    assert result["O2"].kept and len(result.decisions) == 4


def test_configs_limits_the_trial_and_output_logs_each_decision(tmp_path):
    log = tmp_path / "decisions.csv"
    result = try_pack(noisy(TABLE), "debug-pack-ptxas", trials=6, warmup=0, configs=["O0", "O2.ctl"], output=log)
    assert [d.name for d in result.decisions] == ["O0", "O2"]
    with log.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["candidate"] for r in rows] == ["O0", "O2"]
    assert rows[0]["controls"] == "debug-pack-ptxas/O0.ctl" and rows[0]["framework"] == "booster pack debug-pack-ptxas"


def test_a_failing_baseline_stops_the_trial():
    with pytest.raises(NoScoreError, match="the baseline produced no score"):
        try_pack(noisy(TABLE, fail=("base",)), "debug-pack-ptxas", trials=3, warmup=0)


OBJECTIVE_MODULE = '''
from compileiq import BASELINE_CONFIG
from compileiq.controls import parse_controls
TABLE = {"base": 10.0, "-O0": 40.0, "-O1": 12.0, "-O2": 8.0, "-O3": 10.0}
JITTER = (-0.1, 0.05, 0.0, 0.1, -0.05)
calls = {}

def objective(config):
    key = "base" if config == BASELINE_CONFIG else " ".join(parse_controls(bytes.fromhex(config)).options)
    calls[key] = calls.get(key, 0) + 1
    return TABLE[key] + JITTER[calls[key] % len(JITTER)]
'''


def test_pack_try_cli(tmp_path, capsys):
    mod = tmp_path / "bench_obj.py"
    mod.write_text(OBJECTIVE_MODULE)
    rc = pack_main(["try", "debug-pack-ptxas", "--module", f"{mod}:objective", "--trials", "10", "--warmup", "1"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "1 of 4 configurations kept" in out and "KEPT" in out and "REJECTED:mean-not-better" in out
