"""A real gcc objective for the canary and try_pack tests, built two ways.

The kernel is a multiply-add sweep over a small array: gcc -O3 vectorises it, -O0 keeps every value
in memory, so O0 runs about 20x slower, and one run stays under 50 ms even at -O0. The program
times itself (best of seven sweep sets: the minimum is what stays stable on a loaded machine) so process start-up is not part of the score.
"""

import hashlib
import tempfile
from pathlib import Path

import pytest

from compileiq import BASELINE_CONFIG
from compileiq.compilers import CompilerNotFoundError, cpu_time, find_compiler, gcc
from compileiq.utils.helpers import save_compiler_config

KERNEL_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#define N 4096
static float x[N], y[N];
static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}
int main(int argc, char **argv) {
    int sweeps = argc > 1 ? atoi(argv[1]) : 100;
    for (int i = 0; i < N; i++) { x[i] = (i % 17) * 0.25f; y[i] = 1.0f; }
    double best = 1e30;
    for (int r = 0; r < 7; r++) {
        double t0 = now();
        for (int s = 0; s < sweeps; s++)
            for (int i = 0; i < N; i++)
                y[i] = y[i] * 0.5f + x[i];
        double t = now() - t0;
        if (t < best) best = t;
    }
    double sum = 0;
    for (int i = 0; i < N; i++) sum += y[i];
    printf("%.9f %.3f\n", best, sum);
    return 0;
}
"""
SWEEPS = 2500     # about 0.5 ms at -O3 and 10 ms at -O0 per sweep set on this machine
BASE_FLAGS = ["-O3"]  # the build's own flags; a candidate's controls come after them and win


def run_kernel(exe: Path) -> float:
    """Milliseconds of the best sweep set, as the program measured it."""
    t = cpu_time([str(exe), str(SWEEPS)], warmup=0, repeats=1, parse=lambda out: float(out.split()[0]))
    return t.median * 1e3


class CleanBuild:
    """What an objective should do: every evaluation compiles the candidate in a fresh folder."""

    def __init__(self, source: Path, root: Path):
        self.source, self.root = source, root
        self.calls = 0

    def __call__(self, config):
        self.calls += 1
        folder = Path(tempfile.mkdtemp(dir=self.root))
        controls = None
        if config != BASELINE_CONFIG:
            controls = save_compiler_config(folder / "candidate.ctl", config)
        exe = gcc(self.source, out=folder / "kernel", controls=controls, extra=BASE_FLAGS).artifact
        return run_kernel(exe)


class StaleBuild:
    """The bug the canary exists for: a build rule that depends on the source only. The first
    evaluation builds the binary; every later one finds it and skips the compile, flags or not."""

    def __init__(self, source: Path, build_dir: Path):
        self.source, self.build_dir = source, build_dir
        build_dir.mkdir(parents=True, exist_ok=True)

    def __call__(self, config):
        exe = self.build_dir / "kernel"
        controls = None
        if config != BASELINE_CONFIG:
            controls = save_compiler_config(self.build_dir / "candidate.ctl", config)
        if not exe.exists():
            gcc(self.source, out=exe, controls=controls, extra=BASE_FLAGS)
        return run_kernel(exe)


class CachedByConfig:
    """Compiles each distinct configuration once, keyed by its bytes, then only times it: a correct
    cache (the key includes the controls), which keeps try_pack's many trials fast."""

    def __init__(self, source: Path, root: Path):
        self.source, self.root = source, root
        self.exes: dict[str, Path] = {}

    def __call__(self, config):
        key = "baseline" if config == BASELINE_CONFIG else hashlib.sha256(config.encode()).hexdigest()[:16]
        if key not in self.exes:
            folder = self.root / key
            folder.mkdir(parents=True)
            controls = None if key == "baseline" else save_compiler_config(folder / "candidate.ctl", config)
            self.exes[key] = gcc(self.source, out=folder / "kernel", controls=controls, extra=BASE_FLAGS).artifact
        return run_kernel(self.exes[key])


@pytest.fixture
def kernel_file(tmp_path):
    src = tmp_path / "kernel.c"
    src.write_text(KERNEL_C)
    return src


@pytest.fixture
def gcc_source(kernel_file):
    try:
        find_compiler("gcc")
    except CompilerNotFoundError as exc:
        pytest.skip(f"gcc not available here: {exc}")
    return kernel_file


@pytest.fixture
def clean_objective(gcc_source, tmp_path):
    (tmp_path / "builds").mkdir()
    return CleanBuild(gcc_source, tmp_path / "builds")


@pytest.fixture
def stale_objective(gcc_source, tmp_path):
    return StaleBuild(gcc_source, tmp_path / "build")


@pytest.fixture
def cached_objective(gcc_source, tmp_path):
    return CachedByConfig(gcc_source, tmp_path / "by-config")
