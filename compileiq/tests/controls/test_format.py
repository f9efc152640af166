"""The open controls file: header, one option per line, anything else is a vendor ACF."""

import pytest

from compileiq.controls import (ControlsError, format_controls, header, is_open_controls, parse_controls, read_controls,
                                write_controls)


def test_format_and_parse_round_trip():
    data = format_controls("ptxas", "13.5", ["-O2", "--register-usage-level=7"])
    assert data == b"# compileiq-controls v1 compiler=ptxas version=13.5\n-O2\n--register-usage-level=7\n"
    parsed = parse_controls(data)
    assert (parsed.compiler, parsed.version, parsed.options) == ("ptxas", "13.5", ("-O2", "--register-usage-level=7"))
    assert parsed.to_bytes() == data and parsed.to_hex() == data.hex()
    assert header("gcc", "12") == "# compileiq-controls v1 compiler=gcc version=12"


def test_blank_lines_comments_and_crlf_are_tolerated():
    data = b"# compileiq-controls v1 compiler=clang version=14\r\n\r\n# tuned 2026-11-30\r\n-O3\r\n  -mllvm -unroll-threshold=300  \r\n"
    assert parse_controls(data).options == ("-O3", "-mllvm -unroll-threshold=300")


def test_only_the_header_line_makes_an_open_file():
    assert is_open_controls(b"# compileiq-controls v1 compiler=ptxas version=13.5\n")
    assert not is_open_controls(bytes(range(256)))
    assert not is_open_controls(b"-O3\n")  # a bare options file is not ours: it would go to --apply-controls


@pytest.mark.parametrize("data, needle", [
    (b"# compileiq-controls v1 compiler=ptxas\n-O2\n", "malformed header"),
    (b"# compileiq-controls v2 compiler=ptxas version=13.5\n", "v2 is newer than this CompileIQ reads"),
    (b"# compileiq-controls v1 compiler=ptxas version=13.5\n\xff\xfe\n", "not UTF-8 text"),
    (b"-O2\n", "a file like this is a vendor ACF"),
])
def test_malformed_files_are_errors_with_the_expected_form(data, needle):
    with pytest.raises(ControlsError, match=needle):
        parse_controls(data, "cand.ctl")


@pytest.mark.parametrize("bad", ["", "  ", "-O2\n-O3", "# comment", 3])
def test_an_option_must_be_one_line(bad):
    with pytest.raises(ControlsError, match="cannot be a controls-file line"):
        format_controls("ptxas", "13.5", [bad])


def test_a_bad_header_field_is_refused():
    with pytest.raises(ControlsError, match="cannot form a controls header"):
        format_controls("ptxas", "thirteen", [])


def test_write_and_read(tmp_path):
    path = write_controls(tmp_path / "c.ctl", "gcc", "12", ["-O3", "-funroll-loops"])
    assert read_controls(path).options == ("-O3", "-funroll-loops")
    assert [p.name for p in tmp_path.iterdir()] == ["c.ctl"]  # no .part left behind
    with pytest.raises(ControlsError, match="cannot be read .*save_compiler_config"):
        read_controls(tmp_path / "missing.ctl")
