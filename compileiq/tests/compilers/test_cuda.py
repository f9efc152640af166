"""ptxas/nvcc helpers: real compiles, controls files, and failures that stay one line long."""

import pickle

import pytest

from compileiq.compilers import CompileError, nvcc, ptxas
from compileiq.controls import write_controls


def test_open_controls_file_reaches_ptxas(ptxas_tool, spill_ptx, tmp_path):
    ctl = write_controls(tmp_path / "cand.ctl", "ptxas", ptxas_tool.version_str, ["-O1"])
    base = ptxas(spill_ptx, out=tmp_path / "base.cubin")
    cand = ptxas(spill_ptx, controls=ctl, out=tmp_path / "cand.cubin")
    assert "--options-file" in cand.command and "--options-file" not in base.command
    assert cand.spill_bytes < base.spill_bytes  # -O1 keeps more of the tile in registers on this kernel
    assert cand.version == ptxas_tool.version_str and cand.arch == "sm_90"


def test_candidate_controls_come_after_extra(ptxas_tool, spill_ptx, tmp_path):
    ctl = write_controls(tmp_path / "cand.ctl", "ptxas", ptxas_tool.version_str, ["-O0"])
    r = ptxas(spill_ptx, controls=ctl, extra=["-O3"], out=tmp_path / "k.cubin")
    assert r.command.index("-O3") < r.command.index("--options-file")
    assert r.spill_bytes == ptxas(spill_ptx, extra=["-O0"], out=tmp_path / "o0.cubin").spill_bytes


def test_other_architectures_compile(ptxas_tool, spill_ptx, tmp_path):
    r = ptxas(spill_ptx, arch="sm_100", out=tmp_path / "k100.cubin")
    assert r.kernels[0].arch == "sm_100" and r.registers is not None


def test_failure_is_one_line_with_full_output_in_log_text(ptxas_tool, spill_ptx, tmp_path):
    with pytest.raises(CompileError) as info:
        ptxas(spill_ptx, extra=["--no-such-option"], out=tmp_path / "k.cubin")
    err = info.value
    msg = str(err)
    assert "\n" not in msg
    assert msg.startswith("ptxas failed (exit 255) compiling spill_kernel.ptx: ")
    assert "no-such-option" in msg and msg.endswith("(full compiler output in the run log)")
    assert err.returncode == 255 and err.command[0] == ptxas_tool.path and "--no-such-option" in err.command
    assert "--- stderr ---" in err.log_text and "command: " in err.log_text and "exit code: 255" in err.log_text
    again = pickle.loads(pickle.dumps(err))  # workers may send it between processes
    assert str(again) == msg and again.log_text == err.log_text


def test_bad_ptx_reports_the_first_error_line(ptxas_tool, tmp_path):
    bad = tmp_path / "bad.ptx"
    bad.write_text(".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k() { bogus.instr; }\n" * 3)
    with pytest.raises(CompileError) as info:
        ptxas(bad)
    assert "\n" not in str(info.value) and "error" in str(info.value).lower()
    assert info.value.log_text.count("\n") >= 3


def test_timeout_raises_compile_error(ptxas_tool, spill_ptx, tmp_path):
    with pytest.raises(CompileError, match=r"ptxas timed out after 0.001 s compiling spill_kernel.ptx") as info:
        ptxas(spill_ptx, out=tmp_path / "k.cubin", timeout=0.001)
    assert info.value.timed_out and info.value.returncode is None


def test_failed_compile_leaves_no_temporary_folder(ptxas_tool, spill_ptx, tmp_path, monkeypatch):
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with pytest.raises(CompileError):
        ptxas(spill_ptx, extra=["--no-such-option"])
    assert not list(tmp_path.glob("ciq-ptxas-*"))
    ok = ptxas(spill_ptx)
    assert ok.artifact.parent.parent == tmp_path and ok.artifact.is_file()


def test_missing_input_names_the_file(ptxas_tool, tmp_path):
    with pytest.raises(FileNotFoundError, match="ptxas: input file .*nope.ptx does not exist"):
        ptxas(tmp_path / "nope.ptx")


def test_explicit_compiler_path(ptxas_tool, spill_ptx, tmp_path):
    r = ptxas(spill_ptx, out=tmp_path / "k.cubin", compiler=ptxas_tool.path)
    assert r.command[0] == ptxas_tool.path


def test_nvcc_cubin_ptx_and_controls(nvcc_tool, spill_cu, tmp_path):
    cubin = nvcc(spill_cu, out=tmp_path / "k.cubin")
    assert cubin.artifact.read_bytes()[:4] == b"\x7fELF"
    assert cubin.spill_bytes > 0 and cubin.registers <= 80
    ptx = nvcc(spill_cu, kind="ptx", out=tmp_path / "k.ptx")
    assert ".entry spill_kernel" in ptx.artifact.read_text() and ptx.kernels == []
    ctl = write_controls(tmp_path / "n.ctl", "ptxas", nvcc_tool.version_str, ["-O1"])
    tuned = nvcc(spill_cu, controls=ctl, out=tmp_path / "t.cubin")
    assert tuned.spill_bytes < cubin.spill_bytes
    with pytest.raises(ValueError, match="kind='exe'"):
        nvcc(spill_cu, kind="exe")


def test_nvcc_failure_is_one_line(nvcc_tool, tmp_path):
    src = tmp_path / "broken.cu"
    src.write_text("__global__ void k() { undeclared_thing(); }\n")
    with pytest.raises(CompileError) as info:
        nvcc(src, out=tmp_path / "b.cubin")
    msg = str(info.value)
    assert "\n" not in msg and msg.startswith("nvcc failed (exit ") and "undeclared_thing" in msg


def test_bundled_ptx_matches_the_bundled_source(nvcc_tool, spill_ptx, spill_cu, tmp_path):
    # the .ptx is committed for machines without nvcc; it must stay what nvcc makes of the .cu
    fresh = nvcc(spill_cu, kind="ptx", out=tmp_path / "fresh.ptx").artifact.read_text()
    strip = lambda t: [ln for ln in t.splitlines() if not ln.startswith("//")]  # noqa: E731
    if nvcc_tool.version_str != "13.0":
        pytest.skip(f"the bundled PTX was made by nvcc 13.0; this nvcc is {nvcc_tool.version_str}")
    assert strip(fresh) == strip(spill_ptx.read_text())
