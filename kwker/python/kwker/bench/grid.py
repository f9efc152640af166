"""The short-input grid: rows of every length, small 1-D calls and short segments.

These are the shapes users meet first (a matrix of short rows, one small array per call,
many short groups) and the shapes the troubleshooting page tells them to batch into.
Targets: never slower than NumPy in any cell; in the axis=1 grid, at least 2x for sort and 4x
for the stable argsort wherever a row has 16 or more elements. The same sorts down the columns
of a C-order matrix (axis=0: columns of 16 keys, of 1,000, and narrow matrices of 10 columns of
100,000). Top-k of rows (kwker.topk, sorted values and indices) against what a NumPy user writes
for it: np.argpartition, then the k taken and sorted; the same down the columns (axis=0). And
every dtype Kwker sorts at 10,000, 100,000 and 1,000,000 keys per 1-D call (section 16). The
other ways of calling on short arrays (threads=1, descending, strided views, axis=None of a
matrix, a 1-D top-k) per call in section 11 (grid/entry/...).
"""
import numpy as np

import kwker

from .cases import Case, Competitor, Setup, rng_for, uniform

ROW_LENGTHS = (2, 3, 4, 7, 8, 16, 32, 64, 100, 256, 1000)
COL_LENGTHS = (16, 1000, 100000)  # sort / argsort down the columns (axis=0)
SMALL_SIZES = (8, 16, 64, 256, 1000)
DTYPES = ("float32", "int32", "float64", "int64", "int16")
TOPK_ROWS = ((100, 5), (100, 12), (1000, 5), (1000, 125), (10000, 100), (10000, 1250))  # (L, k)
TOPK_COLS = ((1000, 5), (1000, 125), (10000, 16))  # (column length L, k), along axis 0

def _row_target(op, length):
    if length < 16:
        return 1.0
    return 2.0 if op == "sort" else 4.0


def _sort_setup(op, a, axis=None):
    """kwker.sort / kwker.argsort of `a` (along `axis`) against np.sort / NumPy's stable argsort.
    Separate lambdas per form: the small rows time the calls themselves."""
    if axis is None:
        if op == "sort":
            return Setup(kwker=lambda: kwker.sort(a), competitors={"np": lambda: np.sort(a)})
        return Setup(kwker=lambda: kwker.argsort(a),
                     competitors={"np": lambda: np.argsort(a, kind="stable")})
    if op == "sort":
        return Setup(kwker=lambda: kwker.sort(a, axis=axis),
                     competitors={"np": lambda: np.sort(a, axis=axis)})
    return Setup(kwker=lambda: kwker.argsort(a, axis=axis),
                 competitors={"np": lambda: np.argsort(a, axis=axis, kind="stable")})


def _np_desc(op, axis=None):
    if axis is None:
        return "np.sort(a)" if op == "sort" else 'np.argsort(a, kind="stable")'
    return (f"np.sort(m, axis={axis})" if op == "sort"
            else f'np.argsort(m, axis={axis}, kind="stable")')


def _rows_case(op, dtype, length, axis=1):
    """Sort / stable argsort of rows of `length` keys (axis=1), or down columns of `length` keys
    of a C-order matrix (axis=0)."""
    cid = f"grid/{op}/{dtype}/{'rows' if axis else 'cols'}{length}"

    def setup(sizes, mods):
        other = max(1, sizes.grid // length)
        m = uniform(rng_for(cid), dtype, other * length)
        return _sort_setup(op, m.reshape((other, length) if axis else (length, other)), axis)
    target = _row_target(op, length) if axis else 1.0
    shape = ((lambda s: f"{max(1, s.grid // length)}x{length}") if axis
             else (lambda s: f"{length}x{max(1, s.grid // length)}"))
    return Case(cid, "10", dtype, f"kwker.{op}(m, axis={axis})",
                [Competitor("np", _np_desc(op, axis), target)], setup,
                n=lambda s: max(1, s.grid // length) * length, shape=shape)


# Matrices of 16,000-70,000 keys: around where rows start splitting over the threads
# (core/engine.h's rows_parallel_min: 131,072 key steps, keys x the bits of the row length, at
# least 16,384 keys). Each call against NumPy and against Kwker's own one thread: two threads
# never slower than one at any size.
MID_ROWS = ((4, 70000), (16, 20000), (16, 70000), (100, 20000), (1000, 20000), (1000, 70000))
MID_DTYPES = ("float32", "int16", "float64")


def _mid_rows_case(op, dtype, length, total):
    cid = f"grid/{op}/{dtype}/rows{length}/n{total}"
    rows = total // length

    def setup(sizes, mods):
        m = uniform(rng_for(cid), dtype, rows * length).reshape(rows, length)
        base = _sort_setup(op, m, 1)
        f = getattr(kwker, op)
        base.competitors["kwker-t1"] = lambda: f(m, axis=1, threads=1)
        return base
    return Case(cid, "10", dtype, f"kwker.{op}(m, axis=1)",
                [Competitor("np", _np_desc(op, 1), 1.0),
                 Competitor("kwker-t1", f"kwker.{op}(m, axis=1, threads=1)", 0.97)],
                setup, n=lambda s: rows * length, shape=lambda s: f"{rows}x{length}",
                small=True)


def _topk_case(dtype, length, k, axis=1, total=None):
    """Top-k of rows of `length` keys (axis=1), or down columns of `length` keys (axis=0); of
    `total` keys a call instead of the grid's (the matrices where rows split from 32,768)."""
    cid = f"grid/topk/{dtype}/{'rows' if axis else 'cols'}{length}/k{k}"
    if total:
        cid += f"/n{total}"
    per_call = (lambda s: total) if total else (lambda s: s.grid)

    def setup(sizes, mods):
        other = max(1, per_call(sizes) // length)
        m = uniform(rng_for(cid), dtype, other * length)
        m = m.reshape((other, length) if axis else (length, other))

        last_k = (slice(None), slice(length - k, None)) if axis else slice(length - k, None)

        def np_topk():
            i = np.argpartition(m, length - k, axis=axis)[last_k]
            v = np.take_along_axis(m, i, axis=axis)
            o = np.flip(np.argsort(v, axis=axis), axis=axis)
            return np.take_along_axis(v, o, axis=axis), np.take_along_axis(i, o, axis=axis)
        return Setup(kwker=lambda: kwker.topk(m, k, axis=axis), competitors={"np": np_topk})
    np_desc = (f"np.argpartition(m, L - k, axis={axis}), the k values taken and sorted "
               "descending (np.take_along_axis, np.argsort)")
    shape = ((lambda s: f"{max(1, per_call(s) // length)}x{length}") if axis
             else (lambda s: f"{length}x{max(1, per_call(s) // length)}"))
    return Case(cid, "10", dtype, f"kwker.topk(m, {k}, axis={axis})",
                [Competitor("np", np_desc, 1.0)], setup,
                n=lambda s: max(1, per_call(s) // length) * length, shape=shape,
                small=bool(total))


TIME_DTYPES = ("datetime64", "timedelta64")  # nanoseconds; NaT in one key of 64
EVERY_DTYPE = DTYPES + ("bool", "int8", "uint8", "uint16", "uint32", "uint64",
                        "float16") + TIME_DTYPES
MID_SIZES = (10000, 100000, 1000000)


def _any_dtype(rng, dtype, n):
    """uniform() for every dtype Kwker sorts: bools half true, float16 from float32, datetime64
    and timedelta64 (ns) over +-146 years with NaT in one key of 64."""
    if dtype == "bool":
        return rng.integers(0, 2, size=n).astype(bool)
    if dtype == "float16":
        return rng.random(n, dtype=np.float32).astype(np.float16)
    if dtype in TIME_DTYPES:
        a = rng.integers(-(1 << 62), 1 << 62, size=n, dtype=np.int64).view(f"{dtype}[ns]")
        a[rng.random(n) < 1 / 64] = np.array("NaT", a.dtype)
        return a
    return uniform(rng, dtype, n)


def _flat_case(op, dtype, n, prefix="grid", section="11"):
    """A 1-D call of n keys: the small rows (section 11, many calls per sample) and every dtype
    at the sizes between them and 1e6 (section 16)."""
    cid = f"{prefix}/{op}/{dtype}/n{n}"

    def setup(sizes, mods):
        return _sort_setup(op, _any_dtype(rng_for(cid), dtype, n))
    return Case(cid, section, dtype, f"kwker.{op}(a)", [Competitor("np", _np_desc(op), 1.0)],
                setup, n=lambda s: n, small=section == "11")


# Per-call rows of the other ways users call sort / argsort / topk on short arrays: options,
# views, N-d arrays flattened and a 1-D top-k, each against what a NumPy user writes for it.
ENTRY_SIZES = (16, 1000)


def _entry_cases():
    def make(name, kwker_desc, np_desc, build, n):
        cid = f"grid/entry/{name}/n{n}"

        def setup(sizes, mods):
            a = uniform(rng_for(cid), "float64", 2 * n)
            # x: n keys, v: n keys every second one of a (strided), m: x as a 2 x n/2 matrix
            x = a[:n].copy()
            kw, comp = build(x, a[::2], x.reshape(2, -1))
            return Setup(kwker=kw, competitors={"np": comp})
        return Case(cid, "11", "float64", kwker_desc, [Competitor("np", np_desc, 1.0)], setup,
                    n=lambda s: n, small=True)

    forms = (
        ("sort-threads1", "kwker.sort(a, threads=1)", "np.sort(a)",
         lambda x, v, m: (lambda: kwker.sort(x, threads=1), lambda: np.sort(x))),
        ("argsort-threads1", "kwker.argsort(a, threads=1)", 'np.argsort(a, kind="stable")',
         lambda x, v, m: (lambda: kwker.argsort(x, threads=1),
                          lambda: np.argsort(x, kind="stable"))),
        ("sort-descending", "kwker.sort(a, descending=True)", "np.sort(a)[::-1] (a view)",
         lambda x, v, m: (lambda: kwker.sort(x, descending=True), lambda: np.sort(x)[::-1])),
        ("argsort-descending", "kwker.argsort(a, descending=True)",
         'np.argsort(-a, kind="stable")',
         lambda x, v, m: (lambda: kwker.argsort(x, descending=True),
                          lambda: np.argsort(-x, kind="stable"))),
        ("sort-strided", "kwker.sort(a[::2])", "np.sort(a[::2])",
         lambda x, v, m: (lambda: kwker.sort(v), lambda: np.sort(v))),
        ("argsort-strided", "kwker.argsort(a[::2])", 'np.argsort(a[::2], kind="stable")',
         lambda x, v, m: (lambda: kwker.argsort(v), lambda: np.argsort(v, kind="stable"))),
        ("sort-flattened", "kwker.sort(m, axis=None), m of 2 x n/2", "np.sort(m, axis=None)",
         lambda x, v, m: (lambda: kwker.sort(m, axis=None), lambda: np.sort(m, axis=None))),
        ("topk", "kwker.topk(a, 5)",
         "np.argpartition(a, n - 5), the 5 taken and sorted descending",
         lambda x, v, m: (lambda: kwker.topk(x, 5), lambda: _np_topk_1d(x, 5))),
    )
    return [make(name, kd, nd, build, n) for name, kd, nd, build in forms for n in ENTRY_SIZES]


def _segments_entry_case(n, with_indices):
    """One short kwker.sort_segments call (n values in segments of 1-64) against np.lexsort
    with the segment ids prebuilt, as section 12 times it at 1e6 values; from 40,000 values
    (where segments split over the threads from 32,768) also against Kwker's one thread."""
    cid = f"grid/entry/sort_segments{'-indices' if with_indices else ''}/n{n}"
    with_t1 = n >= 40000

    def setup(sizes, mods):
        rng = rng_for(cid)
        offsets, seg_ids = short_segments(rng, n)
        v = uniform(rng, "float64", int(offsets[-1]))
        comps = {"np": (lambda: np.lexsort((v, seg_ids))) if with_indices
                 else (lambda: v[np.lexsort((v, seg_ids))])}
        if with_t1:
            comps["kwker-t1"] = lambda: kwker.sort_segments(v, offsets,
                                                            return_indices=with_indices, threads=1)
        return Setup(kwker=lambda: kwker.sort_segments(v, offsets, return_indices=with_indices),
                     competitors=comps)
    call = "kwker.sort_segments(v, offsets" + (", return_indices=True" if with_indices else "")
    desc = "np.lexsort((v, segment_ids))" + ("" if with_indices else " then v[order]")
    comps = [Competitor("np", desc, 1.0)]
    if with_t1:
        comps.append(Competitor("kwker-t1", call + ", threads=1)", 0.97))
    return Case(cid, "11", "float64", call + ")", comps, setup, n=lambda s: n, small=True)


def _np_topk_1d(a, k):
    i = np.argpartition(a, a.size - k)[a.size - k:]
    o = np.argsort(a[i])[::-1]
    return a[i][o], i[o]


NARROW_SIZES = (300, 1000, 10000, 100000, 1000000)


def _narrow_case(n):
    """Stable argsort of int64 keys in [0, 256) (codes, small counts): the range the 64-bit
    radix takes (radix64_argsort_max_bits) at every size, around its radix64_argsort_min."""
    cid = f"dtypes/argsort/int64-8bit/n{n}"

    def setup(sizes, mods):
        a = rng_for(cid).integers(0, 256, size=n, dtype=np.int64)
        return _sort_setup("argsort", a)
    return Case(cid, "16", "int64", "kwker.argsort(a), keys in [0, 256)",
                [Competitor("np", _np_desc("argsort"), 1.0)], setup, n=lambda s: n,
                small=n <= 1000)


def _reversed_case(dtype, n):
    """Stable argsort of a non-increasing input (values sorted descending: a ranking read
    back, timestamps newest first), the presorted check's reversal."""
    cid = f"dtypes/argsort/{dtype}-reversed/n{n}"

    def setup(sizes, mods):
        a = np.sort(uniform(rng_for(cid), dtype, n))[::-1].copy()
        return _sort_setup("argsort", a)
    return Case(cid, "16", dtype, "kwker.argsort(a), a sorted descending",
                [Competitor("np", _np_desc("argsort"), 1.0)], setup, n=lambda s: n,
                small=n <= 1000)


# Inputs that are not uniform, where a sort's special paths take over: few distinct values
# (the dictionary count), all keys equal (the presorted check). Sizes where a sweep against
# np.sort found Kwker slower before those paths covered them.
DISTRIBUTIONS = (("int16", "4-values", 3000), ("int16", "4-values", 300000),
                 ("int16", "20-values", 300000), ("uint16", "4-values", 300000),
                 ("int32", "4-values", 30000), ("float32", "4-values", 30000),
                 ("uint16", "equal", 300000), ("uint32", "equal", 30000),
                 ("uint64", "equal", 30000))


def distribution(rng, dtype, kind, n):
    """n keys of `kind`: 'D-values' (D distinct values drawn from the dtype's whole range,
    in random order) or 'equal' (one value)."""
    if kind == "equal":
        return np.full(n, uniform(rng, dtype, 1)[0])
    pool = np.unique(uniform(rng, dtype, 4 * int(kind.split("-")[0])))[:int(kind.split("-")[0])]
    return pool[rng.integers(0, pool.size, size=n)]


def _distribution_case(dtype, kind, n):
    cid = f"dtypes/sort/{dtype}-{kind}/n{n}"

    def setup(sizes, mods):
        return _sort_setup("sort", distribution(rng_for(cid), dtype, kind, n))
    what = "all keys equal" if kind == "equal" else f"{kind.split('-')[0]} distinct values"
    return Case(cid, "16", dtype, f"kwker.sort(a), {what}",
                [Competitor("np", _np_desc("sort"), 1.0)], setup, n=lambda s: n,
                small=n <= 3000)


def _small_cols_case(op, dtype, rows, cols):
    """One small matrix per call along axis 0 (the per-call overhead of the column path)."""
    cid = f"grid/{op}/{dtype}/axis0-{rows}x{cols}"

    def setup(sizes, mods):
        return _sort_setup(op, uniform(rng_for(cid), dtype, rows * cols).reshape(rows, cols), 0)
    return Case(cid, "11", dtype, f"kwker.{op}(m, axis=0)",
                [Competitor("np", _np_desc(op, 0), 1.0)], setup, n=lambda s: rows * cols,
                shape=lambda s: f"{rows}x{cols}", small=True)


def short_segments(rng, total):
    """Offsets of segments of 1-64 elements covering about `total` values, and segment ids."""
    lengths = rng.integers(1, 65, size=total // 32 + 1)
    offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
    offsets = offsets[offsets <= total]
    seg_ids = np.repeat(np.arange(offsets.size - 1, dtype=np.int64), np.diff(offsets))
    return offsets, seg_ids


def fused_key(values, seg_ids):
    """One int64 per value whose order is (segment, value): the segment id in the high 32 bits,
    the float32 value as an order-preserving 32-bit key in the low ones (NaN-free data)."""
    bits = values.view(np.uint32).astype(np.int64)
    key = np.where(bits & 0x80000000, bits ^ 0xFFFFFFFF, bits | 0x80000000)
    return (seg_ids << 32) | key


def _segments_case(dtype, with_indices):
    cid = f"grid/sort_segments/{dtype}" + ("/indices" if with_indices else "")

    def setup(sizes, mods):
        rng = rng_for(cid)
        offsets, seg_ids = short_segments(rng, sizes.grid)
        v = uniform(rng, dtype, int(offsets[-1]))
        comps = {}
        if with_indices:
            comps["np.lexsort"] = lambda: np.lexsort((v, seg_ids))
            kw = lambda: kwker.sort_segments(v, offsets, return_indices=True)  # noqa: E731
        else:
            comps["np.lexsort"] = lambda: v[np.lexsort((v, seg_ids))]
            kw = lambda: kwker.sort_segments(v, offsets)  # noqa: E731
        if dtype == "float32":
            fused = fused_key(v, seg_ids)  # built once, outside the timed region
            if with_indices:
                comps["np.argsort(fused)"] = lambda: np.argsort(fused, kind="stable")
            else:
                comps["np.sort(fused)"] = lambda: np.sort(fused)
        return Setup(kwker=kw, competitors=comps)
    call = "kwker.sort_segments(v, offsets" + (", return_indices=True)" if with_indices else ")")
    comps = [Competitor("np.lexsort", "np.lexsort((v, segment_ids))" +
                        ("" if with_indices else " then v[order]"), 1.0)]
    if dtype == "float32":
        comps.append(Competitor(
            "np.argsort(fused)" if with_indices else "np.sort(fused)",
            ("np.argsort(k, kind='stable')" if with_indices else "np.sort(k)") +
            " of a prebuilt int64 key (segment << 32 | order-preserving float32 bits)", 1.0))
    return Case(cid, "12", dtype, call, comps, setup,
                n=lambda s: s.grid, shape=lambda s: "segments of 1-64")


def grid_cases():
    cases = [_rows_case(op, dt, length)
             for dt in DTYPES for op in ("sort", "argsort") for length in ROW_LENGTHS]
    cases += [_mid_rows_case(op, dt, length, total)
              for dt in MID_DTYPES for op in ("sort", "argsort") for length, total in MID_ROWS]
    cases += [_rows_case(op, dt, length, axis=0)
              for dt in DTYPES for op in ("sort", "argsort") for length in COL_LENGTHS]
    cases += [_topk_case(dt, length, k) for dt in DTYPES for length, k in TOPK_ROWS]
    cases += [_topk_case(dt, length, k, total=40000) for dt in ("float32", "float64")
              for length, k in ((100, 5), (1000, 10))]
    cases += [_topk_case(dt, length, k, axis=0) for dt in DTYPES for length, k in TOPK_COLS]
    cases += [_flat_case(op, dt, n) for dt in DTYPES + TIME_DTYPES
              for op in ("sort", "argsort") for n in SMALL_SIZES]
    cases += [_small_cols_case(op, dt, r, c) for dt in DTYPES for op in ("sort", "argsort")
              for r, c in ((16, 16), (100, 10))]
    cases += _entry_cases()
    cases += [_segments_entry_case(n, ind) for n in (100, 1000, 40000) for ind in (False, True)]
    cases += [_segments_case(dt, ind) for dt in ("float32", "float64") for ind in (False, True)]
    cases += [_narrow_case(n) for n in NARROW_SIZES]
    cases += [_reversed_case(dt, n) for dt in ("float32", "float64", "int64")
              for n in (300, 3000, 30000, 300000)]
    cases += [_distribution_case(dt, kind, n) for dt, kind, n in DISTRIBUTIONS]
    cases += [_flat_case(op, dt, n, "dtypes", "16") for dt in EVERY_DTYPE
              for op in ("sort", "argsort") for n in MID_SIZES]
    return cases
