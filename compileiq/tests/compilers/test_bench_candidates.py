"""The speed benchmark's fixed candidates must all compile, or it would measure failures."""

from pathlib import Path

from compileiq.bench.ptxas_workers import candidates
from compileiq.compilers import ptxas
from compileiq.utils.helpers import save_compiler_config


def test_every_benchmark_candidate_compiles(ptxas_tool, spill_ptx, tmp_path):
    pool = candidates(16)
    assert len(set(pool)) == 16
    for i, c in enumerate(pool):
        ctl = save_compiler_config(tmp_path / f"c{i}.ctl", c)
        assert ptxas(spill_ptx, controls=ctl, out=Path(tmp_path) / f"k{i}.cubin").artifact.is_file()
