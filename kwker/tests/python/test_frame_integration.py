"""kwker.frame's integration: accessors through kwker._integrations, KWKER_DISABLE=1, lazy
imports, the ImportError for a missing library, doctor's status and audit's frame equality."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

pd = pytest.importorskip("pandas")
pl = pytest.importorskip("polars")

import kwker.frame as kf  # noqa: E402
from kwker import _integrations, _warnings  # noqa: E402
from kwker.tools import audit  # noqa: E402


@pytest.fixture(autouse=True)
def _clean(monkeypatch):
    monkeypatch.delenv("KWKER_DISABLE", raising=False)
    kf.uninstall()
    yield
    kf.uninstall()


def _py(code, **env):
    full = dict(os.environ, **env)
    full.pop("KWKER_DISABLE", None) if "KWKER_DISABLE" not in env else None
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=full,
                          capture_output=True, text=True, timeout=120)


def test_install_adds_accessors_without_touching_the_libraries_methods():
    own = (pd.DataFrame.sort_values, pd.Series.sort_values, pl.DataFrame.sort, pl.Series.sort)
    assert kf.install() is True
    state = _integrations.status()["frame"]
    assert (state["installed"], state["disabled_by_env"]) == (True, False)
    df = pd.DataFrame({"a": [3, 1, 2]})
    pd.testing.assert_frame_equal(df.kwker.sort_values("a"), df.sort_values("a", kind="stable"))
    assert df["a"].kwker.sort_values().tolist() == [1, 2, 3]
    assert df.kwker.arg_sort("a").tolist() == [1, 2, 0]
    pdf = pl.DataFrame({"a": [3, None, 2]})
    assert pdf.kwker.sort("a").equals(pdf.sort("a", maintain_order=True))
    assert pdf.lazy().kwker.sort("a").collect().equals(pdf.sort("a", maintain_order=True))
    assert pdf["a"].kwker.sort(descending=True).to_list() == [None, 3, 2]
    assert own == (pd.DataFrame.sort_values, pd.Series.sort_values, pl.DataFrame.sort,
                   pl.Series.sort)
    kf.uninstall()
    # (objects that used the accessor keep their cached instance, as pandas and Polars do)
    assert not hasattr(pd.DataFrame({"a": [1]}), "kwker")
    assert not hasattr(pl.DataFrame({"a": [1]}), "kwker")
    assert _integrations.status()["frame"]["installed"] is False


def test_disabled_install_changes_nothing_of_kwkers_and_entry_points_run_the_libraries(
        monkeypatch):
    import numpy as np
    monkeypatch.setenv("KWKER_DISABLE", "1")
    with pytest.warns(_integrations.DisabledWarning, match="kwker.frame: KWKER_DISABLE=1 is set"):
        assert kf.install() is False
    state = _integrations.status()["frame"]
    assert (state["installed"], state["disabled_by_env"]) == (False, True)
    calls = []
    for cls, meth in ((pd.DataFrame, "sort_values"), (pd.Series, "sort_values"),
                      (pd.DataFrame, "sort_index"), (pl.DataFrame, "sort"),
                      (pl.Series, "sort"), (pl.LazyFrame, "sort")):
        orig = getattr(cls, meth)

        def spy(self, *a, _orig=orig, _name=f"{cls.__name__}.{meth}", **k):
            calls.append(_name)
            return _orig(self, *a, **k)
        monkeypatch.setattr(cls, meth, spy)
    df = pd.DataFrame({"a": [3.0, np.nan, 1.0]})
    pdf = pl.DataFrame({"a": [3, None, 1]})

    def ran(expected, call):
        del calls[:]
        call()
        assert expected in calls

    ran("DataFrame.sort_values", lambda: df.kwker.sort_values("a"))   # accessors still exist
    ran("Series.sort_values", lambda: kf.sort_values(df["a"]))
    ran("DataFrame.sort_index", lambda: kf.sort_index(df))
    ran("DataFrame.sort_values", lambda: kf.arg_sort(df, "a"))
    assert kf.arg_sort(df, "a").tolist() == [2, 0, 1]
    ran("DataFrame.sort", lambda: kf.sort(pdf, "a"))
    ran("Series.sort", lambda: kf.sort(pdf["a"]))
    ran("LazyFrame.sort", lambda: kf.sort(pdf.lazy(), "a").collect())


def test_invalid_kwker_disable_is_rejected_before_any_change(monkeypatch):
    monkeypatch.setenv("KWKER_DISABLE", "yes")
    with pytest.raises(ValueError, match="KWKER_DISABLE='yes' is not valid"):
        kf.install()
    assert not hasattr(pd.DataFrame, "kwker")
    with pytest.raises(ValueError, match="KWKER_DISABLE='yes' is not valid"):
        kf.sort_values(pd.Series([1]))


def test_import_kwker_frame_imports_no_dataframe_library():
    r = _py("""
        import sys, kwker.frame, kwker.frame.dask
        print(sorted(m for m in ("pandas", "polars", "pyarrow", "dask", "distributed")
                     if m in sys.modules))
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


def test_a_missing_library_gives_the_install_command():
    r = _py("""
        import sys
        sys.modules["polars"] = None          # as if Polars were not installed
        import kwker.frame as kf
        try:
            kf.sort(None, "a")
        except ImportError as e:
            print(e)
    """)
    assert r.returncode == 0, r.stderr
    assert "needs polars" in r.stdout and 'pip install "kwker[frame]"' in r.stdout


def test_doctor_reports_the_frame_integration():
    kf.install()
    st = _warnings._statuses()["frame"]
    assert st["installed"] is True and st["sorts_with"] == "Kwker"
    assert "pandas.DataFrame.kwker" in st["accessors"] and "polars.LazyFrame.kwker" in \
        st["accessors"]
    assert st["libraries"]["pandas"] == pd.__version__
    r = _py("import kwker.__main__ as m, sys; sys.argv=['kwker','doctor','--json']; m.main()",
            KWKER_DISABLE="1")
    rep = json.loads(r.stdout)
    frame = rep["integrations"]["frame"]
    assert frame["disabled_by_env"] is True and frame["installed"] is False
    assert "KWKER_DISABLE=1" in frame["sorts_with"] and frame["imported"] == []
    r = _py("import kwker.__main__ as m, sys; sys.argv=['kwker','doctor']; m.main()")
    assert "frame" in r.stdout and "sorts with Kwker" in r.stdout


AUDITED = """
    import numpy as np, pandas as pd, polars as pl
    import kwker.frame as kf
    from kwker import audit
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"a": rng.integers(0, 5, 1000), "b": rng.random(1000),
                       "s": rng.choice(["x", "y", None], 1000)})
    df.loc[::7, "b"] = np.nan
    kf.install()
    audit.record("pandas", df.kwker.sort_values(["a", "b"], ascending=[False, True]))
    audit.record("series", kf.sort_values(df["s"], na_position="first"))
    audit.record("polars", kf.sort(pl.from_pandas(df), ["s", "b"], nulls_last=True))
"""


def test_audit_compares_frames_as_the_libraries_define_equality(tmp_path, capsys):
    path = tmp_path / "frames.py"
    path.write_text(textwrap.dedent(AUDITED))
    code = audit.main(["--json", "--", str(path)])
    rep = json.loads(capsys.readouterr().out)
    assert code == 0, rep["verdict"]
    assert rep["verdict"]["summary"] == "outputs agree"


def test_audit_frame_equality_is_strict():
    from kwker.frame import _equality
    a = pd.DataFrame({"x": [1.0, float("nan")]})
    assert _equality.same(a, a.copy())
    assert not _equality.same(a, a.astype("float32"))
    assert not _equality.same(a, a.set_axis([1, 0]))
    assert not _equality.same(pl.DataFrame({"x": [1]}), pl.DataFrame({"x": [2]}))
    assert _equality.same(pl.Series([None, 1.0]), pl.Series([None, 1.0]))
