"""``compileiq profile`` on the bundled spill kernel: default build against -O0, from PTX and from cubins."""

import json
import os
import sys

import pytest

from compileiq.compilers import CompilerNotFoundError, find_compiler, ptxas
from compileiq.compilers.sass import sass_available
from compileiq.controls import write_controls
from compileiq.examples.ptxas_spill import bundled_ptx
from compileiq.profile import find_ncu, main


@pytest.fixture
def tools():
    try:
        find_compiler("ptxas")
    except CompilerNotFoundError as exc:
        pytest.skip(f"ptxas not available here: {exc}")
    if not sass_available():
        pytest.skip("cuobjdump/nvdisasm not found: pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm")


@pytest.fixture
def o0(tmp_path):
    return write_controls(tmp_path / "o0.ctl", "ptxas", "13.0", ["-O0"])


@pytest.fixture(scope="module")
def cubins(tmp_path_factory):
    """The default build and the -O0 build, compiled once for the tests that start from cubins."""
    try:
        find_compiler("ptxas")
    except CompilerNotFoundError as exc:
        pytest.skip(f"ptxas not available here: {exc}")
    d = tmp_path_factory.mktemp("cubins")
    ctl = write_controls(d / "o0.ctl", "ptxas", "13.0", ["-O0"])
    a = ptxas(bundled_ptx(), out=d / "a.cubin").artifact
    b = ptxas(bundled_ptx(), controls=ctl, out=d / "b.cubin").artifact
    return a, b


def run(capsys, *argv):
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return rc, out, err


def row(out: str, label: str) -> list[str]:
    line = next(ln for ln in out.splitlines() if ln.strip().startswith(label))
    return line[len(line) - len(line.lstrip()) + len(label):].split()


def test_ptx_with_two_controls_files(tools, tmp_path, o0, capsys):
    base = write_controls(tmp_path / "base.ctl", "ptxas", "13.0", [])
    rc, out, _ = run(capsys, "--ptx", bundled_ptx(), "--baseline-controls", base, "--candidate-controls", o0,
                     "--out-dir", tmp_path / "keep")
    assert rc == 0
    assert sorted(os.listdir(tmp_path / "keep")) == ["baseline.cubin", "candidate.cubin"]
    assert "controls o0.ctl: -O0" in out and "controls base.ctl: (no options)" in out
    assert row(out, "spill stores (B)")[:2] == ["60", "240"]
    assert row(out, "spill loads (B)")[:2] == ["52", "188"]
    assert row(out, "stack frame (B)")[:2] == ["32", "120"]
    assert row(out, "registers")[:2] == ["80", "80"] and row(out, "registers")[2] == "="
    base_n, cand_n = (int(x.replace(",", "")) for x in row(out, "SASS instructions")[:2])
    assert cand_n > base_n
    assert "SASS instruction mix: the opcodes whose counts differ most" in out
    mov = row(out, "MOV")
    assert int(mov[1]) > int(mov[0])  # -O0 copies values around instead of keeping them in place
    assert row(out, "STL")[:2] == ["15", "60"]


def test_json_and_opcode_options(tools, o0, capsys):
    rc, out, _ = run(capsys, "--ptx", bundled_ptx(), "--candidate-controls", o0, "--json", "--top", "3")
    assert rc == 0
    doc = json.loads(out)
    assert doc["resources"]["spill_stores"] == {"baseline": 60, "candidate": 240}
    assert len(doc["opcodes"]) == 3 and doc["opcodes"][0]["opcode"] == "MOV" and doc["opcodes"][0]["change"] > 0
    assert doc["local_memory_instructions"]["candidate"] > doc["local_memory_instructions"]["baseline"]
    assert doc["ncu"] == {} and "not run" in doc["ncu_note"]


def test_two_cubins(tools, cubins, capsys):
    a, b = cubins
    rc, out, _ = run(capsys, "--baseline", a, "--candidate", b, "--kernel", "spill_kernel")
    assert rc == 0
    assert "(cubin as given)" in out and "kernel:    spill_kernel" in out
    assert row(out, "stack frame (B)")[:2] == ["32", "120"]
    assert row(out, "local-memory instrs (LDL+STL)")[:2] == ["28", "107"]
    assert "LDL+STL count shows the spills" in out
    assert "spill stores" not in out  # a cubin carries no spill byte counts


@pytest.mark.skipif(find_ncu() is not None, reason="ncu is installed here; the no-ncu path cannot be shown")
def test_run_without_ncu_says_so(tools, cubins, capsys, monkeypatch):
    monkeypatch.delenv("CIQ_NCU", raising=False)
    rc, out, _ = run(capsys, "--baseline", cubins[0], "--candidate", cubins[1], "--run", "python bench.py {cubin}")
    assert rc == 0
    assert "Nsight Compute: skipped: ncu not found" in out and "Static comparison only" in out
    assert "stack frame (B)" in out and "SASS instruction mix" in out


FAKE_NCU = r'''#!{python}
import os, sys
side = os.environ.get("CIQ_PROFILE_SIDE", "?")
args = sys.argv[1:]
if os.environ.get("FAKE_NCU_MODE") == "perm":
    print("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance Counters")
    sys.exit(1)
cmd = args[args.index("--metrics") + 2:]
assert cmd[0] == "launch" and cmd[1].endswith(".cubin"), cmd
assert os.environ["CIQ_PROFILE_CUBIN"] == cmd[1]
fast = side == "candidate"
values = {{
    "gpu__time_duration.sum": ("nsecond", ["12,000", "14,000"] if not fast else ["9,000", "9,500"]),
    "sm__throughput.avg.pct_of_peak_sustained_elapsed": ("%", ["41.5", "42.5"] if not fast else ["60", "61"]),
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed": ("%", ["70", "70"]),
    "sm__warps_active.avg.pct_of_peak_sustained_active": ("%", ["30", "30"] if not fast else ["45", "45"]),
    "launch__registers_per_thread": ("register/thread", ["80", "80"] if not fast else ["64", "64"]),
    "lts__throughput.avg.pct_of_peak_sustained_elapsed": ("%", ["n/a", "n/a"]),
}}
print("==PROF== Connected to process 4242")
print('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"')
for launch in range(2):
    for name, (unit, vals) in values.items():
        print(f'"{{launch}}","4242","launch","host","spill_kernel","1","7","(16, 16, 1)","(8, 8, 1)","0","9.0","Command line profiler metrics","{{name}}","{{unit}}","{{vals[launch]}}"')
print("==PROF== Disconnected from process 4242")
'''


@pytest.fixture
def fake_ncu(tmp_path):
    path = tmp_path / "ncu"
    path.write_text(FAKE_NCU.format(python=sys.executable))
    path.chmod(0o755)
    return path


def test_ncu_metrics_are_compared(tools, cubins, fake_ncu, capsys):
    rc, out, _ = run(capsys, "--baseline", cubins[0], "--candidate", cubins[1], "--ncu", fake_ncu,
                     "--run", "launch {cubin}")
    assert rc == 0, out
    assert "Nsight Compute (mean over the profiled launches)" in out
    assert row(out, "duration [nsecond]")[:2] == ["13,000", "9,250"]
    assert row(out, "SM throughput %")[:2] == ["42", "60.5"]
    assert row(out, "registers per thread")[:3] == ["80", "64", "-16"]
    assert row(out, "warps active %")[:3] == ["30", "45", "+15"]
    assert row(out, "L2 throughput %")[:2] == ["n/a", "n/a"]
    assert "lts__throughput.avg.pct_of_peak_sustained_elapsed" in out


def test_ncu_permission_error_keeps_the_static_part(tools, cubins, fake_ncu, capsys, monkeypatch):
    monkeypatch.setenv("FAKE_NCU_MODE", "perm")
    rc, out, _ = run(capsys, "--baseline", cubins[0], "--candidate", cubins[1], "--ncu", fake_ncu,
                     "--run", "launch {cubin}")
    assert rc == 1
    assert "Nsight Compute: failed:" in out and "NVreg_RestrictProfilingToAdminUsers=0" in out
    assert "stack frame (B)" in out


def test_ncu_needs_a_run_command_for_each_side(o0, fake_ncu, capsys):
    rc, _, err = run(capsys, "--ptx", bundled_ptx(), "--candidate-controls", o0, "--ncu", fake_ncu,
                     "--baseline-run", "launch {cubin}")
    assert rc == 2 and "no run command for the candidate" in err
    rc, _, err = run(capsys, "--ptx", bundled_ptx(), "--run", "launch '{cubin}")
    assert rc == 2 and "check its quotes" in err
