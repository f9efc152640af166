"""Running pandas' own shipped tests in this process, plain or routed through kwker.frame.

    from kwker.testing import pandas_suite
    plain = pandas_suite.run(pandas_suite.SORT_TESTS, "plain", workdir)
    routed = pandas_suite.run(pandas_suite.SORT_TESTS, "routed", workdir)

`run` starts a pytest session over the test files inside the installed pandas (its wheel ships
them, with pandas/conftest.py and its fixtures), with a plugin of ours that records every
test's outcome and, for a failure, where in the test it failed (the line of the test's own
file and the exception type: "the same assertion"). Modes: "plain" (pandas as it is),
"routed" (kwker.testing.pandas_route, to kwker.frame), "stable" (the same calls to pandas'
own method with kind="stable"). Nothing of pandas is copied: the files are read where pandas
installed them. The session's warnings filter is pandas' own CI rule ("error:::pandas").
"""
import dataclasses
import os
import pathlib
import warnings

import pytest

from .pandas_route import MODES, PandasRouter

SORT_TESTS = ("tests/frame/methods/test_sort_values.py", "tests/frame/methods/test_sort_index.py",
              "tests/series/methods/test_sort_values.py",
              "tests/series/methods/test_sort_index.py", "tests/series/methods/test_argsort.py")
# pandas' tests of every extension dtype (Arrow, masked, categorical, datetime, period,
# interval, sparse, string, NumPy and its example arrays), the sorting ones: -k EXTENSION_K
EXTENSION_TESTS = ("tests/extension",)
EXTENSION_K = "sort or argsort"

_INI = """[pytest]
xfail_strict = true
empty_parameter_set_mark = fail_at_collect
filterwarnings =
    error:::pandas
    error::ResourceWarning
"""


@dataclasses.dataclass
class Outcome:
    outcome: str                     # passed, failed, error, skipped, xfailed, xpassed
    where: tuple = None              # (line in the test's file, exception type) of a failure
    message: str = ""


@dataclasses.dataclass
class SuiteRun:
    mode: str
    collected: int
    outcomes: dict                   # node id -> Outcome
    calls: dict                      # "Class.method" -> calls routed (routed / stable modes)
    passed_on: dict                  # "Class.method" -> calls left to pandas


class _Recorder:
    """The pytest plugin: records each test's outcome and where a failure happened."""

    def __init__(self):
        self.outcomes = {}
        self.collected = 0

    def pytest_collection_finish(self, session):
        self.collected = len(session.items)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item, call):
        report = yield
        if call.excinfo is not None and report.failed:
            report.kwker_where = _where(item, call.excinfo)
            report.kwker_message = call.excinfo.exconly().splitlines()[0][:300]
        return report

    def pytest_runtest_logreport(self, report):
        prev = self.outcomes.get(report.nodeid)
        where = getattr(report, "kwker_where", None)
        message = getattr(report, "kwker_message", "")
        if report.when == "call":
            if hasattr(report, "wasxfail"):
                outcome = "xfailed" if report.skipped else "xpassed"
            else:
                outcome = report.outcome
            if prev is None or prev.outcome == "passed":
                self.outcomes[report.nodeid] = Outcome(outcome, where, message)
        elif report.failed:                           # setup or teardown
            if prev is None or prev.outcome in ("passed", "skipped"):
                self.outcomes[report.nodeid] = Outcome("error", where, message)
        elif report.skipped and prev is None:
            outcome = "xfailed" if hasattr(report, "wasxfail") else "skipped"
            self.outcomes[report.nodeid] = Outcome(outcome)


def _where(item, excinfo):
    """(line, exception type) of the innermost frame in the test's own file."""
    path = pathlib.Path(str(item.path))
    for entry in reversed(excinfo.traceback):
        if pathlib.Path(str(entry.path)) == path:
            return entry.lineno + 1, excinfo.typename
    return None, excinfo.typename


def pandas_dir():
    import pandas
    return pathlib.Path(pandas.__file__).parent


def shipped(files=SORT_TESTS):
    """The test files' paths inside the installed pandas; a missing one is listed, with why."""
    root = pandas_dir()
    paths = [root / f for f in files]
    missing = [str(p) for p in paths if not p.exists()]
    return paths, missing


def run(files, mode, workdir, *, select=None, keyword=None, disable=False):
    """One pytest session in this process over `files` (relative to the pandas package) or
    over the node ids in `select`, the tests matching `keyword` (pytest's -k) when given;
    returns a SuiteRun. disable=True sets KWKER_DISABLE=1."""
    if mode not in ("plain",) + MODES:
        raise ValueError(f"pandas_suite.run: mode must be plain, routed or stable, got {mode!r}")
    root = pandas_dir()
    site = root.parent
    workdir = pathlib.Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    ini = workdir / "pandas-suite.ini"
    ini.write_text(_INI)
    targets = list(select) if select is not None else [str(root / f) for f in files]
    if not targets:
        return SuiteRun(mode, 0, {}, {}, {})
    args = ["-c", str(ini), "--rootdir", str(site), "--confcutdir", str(site),
            "-p", "no:cacheprovider", "-qq", "--tb=no", "-rN", "--no-header",
            *(["-k", keyword] if keyword else []), *targets]
    recorder = _Recorder()
    router = PandasRouter(mode) if mode != "plain" else None
    env_before = os.environ.get("KWKER_DISABLE")
    with warnings.catch_warnings():
        warnings.resetwarnings()
        if disable:
            os.environ["KWKER_DISABLE"] = "1"
        try:
            if router is not None:
                with router:
                    code = pytest.main(args, plugins=[recorder])
            else:
                code = pytest.main(args, plugins=[recorder])
        finally:
            if env_before is None:
                os.environ.pop("KWKER_DISABLE", None)
            else:
                os.environ["KWKER_DISABLE"] = env_before
    if code not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
        raise RuntimeError(f"pandas_suite.run: pytest over pandas' tests ended with {code!r} "
                           f"({mode}); run python -m pytest {' '.join(args)} to see why")
    return SuiteRun(mode, recorder.collected, recorder.outcomes,
                    dict(router.calls) if router else {}, dict(router.passed) if router else {})


def node_path(nodeid):
    """A node id of a session (relative to site-packages) as a path pytest can select."""
    return str(pandas_dir().parent / nodeid)
