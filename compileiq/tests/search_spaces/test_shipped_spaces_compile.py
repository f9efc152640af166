"""Every shipped space compiles: each knob at its minimum and maximum, every choice, every flag.

One compile per "column" (the i-th probe value of every knob at once) keeps this fast; a column
that fails or warns is re-run one option at a time to name the culprit. A warning counts as a
rejection: ptxas and clang accept some bad values with "option will be ignored", which would make
a knob that silently does nothing. Random candidates, decoded as a search decodes them, catch
options that conflict with each other. Candidates are applied the way objectives apply them (an
open controls file through controls_args), so the application path is tested too.

ptxas/nvcc 13.3 and 13.5 come from CIQ_TEST_TOOLCHAINS (default <repo>/build/toolchains, filled
by compileiq/scripts/install_toolchains.sh); a version with no compiler here is skipped with the reason.
"""

from __future__ import annotations

import os
import random
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from compileiq.compilers.discovery import CompilerNotFoundError, find_compiler, toolchain_at
from compileiq.controls import controls_args, write_controls
from compileiq.search_spaces.files import read_space_file
from compileiq.search_spaces.manifest import version_tuple
from compileiq.search_spaces.open_space import OpenSpaceComponent, host_facts
from compileiq.search_spaces.resolver import shipped_dir, shipped_manifest
from compileiq.space import SearchSpace

REPO = Path(__file__).resolve().parents[3]
TOOLCHAINS = Path(os.environ.get("CIQ_TEST_TOOLCHAINS") or REPO / "build" / "toolchains")
ARCH = "sm_90"
# random candidates per space, decoded as a search decodes them: they meet pairs the columns never
# put together. 300 per space found the conflicts now encoded with omit_if; 8 keeps the test fast.
RANDOM = int(os.environ.get("CIQ_TEST_RANDOM_CANDIDATES", "8"))
_WARN = re.compile(r"\bwarning\b", re.IGNORECASE)

PTX = """.version 8.0
.target sm_75
.address_size 64

.visible .entry knobs_probe(.param .u64 p_x, .param .u64 p_y, .param .u32 p_n)
{
\t.reg .pred %p<3>;
\t.reg .b32 %r<8>;
\t.reg .f32 %f<8>;
\t.reg .b64 %rd<8>;
\tld.param.u64 %rd1, [p_x];
\tld.param.u64 %rd2, [p_y];
\tld.param.u32 %r1, [p_n];
\tcvta.to.global.u64 %rd3, %rd1;
\tcvta.to.global.u64 %rd4, %rd2;
\tmov.u32 %r2, %ctaid.x;
\tmov.u32 %r3, %ntid.x;
\tmov.u32 %r4, %tid.x;
\tmad.lo.s32 %r5, %r2, %r3, %r4;
\tsetp.ge.s32 %p1, %r5, %r1;
\t@%p1 bra DONE;
\tmul.wide.s32 %rd5, %r5, 4;
\tadd.s64 %rd6, %rd3, %rd5;
\tmov.f32 %f1, 0f00000000;
\tmov.u32 %r6, 0;
LOOP:
\tld.global.f32 %f2, [%rd6];
\tsqrt.rn.f32 %f3, %f2;
\tadd.f32 %f4, %f3, 0f3F800000;
\tdiv.rn.f32 %f5, %f2, %f4;
\tfma.rn.f32 %f1, %f1, %f5, %f2;
\tadd.s32 %r6, %r6, 1;
\tsetp.lt.s32 %p2, %r6, 16;
\t@%p2 bra LOOP;
\tadd.s64 %rd7, %rd4, %rd5;
\tst.global.f32 [%rd7], %f1;
\tred.global.add.f32 [%rd4], %f1;
DONE:
\tret;
}
"""

CU = """extern "C" __global__ void knobs_probe(const float *x, float *y, int n, int mode) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float acc = 0.f;
  for (int j = 0; j < 16; ++j) acc = acc * x[i] + x[i] / (1.f + sqrtf(x[i]));
  switch (mode) { case 0: acc += 1.f; break; case 1: acc *= 2.f; break; case 2: acc -= 3.f; break;
                  case 3: acc *= 0.5f; break; case 4: acc += 7.f; break; default: break; }
  y[i] = acc;
  atomicAdd(y, acc);
}
"""

C = """#include <stddef.h>
void stencil(float *restrict out, const float *restrict in, size_t n) {
  for (size_t i = 1; i + 1 < n; ++i) out[i] = 0.25f * in[i - 1] + 0.5f * in[i] + 0.25f * in[i + 1];
}
static int helper(int x) { return x * x + 1; }
int sumsq(const int *a, int n) { int s = 0; for (int i = 0; i < n; ++i) s += helper(a[i]); return s; }
int pick(int k) { switch (k) { case 0: return 3; case 1: return 7; case 2: return 9; case 3: return 11; default: return 0; } }
"""


def _toolchain(compiler: str, version: str):
    """The compiler binary of that version here, or None and why not."""
    want = version_tuple(version)
    try:
        tc = find_compiler(compiler)
        if isinstance(tc.version, tuple) and tc.version[: len(want)] == want:
            return tc, ""
        have = f"the installed {compiler} is {tc.version_str}"
    except CompilerNotFoundError:
        have = f"no {compiler} is installed"
    if compiler in ("ptxas", "nvcc"):
        binary = TOOLCHAINS / f"cuda-{version}" / "nvidia" / "cu13" / "bin" / compiler
        if binary.is_file():
            return toolchain_at(compiler, binary), ""
        return None, (f"no {compiler} {version}: {binary} is missing (run compileiq/scripts/install_toolchains.sh "
                      f"{TOOLCHAINS}, or set CIQ_TEST_TOOLCHAINS) and {have}")
    return None, f"the shipped space is for {compiler} {version} and {have}"


def _compiler_cmd(tc, folder: Path) -> list[str]:
    if tc.name == "ptxas":
        src = folder / "probe.ptx"
        src.write_text(PTX)
        return [tc.path, f"-arch={ARCH}", str(src), "-o", str(folder / "probe.cubin")]
    if tc.name == "nvcc":
        cicc = Path(tc.path).resolve().parent.parent / "nvvm" / "bin" / "cicc"
        # the nvidia-cuda-nvcc wheels carry no cicc: there nvcc compiles PTX, still parsing every option
        src = folder / ("probe.cu" if cicc.is_file() else "probe.ptx")
        src.write_text(CU if cicc.is_file() else PTX)
        return [tc.path, "-cubin", f"-arch={ARCH}", str(src), "-o", str(folder / "probe.cubin")]
    src = folder / "probe.c"
    src.write_text(C)
    return [tc.path, "-c", str(src), "-o", str(folder / "probe.o")]


def _probes(knob) -> list[tuple[object, tuple[str, ...]]]:
    """(value, option lines) the test must compile for one knob."""
    machine = host_facts()[0]
    if knob.type == "range":
        idx = [0, len(knob.values) - 1]
    else:
        reqs = knob.requires or (None,) * len(knob.values)
        idx = [i for i, r in enumerate(reqs) if r is None or not r.machine or machine in r.machine]
    return [(knob.values[i], knob.lines[i]) for i in idx]


def _columns(space) -> list[list[tuple[str, object, tuple[str, ...]]]]:
    """Column i holds the i-th probe of every knob; a probe whose omit_if fires in its column (the
    compiler would refuse or ignore the pair) moves to a later column without its partner."""
    by_name = {k.name: k for k in space.knobs}
    pending = {k.name: _probes(k) for k in space.knobs}
    columns = []
    for phase in (False, True):  # phase 2: the knobs with omit_if, away from the knobs they name
        todo = {n: p for n, p in pending.items() if bool(by_name[n].omit_if) == phase}
        for i in range(max((len(p) for p in todo.values()), default=0)):
            col = [(n, *p[i]) for n, p in todo.items() if i < len(p)]
            if not phase:
                chosen = {n: v for n, v, _ in col}
                col = [(n, v, ls) for n, v, ls in col if not any(
                    c.knob in chosen and (c.values is None or chosen[c.knob] in c.values) for c in by_name[n].omit_if)]
            columns.append(col)
    return columns


def _apply(base: list[str], ctl: Path, compiler: str) -> tuple[bool, str]:
    with controls_args(ctl, compiler) as args:
        proc = subprocess.run([*base, *args], capture_output=True, text=True, timeout=300)
    out = (proc.stderr + proc.stdout).strip()
    return proc.returncode == 0 and not _WARN.search(out), out


def _compile(base: list[str], folder: Path, name: str, compiler: str, version: str, options) -> tuple[bool, str]:
    ctl = folder / f"{name}.ctl"
    write_controls(ctl, compiler, version, options)
    return _apply(base, ctl, compiler)


def _first(out: str) -> str:
    lines = [ln.strip() for ln in out.splitlines() if ln.strip()]
    return next((ln for ln in lines if re.search(r"error|fatal|warning", ln, re.I)), lines[0] if lines else "")


ENTRIES = shipped_manifest().entries


@pytest.mark.parametrize("entry", ENTRIES, ids=[f"{e.compiler}-{e.compiler_version}-{e.variant}" for e in ENTRIES])
def test_every_knob_value_is_accepted(entry, tmp_path):
    tc, why = _toolchain(entry.compiler, entry.compiler_version)
    if tc is None:
        pytest.skip(why)
    space = read_space_file(shipped_dir() / entry.filename)
    base = _compiler_cmd(tc, tmp_path)
    ok, out = _compile(base, tmp_path, "baseline", space.compiler, space.compiler_version, [])
    assert ok, f"the test kernel itself does not compile cleanly with {tc.path}:\n{out}"

    columns = _columns(space)
    component = OpenSpaceComponent(space)
    rng = random.Random(20261130)
    samples = [bytes.fromhex(component.decode(SearchSpace([component]).random_genotype(rng))) for _ in range(RANDOM)]

    def run_column(i):
        opts = [line for _, _, lines in columns[i] for line in lines]
        return _compile(base, tmp_path, f"col{i}", space.compiler, space.compiler_version, opts)

    def run_sample(i):
        ctl = tmp_path / f"random{i}.ctl"
        ctl.write_bytes(samples[i])
        return _apply(base, ctl, space.compiler)

    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(run_column, range(len(columns))))
        randoms = list(pool.map(run_sample, range(RANDOM)))

    failures = []
    for i, (ok, out) in enumerate(results):
        if ok:
            continue
        culprits = []
        for name, value, lines in columns[i]:
            single_ok, single_out = _compile(base, tmp_path, f"one-{name}", space.compiler, space.compiler_version,
                                             list(lines))
            if not single_ok:
                culprits.append(f"{name}={value!r} ({' '.join(lines)}): {_first(single_out)}")
        failures.extend(culprits or [f"the combination {[ln for _, _, ls in columns[i] for ln in ls]} fails: {_first(out)}"])
    for i, (ok, out) in enumerate(randoms):
        if not ok:
            failures.append(f"random candidate {i} {samples[i].decode().splitlines()[1:]} fails: {_first(out)}")
    assert not failures, (f"{entry.filename} offers options {tc.name} {tc.release} ({tc.path}) rejects or ignores:\n  "
                          + "\n  ".join(failures))
