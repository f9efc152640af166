"""kwker.frame: sort pandas, Polars and Dask frames with Kwker, following each library's rules.

    kwker.frame.sort_values(obj, by, *, ascending=True, na_position="last",
                            ignore_index=False, key=None)        # pandas, = sort_values(kind="stable")
                                                  # (by left out for a Series; None is a label)
    kwker.frame.arg_sort(obj, by, ...)                             # pandas row positions
    kwker.frame.sort_index(obj, *, level=None, ascending=True, na_position="last",
                           sort_remaining=True, ignore_index=False, key=None)
                                                                  # pandas, = sort_index(kind="stable")
    kwker.frame.sort(df, by=None, *, descending=False, nulls_last=False)
                                      # Polars DataFrame / Series / LazyFrame, = sort(maintain_order=True)
    kwker.frame.dask.sort_values(ddf, by, **kw)                   # Dask's distributed sort, Kwker per partition
    kwker.frame.install() / uninstall()                           # df.kwker.sort_values(...), df.kwker.sort(...)

pandas, Polars, pyarrow and Dask are imported on first use, never by `import kwker.frame`.
With KWKER_DISABLE=1 every function calls the library's own sort instead. See docs/frame.md.
"""
from ._accessors import install, uninstall
from ._pandas import arg_sort, sort_index, sort_values
from ._polars import sort
from ._status import status

__all__ = ["sort_values", "arg_sort", "sort_index", "sort", "install", "uninstall", "status",
           "dask"]


def __getattr__(name):
    if name == "dask":                       # kwker.frame.dask imports nothing until used
        import importlib
        return importlib.import_module(".dask", __name__)
    raise AttributeError(f"module 'kwker.frame' has no attribute {name!r}")
