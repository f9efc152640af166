"""kwker.frame.dask: Dask's own distributed sort, with Kwker sorting every partition.

    import kwker.frame.dask
    out = kwker.frame.dask.sort_values(ddf, "key", ascending=False)

Dask keeps everything it does around a sort: sampling the keys, choosing divisions,
shuffling rows between workers, partitioning. Kwker comes in through Dask's own hook,
`sort_values(..., sort_function=...)`, as the function that sorts each partition, with pandas'
rules (kwker.frame.sort_values). The workers need kwker installed, as they need pandas.

Dask's default partition sort is pandas' quicksort (not stable), and its shuffle order varies
from run to run, so two distributed sorts agree on the order of the keys and, for each key,
on the set of rows, not on the order of rows with equal keys.
"""
from . import _lazy, _switch


def _partition_sort(df, **kw):
    from ._pandas import sort_values as _sort_values
    return _sort_values(df, **kw)


def sort_values(ddf, by, **kw):
    """ddf.sort_values(by, **kw) (Dask's arguments: ascending, na_position, npartitions,
    ignore_index, upsample, partition_size, shuffle_method...) with Kwker's partition sort."""
    dd = _lazy.require("dask.dataframe", "kwker.frame.dask.sort_values")
    if not isinstance(ddf, dd.DataFrame):
        raise TypeError(f"kwker.frame.dask.sort_values: expected a dask DataFrame, got "
                        f"{type(ddf).__module__}.{type(ddf).__name__}")
    if "sort_function" in kw or "sort_function_kwargs" in kw:
        raise TypeError("kwker.frame.dask.sort_values: sort_function is Kwker's here; call "
                        "ddf.sort_values(...) directly to use another one")
    labels = by if isinstance(by, list) else [by]
    missing = [b for b in labels if b not in ddf.columns]
    if missing:
        raise KeyError(f"kwker.frame.dask.sort_values: no column named {missing[0]!r}; the "
                       f"columns are {list(ddf.columns)[:20]}")
    asc = kw.get("ascending", True)
    if isinstance(asc, (list, tuple)) and len(asc) != len(labels):
        raise ValueError(f"kwker.frame.dask.sort_values: ascending has {len(asc)} entries but "
                         f"by has {len(labels)}; give one flag per by entry, or one bool")
    if _switch.off():
        return ddf.sort_values(by, **kw)
    return ddf.sort_values(by, sort_function=_partition_sort, **kw)
