"""controls_args applies an open controls file for real: ptxas/nvcc read an options file, gcc/clang an @file."""

import hashlib
import os
import subprocess
from pathlib import Path

import pytest

from compileiq.compilers.discovery import CompilerNotFoundError, find_compiler, toolchain_at
from compileiq.controls import ControlsError, controls_args, write_controls

REPO = Path(__file__).resolve().parents[3]
TOOLCHAINS = Path(os.environ.get("CIQ_TEST_TOOLCHAINS") or REPO / "build" / "toolchains")

PTX = """.version 8.0
.target sm_75
.address_size 64

.visible .entry k(.param .u64 p_x)
{
\t.reg .f32 %f<4>;
\t.reg .b64 %rd<3>;
\tld.param.u64 %rd1, [p_x];
\tcvta.to.global.u64 %rd2, %rd1;
\tld.global.f32 %f1, [%rd2];
\tsqrt.rn.f32 %f2, %f1;
\tdiv.rn.f32 %f3, %f1, %f2;
\tst.global.f32 [%rd2], %f3;
\tret;
}
"""
C = "#if CIQ_MARK != 42\n#error the controls file did not reach the compiler\n#endif\nint f(int x) { return x * CIQ_MARK; }\n"


def tool(name):
    try:
        return find_compiler(name)
    except CompilerNotFoundError as exc:
        pytest.skip(str(exc))


def cubin_digest(cmd):
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = Path(cmd[cmd.index("-o") + 1])
    return hashlib.sha256(out.read_bytes()).hexdigest()


def ptxas_versions():
    out = [pytest.param(None, id="installed")]
    for minor in ("13.3", "13.5"):
        out.append(pytest.param(minor, id=f"wheel-{minor}"))
    return out


def ptxas_of(minor):
    if minor is None:
        return tool("ptxas")
    path = TOOLCHAINS / f"cuda-{minor}" / "nvidia" / "cu13" / "bin" / "ptxas"
    if not path.is_file():
        pytest.skip(f"{path} is missing: run compileiq/scripts/install_toolchains.sh {TOOLCHAINS}")
    return toolchain_at("ptxas", path)


@pytest.mark.parametrize("minor", ptxas_versions())
def test_ptxas_reads_the_options_through_an_options_file(tmp_path, minor):
    ptxas = ptxas_of(minor)
    (tmp_path / "k.ptx").write_text(PTX)
    base = [ptxas.path, "-arch=sm_90", str(tmp_path / "k.ptx"), "-o", str(tmp_path / "k.cubin")]
    ctl = write_controls(tmp_path / "cand.ctl", "ptxas", ptxas.version_str, ["-O0", "--fmad=false"])
    with controls_args(ctl, ptxas) as args:
        assert args == ["--options-file", str(tmp_path / "cand.ctl.ptxas.args")] and args.kind == "open"
        assert args.options_file.read_text() == "-O0\n--fmad=false\n"
        tuned = cubin_digest(base + args)
    assert not args.options_file.exists(), "the context manager removes the options file it wrote"
    assert tuned != cubin_digest(base), "the options changed nothing: they did not reach ptxas"


def test_gcc_and_clang_read_the_options_through_a_response_file(tmp_path):
    (tmp_path / "f.c").write_text(C)
    for name in ("gcc", "clang"):
        cc = tool(name)
        ctl = write_controls(tmp_path / f"{name}.ctl", name, "12", ["-O2", "-DCIQ_MARK=42"])
        args = controls_args(ctl, name)
        assert args == [f"@{tmp_path / f'{name}.ctl.{name}.args'}"]
        proc = subprocess.run([cc.path, "-c", str(tmp_path / "f.c"), "-o", str(tmp_path / f"{name}.o"), *args],
                              capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        args.cleanup()


def test_a_ptxas_file_applied_to_nvcc_goes_through_ptxas_options(tmp_path):
    nvcc = tool("nvcc")
    (tmp_path / "k.ptx").write_text(PTX)
    ctl = write_controls(tmp_path / "cand.ctl", "ptxas", "13.0", ["-O0", "-dlcm=cg"])
    with controls_args(ctl, "nvcc") as args:
        assert args.options_file.read_text() == "--ptxas-options=-O0\n--ptxas-options=-dlcm=cg\n"
        base = [nvcc.path, "-cubin", "-arch=sm_90", str(tmp_path / "k.ptx"), "-o", str(tmp_path / "k.cubin")]
        assert cubin_digest(base + args) != cubin_digest(base)


def test_a_file_without_options_gives_no_arguments(tmp_path):
    ctl = write_controls(tmp_path / "none.ctl", "ptxas", "13.5", [])
    assert controls_args(ctl, "ptxas") == [] and controls_args(ctl, "ptxas").kind == "open"


def test_a_file_for_another_compiler_is_refused(tmp_path):
    ctl = write_controls(tmp_path / "g.ctl", "gcc", "12", ["-O3"])
    with pytest.raises(ControlsError, match=r"holds gcc options .* applied to clang; apply it to gcc"):
        controls_args(ctl, "clang")


def test_missing_and_empty_files_are_refused_with_the_fix(tmp_path):
    with pytest.raises(ControlsError, match=r"cannot be read .*save_compiler_config\(path, config\)"):
        controls_args(tmp_path / "missing.ctl", "ptxas")
    (tmp_path / "empty.ctl").write_bytes(b"")
    with pytest.raises(ControlsError, match="is empty: neither an open controls file nor a vendor ACF"):
        controls_args(tmp_path / "empty.ctl", "ptxas")


def test_the_options_file_falls_back_to_the_cache_when_it_cannot_sit_next_to_the_controls_file(tmp_path):
    ctl = write_controls(tmp_path / "cand.ctl", "ptxas", "13.5", ["-O1"])
    (tmp_path / "cand.ctl.ptxas.args").mkdir()  # something unwritable in the way
    args = controls_args(ctl, "ptxas")
    assert args.options_file.parent == tmp_path / "xdg-cache" / "compileiq" / "options-files"
    assert args.options_file.read_text() == "-O1\n"
    assert not list(tmp_path.glob(".*part"))


def test_a_compiler_binary_path_works_as_well_as_a_name(tmp_path):
    binary = TOOLCHAINS / "cuda-13.5" / "nvidia" / "cu13" / "bin" / "ptxas"
    if not binary.is_file():
        pytest.skip(f"{binary} is missing: run compileiq/scripts/install_toolchains.sh {TOOLCHAINS}")
    ctl = write_controls(tmp_path / "cand.ctl", "ptxas", "13.5", ["-O3"])
    assert controls_args(ctl, str(binary))[0] == "--options-file"
    assert controls_args(ctl, toolchain_at("ptxas", binary))[0] == "--options-file"


def test_the_public_path_is_compileiq_compilers_controls_args():
    import compileiq.compilers
    assert compileiq.compilers.controls_args is controls_args


@pytest.mark.parametrize("minor", ptxas_versions())
def test_why_the_header_is_stripped_and_never_sent_to_apply_controls(tmp_path, minor):
    """What ptxas really does with an open controls file handed over as it is."""
    ptxas = ptxas_of(minor)
    (tmp_path / "k.ptx").write_text(PTX)
    ctl = write_controls(tmp_path / "cand.ctl", "ptxas", ptxas.version_str, ["-O2"])
    base = [ptxas.path, "-arch=sm_90", str(tmp_path / "k.ptx"), "-o", str(tmp_path / "k.cubin")]
    raw = subprocess.run(base + ["--options-file", str(ctl)], capture_output=True, text=True)
    assert raw.returncode != 0 and "Input file '#' could not be opened" in raw.stderr
    wrong = subprocess.run(base + ["--apply-controls", str(ctl)], capture_output=True, text=True)
    expected = "not in expected format" if ptxas.version < (13, 3) else "Invalid compiler controls file"
    assert wrong.returncode != 0 and expected in wrong.stderr
