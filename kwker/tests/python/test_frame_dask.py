"""kwker.frame.dask on a real distributed.LocalCluster with 2 worker processes."""
import numpy as np
import pytest

from kwker import _integrations  # noqa: E402

pd = pytest.importorskip("pandas")
dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")

import kwker.frame as kf  # noqa: E402
import kwker.frame.dask as kfd  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning",
                                        "ignore::ResourceWarning",
                                        "ignore::pytest.PytestUnraisableExceptionWarning")


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=None, memory_limit="2GiB")
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


def _frame(n=20_000, seed=0):
    rng = np.random.default_rng(seed)
    b = rng.random(n).round(2)
    b[rng.random(n) < 0.05] = np.nan
    return pd.DataFrame({"a": rng.integers(0, 40, n), "b": b, "s": rng.choice(["x", "y"], n),
                         "id": np.arange(n)})


def _runs(keys):
    h = pd.util.hash_pandas_object(keys, index=False).to_numpy()
    return h, np.concatenate(([0], np.cumsum(h[1:] != h[:-1])))


def _assert_same_keys_and_row_sets(got, exp, by):
    """Equal key order and, for each run of equal keys, the same set of rows."""
    hg, runs = _runs(got[by].reset_index(drop=True))
    he, _ = _runs(exp[by].reset_index(drop=True))
    assert np.array_equal(hg, he)
    ig = got["id"].to_numpy()[np.lexsort((got["id"].to_numpy(), runs))]
    ie = exp["id"].to_numpy()[np.lexsort((exp["id"].to_numpy(), runs))]
    assert np.array_equal(ig, ie)


@pytest.mark.parametrize("by, ascending, na_position", [
    ("b", True, "last"),
    (["a", "b"], True, "first"),
    (["b", "s"], False, "last"),
])
def test_distributed_sort_matches_pandas(client, by, ascending, na_position):
    df = _frame()
    ddf = dd.from_pandas(df, npartitions=4)
    got = kfd.sort_values(ddf, by, ascending=ascending, na_position=na_position).compute()
    default = ddf.sort_values(by, ascending=ascending, na_position=na_position).compute()
    exp = df.sort_values(by, ascending=ascending, na_position=na_position, kind="stable")
    # dtypes as Dask gives them (Dask turns object strings into Arrow strings)
    assert list(got.columns) == list(default.columns)
    assert (got.dtypes == default.dtypes).all()
    labels = by if isinstance(by, list) else [by]
    _assert_same_keys_and_row_sets(got, default, labels)
    _assert_same_keys_and_row_sets(got.astype(exp.dtypes.to_dict()), exp, labels)


def test_each_partition_is_sorted_by_kwker_on_the_workers(client):
    """Kwker's partition sort is stable, so within one partition equal keys keep the order in
    which the shuffle delivered them; check that the workers ran kwker.frame."""
    def probe():
        import sys
        return "kwker.frame._pandas" in sys.modules
    ddf = dd.from_pandas(_frame(), npartitions=4)
    kfd.sort_values(ddf, "a").compute()
    assert any(client.run(probe).values())


def test_disabled_runs_dasks_own_sort(client, monkeypatch):
    monkeypatch.setenv("KWKER_DISABLE", "1")
    ddf = dd.from_pandas(_frame(2_000), npartitions=2)
    with pytest.warns(_integrations.DisabledWarning, match="KWKER_DISABLE=1 is set"):
        kfd.sort_values(ddf, "a")
    assert kfd.sort_values(ddf, "b").compute()["b"].is_monotonic_increasing is False  # NaN
    got = kfd.sort_values(ddf, "a").compute()
    assert got["a"].is_monotonic_increasing


def test_bad_input():
    ddf = dd.from_pandas(_frame(100), npartitions=2)
    with pytest.raises(KeyError, match="no column named 'zz'"):
        kfd.sort_values(ddf, ["a", "zz"])
    with pytest.raises(ValueError, match="ascending has 1 entries but by has 2"):
        kfd.sort_values(ddf, ["a", "b"], ascending=[True])
    with pytest.raises(TypeError, match="expected a dask DataFrame"):
        kfd.sort_values(_frame(10), "a")
    assert kf.dask is kfd
