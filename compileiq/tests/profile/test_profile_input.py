"""Bad input gives one clear line and a non-zero exit; the parsing helpers on fixed text."""

from collections import Counter
from pathlib import Path

import pytest

from compileiq.controls import write_controls
from compileiq.examples.ptxas_spill import bundled_ptx
from compileiq.profile import ProfileInputError, input_kind, main, mix_diff, opcode_histogram, parse_ncu_csv
from compileiq.profile.builds import Build
from compileiq.profile.ncu import expand
from compileiq.profile.report import compare, format_text


def fails(capsys, rc_expected, *argv) -> str:
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert rc == rc_expected, out + err
    assert "Traceback" not in out + err
    assert err.startswith("compileiq profile: error: ")
    return err


def test_missing_file(capsys, tmp_path):
    err = fails(capsys, 2, "--baseline", tmp_path / "nope.cubin", "--candidate", bundled_ptx())
    assert "nope.cubin: no such file" in err


def test_not_a_cubin_or_ptx(capsys, tmp_path):
    junk = tmp_path / "notes.txt"
    junk.write_text("hello\n")
    err = fails(capsys, 2, "--baseline", junk, "--candidate", bundled_ptx())
    assert "is not a cubin (ELF), a fatbin, PTX" in err
    err = fails(capsys, 2, "--baseline", tmp_path, "--candidate", bundled_ptx())
    assert "is a folder" in err


def test_argument_combinations(capsys, tmp_path):
    assert "nothing to compare" in fails(capsys, 2)
    assert "nothing to compare" in fails(capsys, 2, "--baseline", bundled_ptx())
    assert "not both" in fails(capsys, 2, "--ptx", bundled_ptx(), "--baseline", bundled_ptx())
    assert "--candidate-controls" in fails(capsys, 2, "--ptx", bundled_ptx(), "--candidate-controls",
                                           tmp_path / "missing.ctl")


def test_controls_cannot_apply_to_a_cubin(capsys, tmp_path):
    cubin = tmp_path / "k.cubin"
    cubin.write_bytes(b"\x7fELF" + b"\0" * 60)
    ctl = write_controls(tmp_path / "o0.ctl", "ptxas", "13.0", ["-O0"])
    err = fails(capsys, 2, "--baseline", cubin, "--candidate", cubin, "--candidate-controls", ctl)
    assert "already compiled (cubin)" in err


def test_ptx_the_compiler_refuses_is_a_tool_error(capsys, tmp_path):
    bad = tmp_path / "bad.ptx"
    bad.write_text(".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k() { bogus.instr; }\n")
    try:
        from compileiq.compilers import find_compiler
        find_compiler("ptxas")
    except Exception as exc:  # noqa: BLE001 - any discovery failure means: nothing to test here
        pytest.skip(f"ptxas not available here: {exc}")
    err = fails(capsys, 1, "--ptx", bad)
    assert "ptxas failed" in err and err.count("\n") == 1


def test_input_kind(tmp_path):
    assert input_kind(bundled_ptx()) == "ptx"
    (tmp_path / "a.cubin").write_bytes(b"\x7fELF\x02\x01")
    (tmp_path / "a.fatbin").write_bytes(b"\x50\xed\x55\xba\x01\x00")
    (tmp_path / "k.cu").write_text("__global__ void k() {}\n")
    (tmp_path / "k.txt").write_text("__global__ void k() {}\n")
    assert [input_kind(tmp_path / n) for n in ("a.cubin", "a.fatbin", "k.cu")] == ["cubin", "fatbin", "cu"]
    with pytest.raises(ProfileInputError):
        input_kind(tmp_path / "k.txt")


SASS = """
\tcode for sm_90
\t\tFunction : kern_a
        /*0000*/                   LDC R1, c[0x0][0x28] ;                        /* 0x00000a00ff017b82 */
        /*0010*/              @!P0 LDG.E.128 R4, desc[UR4][R2.64] ;             /* 0x0000000000007919 */
        /*0020*/               @P1 STL [R1], R4 ;                                /* 0x0000000000007919 */
        /*0030*/              @!PT LDL.64 R8, [R1+0x8] ;                         /* 0x0000000000007919 */
        /*0040*/                   EXIT ;                                         /* 0x000000000000794d */
\t\tFunction : kern_b
        /*0000*/                   LDG.E R4, desc[UR4][R2.64] ;                  /* 0x0000000000007919 */
        /*0010*/                   EXIT ;                                         /* 0x000000000000794d */
"""


def test_opcode_histogram():
    assert opcode_histogram(SASS) == Counter({"LDG": 2, "EXIT": 2, "LDC": 1, "STL": 1, "LDL": 1})
    assert opcode_histogram(SASS, kernel="kern_b") == Counter({"LDG": 1, "EXIT": 1})
    full = opcode_histogram(SASS, full=True)
    assert full["LDG.E.128"] == 1 and full["LDG.E"] == 1 and full["LDL.64"] == 1


def test_mix_diff_orders_by_size_of_change():
    rows = mix_diff(Counter(MOV=10, FFMA=64, NOP=3), Counter(MOV=686, FFMA=64, STL=45, NOP=1), top=2)
    assert [(r.opcode, r.change) for r in rows] == [("MOV", 676), ("STL", 45)]
    assert [r.opcode for r in mix_diff(Counter(A=1, B=2), Counter(A=2, B=1), top=0)] == ["A", "B"]


def test_identical_builds_say_so():
    b = Build("baseline", Path("k.cubin"), "cubin", Path("k.cubin"), resources={"registers": 32}, sass=SASS)
    c = Build("candidate", Path("k.cubin"), "cubin", Path("k.cubin"), resources={"registers": 32}, sass=SASS)
    text = format_text(compare(b, c))
    assert "identical opcode counts" in text and "registers" in text


def test_parse_ncu_csv_averages_launches_and_reads_na():
    text = "\n".join([
        "==PROF== Connected to process 1",
        '"ID","Kernel Name","Metric Name","Metric Unit","Metric Value"',
        '"0","k","gpu__time_duration.sum","usecond","1,000"',
        '"1","k","gpu__time_duration.sum","usecond","3,000"',
        '"1","other","gpu__time_duration.sum","usecond","50"',
        '"0","k","lts__throughput.avg.pct_of_peak_sustained_elapsed","%","n/a"',
        "==PROF== Disconnected from process 1",
    ])
    m = parse_ncu_csv(text, kernel="k")
    assert m["gpu__time_duration.sum"] == (2000.0, "usecond")
    assert m["lts__throughput.avg.pct_of_peak_sustained_elapsed"] == (None, "%")
    assert parse_ncu_csv(text)["gpu__time_duration.sum"][0] == pytest.approx(4050 / 3)
    assert parse_ncu_csv("==PROF== nothing\n") == {}


def test_expand_keeps_paths_with_spaces_whole():
    args = expand("python bench.py --cubin {cubin} --ctl={controls}", Path("/a b/c.cubin"), Path("x.ctl"))
    assert args == ["python", "bench.py", "--cubin", "/a b/c.cubin", "--ctl=x.ctl"]
    with pytest.raises(ValueError, match="empty"):
        expand("   ", Path("c"), None)
