"""pandas' own sort tests, as its wheel ships them, run through kwker.frame (issue 32).

Two suites of pandas' tests run in this process (kwker.testing.pandas_suite: a pytest session
with pandas' conftest and fixtures, nothing of pandas copied here):
- "methods": the five files of pandas' tests for DataFrame/Series.sort_values, sort_index and
  Series.argsort;
- "extension": pandas' tests of every extension dtype (pandas/tests/extension: Arrow, masked,
  categorical, datetime, period, interval, sparse, string, NumPy and pandas' example arrays),
  those matching -k "sort or argsort".
Each runs plain (pandas as it is); routed (every call kwker.frame takes, axis 0 and kind left
out or "stable", goes to kwker.frame through kwker.testing.pandas_route, inplace=True emulated
as pandas does it); with kind="stable" forced for the tests that differ; and routed under
KWKER_DISABLE=1.

A test that passes plain and fails routed is a failure of Kwker's, unless it also fails with
kind="stable" forced, in the same assertion (the same line of the test, the same exception):
it then depends on the tie order of pandas' unstable default sort, which Kwker does not
promise (Kwker returns the stable order). Those are EXCUSED below by node id, with the reason.
Under KWKER_DISABLE=1 the router installs nothing (as every install() then does), so the
routed run has the plain run's outcome for every test, excused ones included, and routes no call.
"""
import pytest

pd = pytest.importorskip("pandas")
pytest.importorskip("pyarrow")

from kwker.testing import pandas_suite  # noqa: E402

# What the suites were recorded with: the pandas version; per suite the tests collected and the
# calls that went through kwker.frame in the routed run.
PANDAS_VERSION = "3.1.1"
SUITES = {
    "methods": {"files": pandas_suite.SORT_TESTS, "keyword": None,
                "collected": 263, "routed_calls": 528, "disabled_run": True},
    "extension": {"files": pandas_suite.EXTENSION_TESTS, "keyword": pandas_suite.EXTENSION_K,
                  "collected": 1612, "routed_calls": 850, "disabled_run": False},
}
# The KWKER_DISABLE=1 run is made on the "methods" suite only: under KWKER_DISABLE=1 the router's
# __enter__ returns before patching anything, one check that does not depend on the tests run, and
# the methods suite calls each of the five routed methods (asserted below), so a router that
# patched anything under KWKER_DISABLE=1 shows there as routed calls and changed outcomes. The
# extension suite's disabled run (a full third pass over its 1,612 tests, ~10 s) proved the same.
ROUTED_METHODS = ("DataFrame.sort_values", "Series.sort_values", "DataFrame.sort_index",
                  "Series.sort_index", "Series.argsort")

# Tests that fail routed only in the way they fail with pandas' own kind="stable" sort.
EXCUSED = {
    "pandas/tests/series/methods/test_argsort.py::TestSeriesArgsort::test_argsort_stable":
        "expects ser.argsort() to equal np.argsort(kind='quicksort') of 10,000 integers in "
        "0..99, ties included: the tie order of NumPy's unstable quicksort (with "
        "kind='stable' forced, pandas fails at the same line, 62)",
}


@pytest.fixture(scope="module", params=list(SUITES))
def runs(request, tmp_path_factory):
    suite = SUITES[request.param]
    _, missing = pandas_suite.shipped(suite["files"])
    if missing:
        pytest.skip(f"this pandas ({pd.__version__}) ships no tests: {missing[0]} is missing; "
                    "install a pandas wheel with its tests (the PyPI wheels have them)")
    work = tmp_path_factory.mktemp("pandas-suite")
    kw = {"keyword": suite["keyword"]}
    plain = pandas_suite.run(suite["files"], "plain", work, **kw)
    routed = pandas_suite.run(suite["files"], "routed", work, **kw)
    differ = [n for n, o in routed.outcomes.items() if o.outcome != plain.outcomes[n].outcome]
    stable = pandas_suite.run((), "stable", work, select=[pandas_suite.node_path(n)
                                                           for n in differ])
    disabled = (pandas_suite.run(suite["files"], "routed", work, disable=True, **kw)
                if suite["disabled_run"] else None)
    return suite, plain, routed, stable, disabled


def _excused(plain, routed, stable):
    """{node id: outcome} for the tests that pass plain, fail routed, and fail the same way
    with kind="stable" forced; and the list of the other differences (Kwker's own)."""
    excused, own = {}, []
    for node, got in routed.outcomes.items():
        want = plain.outcomes[node]
        if got.outcome == want.outcome:
            continue
        st = stable.outcomes.get(node)
        if want.outcome == "passed" and got.outcome == "failed" and st is not None and \
                st.outcome == "failed" and st.where == got.where:
            excused[node] = got
        else:
            own.append(f"{node}: plain {want.outcome}, routed {got.outcome} at line "
                       f"{got.where[0] if got.where else '?'}: {got.message}")
    return excused, own


def test_routed_suite_has_no_failure_of_kwkers_own(runs):
    suite, plain, routed, stable, _ = runs
    assert set(routed.outcomes) == set(plain.outcomes)
    excused, own = _excused(plain, routed, stable)
    assert not own, "\n".join(own)
    if pd.__version__ == PANDAS_VERSION:
        want = {n for n in EXCUSED if n.startswith(tuple(f"pandas/{f}" for f in suite["files"]))}
        assert set(excused) == want, sorted(set(excused) ^ want)


def test_the_suite_collected_and_routed_what_was_recorded(runs):
    suite, plain, routed, _, _ = runs
    assert plain.collected == routed.collected > 250
    calls = sum(routed.calls.values())
    assert calls > 0, routed.calls
    if suite["keyword"] is None:
        assert all(routed.calls.get(m, 0) > 0 for m in ROUTED_METHODS), routed.calls
    if pd.__version__ == PANDAS_VERSION:
        assert plain.collected == suite["collected"]
        assert calls == suite["routed_calls"], routed.calls


def test_kwker_disable_routed_run_equals_the_plain_run(runs):
    suite, plain, _, _, disabled = runs
    if not suite["disabled_run"]:
        pytest.skip("redundant with the methods suite's disabled run (see SUITES)")
    assert set(disabled.outcomes) == set(plain.outcomes)
    for node, want in plain.outcomes.items():
        got = disabled.outcomes[node]
        assert (got.outcome, got.where) == (want.outcome, want.where), (node, got, want)
    assert sum(disabled.calls.values()) == 0, disabled.calls
