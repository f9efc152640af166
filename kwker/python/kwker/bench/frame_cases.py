"""Section 9 of the benchmark: kwker.frame against pandas, Polars and Dask, 2 threads.

Every kwker.frame call returns exactly what the competitor's stable sort returns, so the
competitors are the libraries' stable sorts: pandas sort_values(kind="stable") and Polars
sort(maintain_order=True) (Polars' Series.sort has no stable mode; it is value-sorted, as
kwker.frame.sort is for a Series). pandas' default sort_values (NumPy's quicksort argsort, not
stable) is timed too, as an informational row.
"""
import contextlib

import numpy as np

import kwker

from .cases import Case, Competitor, Setup, rng_for

SECTION = "9"          # titled in cases.SECTIONS
THREADS = 2


def _ctx():
    """2 threads for Kwker. Polars' pool size is fixed when Polars is imported (2 on the
    project machine; the report's header gives it)."""
    return kwker.config(max_threads=THREADS)


def _floats(rng, n, nulls=0.0):
    x = rng.random(n)
    if nulls:
        x[rng.random(n) < nulls] = np.nan
    return x


def _series_case():
    cid = "frame/series/float64"

    def setup(sizes, mods):
        import kwker.frame as kf
        s = mods["pandas"].Series(_floats(rng_for(cid), sizes.n))
        comps = {"pandas(stable)": lambda: s.sort_values(kind="stable"),
                 "pandas(default)": lambda: s.sort_values()}
        return Setup(kwker=lambda: kf.sort_values(s), competitors=comps, ctx=_ctx())
    return Case(cid, SECTION, "float64", "kwker.frame.sort_values(s) (pd.Series)",
                [Competitor("pandas(stable)", 's.sort_values(kind="stable")', 5.0,
                            requires="pandas"),
                 Competitor("pandas(default)", "s.sort_values() (quicksort, not stable)", None,
                            requires="pandas")],
                setup, slow=True)


def _polars_series_case():
    cid = "frame/pl.series/float64"

    def setup(sizes, mods):
        import kwker.frame as kf
        pl = mods["polars"]
        ps = pl.Series("x", _floats(rng_for(cid), sizes.n))
        return Setup(kwker=lambda: kf.sort(ps), competitors={"polars": lambda: ps.sort()},
                     ctx=_ctx())
    return Case(cid, SECTION, "float64", "kwker.frame.sort(s) (pl.Series)",
                [Competitor("polars", "s.sort() (Polars pool)", 2.0, requires="polars")], setup)


def _key_payload_case():
    cid = "frame/key+payload/float64"

    def setup(sizes, mods):
        import kwker.frame as kf
        rng = rng_for(cid)
        df = mods["pandas"].DataFrame({"k": _floats(rng, sizes.n),
                                       "p": rng.integers(0, 2**40, sizes.n)})
        comps = {"pandas(stable)": lambda: df.sort_values("k", kind="stable"),
                 "pandas(default)": lambda: df.sort_values("k")}
        return Setup(kwker=lambda: kf.sort_values(df, "k"), competitors=comps, ctx=_ctx())
    return Case(cid, SECTION, "float64+int64", 'kwker.frame.sort_values(df, "k")',
                [Competitor("pandas(stable)", 'df.sort_values("k", kind="stable")', 5.0,
                            requires="pandas"),
                 Competitor("pandas(default)", 'df.sort_values("k") (not stable)', None,
                            requires="pandas")],
                setup, slow=True)


def _polars_frame_case(two):
    cid = "frame/pl.two-keys" if two else "frame/pl.key+payload"

    def setup(sizes, mods):
        import kwker.frame as kf
        pl = mods["polars"]
        df = _two_key_frame(pl, rng_for(cid), sizes.n) if two else pl.DataFrame(
            {"k": _floats(rng_for(cid), sizes.n),
             "p": rng_for(cid).integers(0, 2**40, sizes.n)})
        by = ["a", "b"] if two else "k"
        return Setup(kwker=lambda: kf.sort(df, by),
                     competitors={"polars": lambda: df.sort(by, maintain_order=True)},
                     ctx=_ctx())
    desc = 'kwker.frame.sort(df, ["a", "b"])' if two else 'kwker.frame.sort(df, "k")'
    comp = ('df.sort(["a", "b"], maintain_order=True)' if two
            else 'df.sort("k", maintain_order=True)')
    return Case(cid, SECTION, "int32,float64+5% null" if two else "float64+int64", desc,
                [Competitor("polars", comp, 1.5, requires="polars")], setup)


def _two_key_frame(lib, rng, n):
    a = rng.integers(-2**31, 2**31 - 1, n, dtype=np.int32)
    b = rng.random(n)
    null = rng.random(n) < 0.05
    p = rng.integers(0, 2**40, n)
    if lib.__name__ == "polars":
        return lib.DataFrame({"a": a, "b": lib.Series(b).set(lib.Series(null), None), "p": p})
    b[null] = np.nan
    return lib.DataFrame({"a": a, "b": b, "p": p})


def _two_key_case():
    cid = "frame/two-keys"

    def setup(sizes, mods):
        import kwker.frame as kf
        pd = mods["pandas"]
        df = _two_key_frame(pd, rng_for(cid), sizes.n)
        return Setup(kwker=lambda: kf.sort_values(df, ["a", "b"]),
                     competitors={"pandas(stable)":
                                  lambda: df.sort_values(["a", "b"], kind="stable")},
                     ctx=_ctx())
    return Case(cid, SECTION, "int32,float64+5% NaN", 'kwker.frame.sort_values(df, ["a", "b"])',
                [Competitor("pandas(stable)", 'df.sort_values(["a", "b"], kind="stable")', 3.0,
                            requires="pandas")],
                setup, slow=True)


WORDS = [("kw" * 30)[:i + 1] for i in range(20)]       # 20 distinct words, lengths 1..20


def _strings_case():
    cid = "frame/strings"

    def setup(sizes, mods):
        import kwker.frame as kf
        pd = mods["pandas"]
        s = pd.Series(rng_for(cid).choice(WORDS, sizes.n // 10))       # pandas 3: str dtype
        return Setup(kwker=lambda: kf.sort_values(s),
                     competitors={"pandas(stable)": lambda: s.sort_values(kind="stable")},
                     ctx=_ctx())
    return Case(cid, SECTION, "str", "kwker.frame.sort_values(s), n/10 rows, 20 distinct words",
                [Competitor("pandas(stable)", 's.sort_values(kind="stable") (pandas 3 str)',
                            2.0, requires="pandas")],
                setup, n=lambda s: s.n // 10)


@contextlib.contextmanager
def _cluster():
    import logging

    import distributed
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=None, silence_logs=logging.ERROR)
    client = distributed.Client(cluster)
    try:
        yield client
    finally:
        client.close()
        cluster.close()


def _dask_partition(i, rows):
    import pandas as pd
    rng = np.random.default_rng([14, i])
    return pd.DataFrame({"k": rng.random(rows), "p": rng.integers(0, 2**40, rows)})


def _dask_case():
    cid = "frame/dask"

    class _Held:
        """The cluster lives from setup until the case's context exits."""
        def __init__(self):
            self.stack = contextlib.ExitStack()

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return self.stack.__exit__(*exc)

    def setup(sizes, mods):
        import dask.dataframe as dd
        import distributed

        import kwker.frame.dask as kfd
        held = _Held()
        client = held.stack.enter_context(_cluster())
        # made on the workers: a frame built here would travel inside the task graph
        ddf = client.persist(dd.from_map(_dask_partition, range(4), rows=sizes.n // 4))
        distributed.wait(ddf)

        def run(make):
            out = client.persist(make())
            distributed.wait(out)
            return out
        return Setup(kwker=lambda: run(lambda: kfd.sort_values(ddf, "k")),
                     competitors={"dask": lambda: run(lambda: ddf.sort_values("k"))},
                     ctx=held)
    return Case(cid, SECTION, "float64+int64",
                'kwker.frame.dask.sort_values(ddf, "k"), 4 partitions, 2 worker processes',
                [Competitor("dask", 'ddf.sort_values("k") (pandas partition sort), persisted',
                            1.0, requires="distributed")],
                setup, slow=True)


# Short frames per call: Kwker's Python around the sort (resolving the columns, building the
# result) against the libraries' own. From 1,000 rows the target is to be at least as fast; at
# 100 rows the row is informational: pandas' own stable sort of 100 rows (21 us) costs less than
# building its result Series alone twice, and no wrapper that checks its arguments gets under it.
SMALL_FRAME_ROWS = (100, 1000, 10000)


def _small_frame_case(kind, n):
    cid = f"frame/small/{kind}/n{n}"
    polars = kind.startswith("pl.")

    def setup(sizes, mods):
        import kwker.frame as kf
        rng = rng_for(cid)
        lib = mods["polars" if polars else "pandas"]
        k, p = _floats(rng, n), rng.integers(0, 2**40, n)
        if kind == "pd.series":
            s = lib.Series(k)
            return Setup(kwker=lambda: kf.sort_values(s),
                         competitors={"lib": lambda: s.sort_values(kind="stable")}, ctx=_ctx())
        if kind == "pd.frame":
            df = lib.DataFrame({"k": k, "p": p})
            return Setup(kwker=lambda: kf.sort_values(df, "k"),
                         competitors={"lib": lambda: df.sort_values("k", kind="stable")},
                         ctx=_ctx())
        if kind == "pl.series":
            ps = lib.Series("k", k)
            return Setup(kwker=lambda: kf.sort(ps), competitors={"lib": lambda: ps.sort()},
                         ctx=_ctx())
        df = lib.DataFrame({"k": k, "p": p})
        return Setup(kwker=lambda: kf.sort(df, "k"),
                     competitors={"lib": lambda: df.sort("k", maintain_order=True)}, ctx=_ctx())
    call, comp = {
        "pd.series": ("kwker.frame.sort_values(s) (pd.Series)", 's.sort_values(kind="stable")'),
        "pd.frame": ('kwker.frame.sort_values(df, "k") (k, p)',
                     'df.sort_values("k", kind="stable")'),
        "pl.series": ("kwker.frame.sort(s) (pl.Series)", "s.sort()"),
        "pl.frame": ('kwker.frame.sort(df, "k") (k, p)', 'df.sort("k", maintain_order=True)'),
    }[kind]
    return Case(cid, SECTION, "float64" if kind.endswith("series") else "float64+int64", call,
                [Competitor("lib", comp, 1.0 if n >= 1000 else None,
                            requires="polars" if polars else "pandas")],
                setup, n=lambda s: n, small=True)


def _wide_frame_case():
    """Ten columns (five float64, five int64) sorted by the first, at a tenth of n rows."""
    cid = "frame/wide/10-columns"

    def setup(sizes, mods):
        import kwker.frame as kf
        rng = rng_for(cid)
        n = max(sizes.n // 10, 1000)
        df = mods["pandas"].DataFrame({f"c{i}": _floats(rng, n) if i % 2 == 0
                                       else rng.integers(0, 2**40, n) for i in range(10)})
        return Setup(kwker=lambda: kf.sort_values(df, "c0"),
                     competitors={"pandas(stable)":
                                  lambda: df.sort_values("c0", kind="stable")}, ctx=_ctx())
    return Case(cid, SECTION, "5 float64 + 5 int64", 'kwker.frame.sort_values(df, "c0")',
                [Competitor("pandas(stable)", 'df.sort_values("c0", kind="stable")', 1.0,
                            requires="pandas")],
                setup, n=lambda s: max(s.n // 10, 1000))


def cases():
    return [_series_case(), _polars_series_case(), _key_payload_case(),
            _polars_frame_case(False), _two_key_case(), _polars_frame_case(True),
            _strings_case(), _dask_case(), _wide_frame_case()] + [
        _small_frame_case(kind, n) for kind in ("pd.series", "pd.frame", "pl.series", "pl.frame")
        for n in SMALL_FRAME_ROWS]
