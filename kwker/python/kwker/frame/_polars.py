"""kwker.frame.sort for Polars: equal to Polars' sort(..., maintain_order=True), with the row
order computed by Kwker.

Polars' rules: null is not NaN. Nulls go first unless nulls_last (per column), in both
directions; NaN is larger than every other value, so it comes last ascending and first
descending. Categoricals order by their strings, Enums by category order. Data leaves Polars
through its Arrow buffers (no copy for numeric and temporal columns); the result is built with
Polars' own multi-threaded gather.
"""
import numpy as np

from . import _keys, _lazy, _polars_rules, _ranks, _switch


def _pl():
    return _lazy.require("polars", "sorting a Polars object")


def series_key(s, name, descending, nulls_last):
    """The Key of one Polars Series under Polars' rules."""
    pl = _pl()
    dt = s.dtype
    null = s.is_null().to_numpy() if s.null_count() else None
    first = not nulls_last
    if dt == pl.Null:
        return None                                  # all null: every row ties
    if dt.is_float():
        return _keys.Key(_numeric(s), descending, null, first, nans_first=descending)
    if dt.is_integer():
        if dt in (pl.Int128, pl.UInt128):
            return _wide_int(s, dt == pl.Int128, descending, null, first)
        return _keys.Key(_numeric(s), descending, null, first)
    if dt == pl.Boolean:
        return _keys.Key(s.fill_null(False).to_numpy(), descending, null, first)
    if dt.is_temporal():
        return _keys.Key(_numeric(s.to_physical()), descending, null, first)
    if isinstance(dt, pl.Enum):
        codes = s.to_physical()
        return _keys.Key(_numeric(codes), descending, null, first, ncodes=len(dt.categories))
    if isinstance(dt, pl.Categorical):
        return _ranked(s.cast(pl.String), name, descending, null, first)
    if dt in (pl.String, pl.Binary) or dt.is_decimal():
        return _ranked(s, name, descending, null, first)
    if dt == pl.Object:
        raise _polars_rules.not_sortable(name, "object")
    raise _ranks.unsupported(
        name, str(dt), "kwker.frame",
        fix="Sort by other columns, convert this one (for example .cast(pl.String)), or sort "
            "with Polars' own df.sort(by, maintain_order=True), which orders nested types.")


def _wide_int(s, signed, descending, null, first):
    """128-bit integers (which have no Arrow or NumPy type): two 64-bit keys, high then low.
    Python ints carry them across, so this column type is slow, but exact."""
    vals = [0 if v is None else v for v in s.to_list()]
    hi = np.array([v >> 64 for v in vals], np.int64 if signed else np.uint64)
    lo = np.array([v & 0xFFFF_FFFF_FFFF_FFFF for v in vals], np.uint64)
    return [_keys.Key(hi, descending, null, first), _keys.Key(lo, descending, null, first)]


def _numeric(s):
    """A numeric Series' values as NumPy without a copy (slots under nulls hold anything)."""
    if not s.null_count():
        return s.to_numpy()
    a = s.to_arrow()
    dtype = np.dtype(a.type.to_pandas_dtype())
    return np.frombuffer(a.buffers()[1], dtype=dtype, count=len(a) + a.offset)[a.offset:]


def _ranked(s, name, descending, null, first):
    ranks, _, nd = _ranks.arrow_ranks(s.to_arrow(), name, "Polars")
    return _keys.Key(ranks, descending, null, first, ncodes=nd)


def _key_columns(df, by):
    """[(name, Series, is_column)] for `by`: column names or Polars expressions (anything else
    is a literal, as Polars reads it); is_column: the key is one of the frame's columns."""
    pl = _pl()
    items = list(by) if isinstance(by, (list, tuple)) else [by]
    out = []
    for item in items:
        if isinstance(item, str):
            if item not in df.columns:
                raise _polars_rules.column_not_found(item, df.columns)
            out.append((item, df.get_column(item), True))
            continue
        expr = item if isinstance(item, pl.Expr) else pl.lit(item)
        s = df.select(expr).to_series()
        if len(s) != df.height:
            raise _polars_rules.shape_mismatch(df.height, len(s))
        out.append((s.name, s, expr.meta.is_column()))
    return out


def _order(cols, desc, nulls_last, n):
    keys = []
    for (name, s, _), d, last in zip(cols, desc, nulls_last):
        k = series_key(s, name, d, last)
        keys.extend(k if isinstance(k, list) else [] if k is None else [k])
    return _keys.order(keys, n)


def _sort_series(s, descending, nulls_last):
    desc = _polars_rules.series_flag(descending, "descending")
    last = _polars_rules.series_flag(nulls_last, "nulls_last")
    pl = _pl()
    if _polars_rules.already_sorted([(s.name, s, True)], [desc], [last]):
        return s.clone()                        # Polars' fast path: its chunks are kept
    if s.null_count() == 0 and (s.dtype.is_float() or s.dtype.is_integer()) \
            and s.dtype not in (pl.Int128, pl.UInt128) and len(s):
        out = _value_sort(s, desc)
    else:
        perm = _order([(s.name, s, True)], [desc], [last], len(s))
        out = s.gather(_index_series(perm))
    return _polars_rules.flag_series(out, desc)


def _value_sort(s, desc):
    """A null-free numeric Series sorted by value (kwker.sort), as the stable sort gives it:
    the zeros and NaNs, which compare equal but differ in bits, keep their input order."""
    import kwker
    pl = _pl()
    v = s.to_numpy()
    out = kwker.sort(v, descending=desc, nans_first=desc)
    if v.dtype.kind == "f":
        _stable_fixups(v, out)
    return pl.Series(s.name, out, dtype=s.dtype)


def _stable_fixups(v, out):
    zero = v == 0
    if zero.any() and np.signbit(v[zero]).any():
        _refill(out, out == 0, v[zero])
    nan = np.isnan(v)
    if nan.any():
        _refill(out, np.isnan(out), v[nan])


def _refill(out, where, values):
    idx = np.flatnonzero(where)            # one contiguous run in a sorted array
    out[idx[0]:idx[-1] + 1] = values


def sort(df, by=None, *, descending=False, nulls_last=False):
    """What Polars' sort(by, descending=..., nulls_last=..., maintain_order=True) returns, sorted
    by Kwker. DataFrame and LazyFrame need by (names or expressions); a Series ignores it."""
    pl = _pl()
    if isinstance(df, pl.Series):
        if _switch.off():
            return df.sort(descending=descending, nulls_last=nulls_last)
        return _sort_series(df, descending, nulls_last)
    if isinstance(df, (pl.DataFrame, pl.LazyFrame)):
        kind = type(df).__name__
        if by is None:
            raise TypeError(f"kwker.frame.sort: a {kind} needs by= (a column name, an "
                            "expression, or a list of them)")
        if _switch.off():
            return df.sort(by, descending=descending, nulls_last=nulls_last, maintain_order=True)
        count = len(by) if isinstance(by, (list, tuple)) else 1
        desc = _polars_rules.flags(descending, count, "descending")
        last = _polars_rules.flags(nulls_last, count, "nulls_last")
        if not count:                     # Polars: sorting by nothing leaves the frame as it is
            return df.clone() if isinstance(df, pl.DataFrame) else df
        if isinstance(df, pl.LazyFrame):  # the plan sorts with Kwker when it is collected
            return df.map_batches(lambda batch: _sort_frame(batch, by, desc, last),
                                  schema=df.collect_schema(), streamable=False)
        return _sort_frame(df, by, desc, last)
    hint = (" (a pandas object: use kwker.frame.sort_values)"
            if type(df).__module__.startswith("pandas") else "")
    raise TypeError(f"kwker.frame.sort: expected a Polars DataFrame, LazyFrame or Series, got "
                    f"{type(df).__module__}.{type(df).__name__}{hint}")


def _sort_frame(df, by, desc, last):
    keys = _key_columns(df, by)
    if _polars_rules.already_sorted(keys, desc, last):
        return df.clone()                       # Polars' fast path: its chunks are kept
    out = df[_index_series(_order(keys, desc, last, df.height))]
    return _polars_rules.flag_first_key(out, keys, desc)


def _index_series(perm):
    """The permutation as a Series of Polars' own index type, which its gather reads without
    converting (saves about a third of the gather at 1e7 rows)."""
    pl = _pl()
    if pl.get_index_type() == pl.UInt32 and perm.size < 2**32:
        return pl.Series(perm.astype(np.uint32))
    return pl.Series(perm)
