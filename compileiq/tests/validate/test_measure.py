import sys

import pytest

from compileiq.validate import CallableMeasure, CommandMeasure, NoScore, parse_score

PY = sys.executable


@pytest.mark.parametrize("text, regex, expected", [
    ("time: 1.25 ms", r"time: ([0-9.]+)", 1.25),
    ("time: 1.25 ms", r"[0-9.]+", 1.25),
    ("run 1\nrun 2\nmedian 3.5e-3 s", None, 3.5e-3),
    ("throughput 1,234.5 GB/s", r"throughput ([0-9.,]+)", 1234.5),
    ("nothing here", r"time: ([0-9.]+)", None),
    ("no numbers", None, None),
])
def test_parse_score(text, regex, expected):
    assert parse_score(text, regex) == expected


def test_command_reads_stdout_then_stderr():
    assert CommandMeasure("echo 'time: 2.5 ms'", r"time: ([0-9.]+)")() == 2.5
    assert CommandMeasure("echo 'Used 32 registers' >&2", r"Used (\d+) registers")() == 32.0


def test_command_without_a_match_says_which_regex_and_keeps_the_output():
    with pytest.raises(NoScore) as e:
        CommandMeasure("echo 'elapsed 3 ms'", r"time: ([0-9.]+)")()
    assert e.value.kind == "no-match" and "time: ([0-9.]+)" in str(e.value) and "elapsed 3 ms" in e.value.output


def test_failing_command_is_no_score_even_if_it_printed_a_number():
    with pytest.raises(NoScore) as e:
        CommandMeasure("echo 5; exit 4")()
    assert e.value.kind == "exit-status" and "status 4" in str(e.value)


def test_command_timeout():
    with pytest.raises(NoScore) as e:
        CommandMeasure(f"{PY} -c 'import time; time.sleep(5)'", timeout=0.3)()
    assert e.value.kind == "timeout"


def test_environment_reaches_the_command():
    assert CommandMeasure("echo $CIQ_TEST_X", env={"CIQ_TEST_X": "7"})() == 7.0


@pytest.mark.parametrize("value, kind", [(None, "bad-value"), ("*", "bad-value"), ("fast", "bad-value"),
                                         (float("inf"), "bad-value"), (True, "bad-value")])
def test_callable_must_return_one_finite_number(value, kind):
    with pytest.raises(NoScore) as e:
        CallableMeasure(lambda: value)()
    assert e.value.kind == kind


def test_callable_exception_and_one_tuple():
    def boom():
        raise RuntimeError("kernel launch failed")
    with pytest.raises(NoScore, match="RuntimeError: kernel launch failed"):
        CallableMeasure(boom)()
    assert CallableMeasure(lambda: (1.5,))() == 1.5
    assert CallableMeasure(lambda p: p["t"], {"t": 4}, pass_params=True)() == 4.0
