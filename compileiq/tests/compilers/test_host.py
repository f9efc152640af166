"""gcc and clang helpers: real builds, open controls files as response files, one-line failures."""

import subprocess

import pytest

from compileiq.compilers import CompileError, clang, gcc
from compileiq.controls import write_controls

PROGRAM = """
#include <stdio.h>
#include <math.h>
int main(int argc, char **argv) {
    double s = 0;
    for (int i = 1; i < 1000; ++i) s += sqrt((double)i);
    printf("%.3f\\n", s);
    return 0;
}
"""


@pytest.fixture
def program(tmp_path):
    p = tmp_path / "prog.c"
    p.write_text(PROGRAM)
    return p


@pytest.mark.parametrize("helper, tool", [(gcc, "gcc_tool"), (clang, "clang_tool")])
def test_build_run_and_controls(helper, tool, request, program, tmp_path):
    tc = request.getfixturevalue(tool)
    exe = helper(program, out=tmp_path / "prog", libs=["-lm"])
    assert exe.compiler == tc.name and exe.command[-1] == "-lm"
    assert subprocess.run([exe.artifact], capture_output=True, text=True).stdout.strip() == "21065.833"
    assert exe.compile_ms == exe.wall_ms > 0
    ctl = write_controls(tmp_path / "c.ctl", tc.name, tc.version_str, ["-O3", "-funroll-loops"])
    tuned = helper(program, out=tmp_path / "tuned", controls=ctl, extra=["-O0"], libs=["-lm"])
    resp = [a for a in tuned.command if a.startswith("@")]
    assert resp and tuned.command.index("-O0") < tuned.command.index(resp[0])  # the candidate wins
    asm = helper(program, out=tmp_path / "p.s", controls=ctl, kind="asm")
    assert asm.artifact.read_text().strip()


def test_gcc_failure_is_one_line(gcc_tool, tmp_path):
    src = tmp_path / "bad.c"
    src.write_text("int main(void) { return nope; }\n")
    with pytest.raises(CompileError) as info:
        gcc(src, out=tmp_path / "bad")
    msg = str(info.value)
    assert "\n" not in msg and msg.startswith("gcc failed (exit 1) compiling bad.c: ") and "nope" in msg
    assert "--- stderr ---" in info.value.log_text


def test_gcc_rejects_a_ptxas_controls_file(gcc_tool, program, tmp_path, monkeypatch):
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    ctl = write_controls(tmp_path / "p.ctl", "ptxas", "13.0", ["-O1"])
    with pytest.raises(Exception, match="ptxas"):
        gcc(program, controls=ctl)
    assert not any((tmp_path / "tmp").iterdir())  # refused before any output folder was made
