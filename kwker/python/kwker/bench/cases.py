"""The benchmark rows: what kwker runs, what it is compared with, and the target ratio.

A `Case` builds its inputs once (`setup`, outside any timed region) and returns callables
that each return a new array as users see it. One case may have several competitors; they are
timed in the same interleaved rounds as the kwker call, and each gives one row named
"<case id> vs <competitor key>".

Ratios are competitor time / kwker time, so > 1 means kwker is faster.
"""
import contextlib
import dataclasses
import zlib
from typing import Callable, Optional

import numpy as np

import kwker


@dataclasses.dataclass(frozen=True)
class Sizes:
    preset: str            # "full" | "quick" | "smoke"
    n: int                 # large 1-D inputs
    small: int             # the per-call overhead rows
    rows: int              # matrix rows
    cols: int              # matrix columns
    segments: int          # ragged segments in n values
    repeats: int           # default interleaved repeats
    slow_repeats: int      # repeats for rows whose competitor takes ~1 s per call
    min_time: float        # seconds one timed sample must last (looped when shorter)
    small_min_time: float  # the same for the small-array rows
    grid: int              # elements per call in the short-row and segment grid (grid.py)

    def as_dict(self):
        return dataclasses.asdict(self)


PRESETS = {
    "full": Sizes("full", n=10_000_000, small=1_000, rows=10_000, cols=1_000, segments=10_000,
                  repeats=9, slow_repeats=5, min_time=0.02, small_min_time=0.1, grid=1_000_000),
    "quick": Sizes("quick", n=1_000_000, small=1_000, rows=1_000, cols=1_000, segments=1_000,
                   repeats=5, slow_repeats=5, min_time=0.01, small_min_time=0.03,
                   grid=1_000_000),
    # Tiny inputs for the test-suite: checks the machinery, measures nothing useful.
    "smoke": Sizes("smoke", n=20_000, small=200, rows=20, cols=100, segments=20,
                   repeats=5, slow_repeats=5, min_time=0.0, small_min_time=0.0, grid=4_000),
}


@dataclasses.dataclass
class Competitor:
    key: str                       # short id, part of the row name
    desc: str                      # the exact call that is timed
    target: Optional[float]        # minimum ratio competitor/kwker, None: informational
    requires: Optional[str] = None  # optional module ("torch", "polars")
    # The target instead where the competitor is held to AVX2 (section 8's AVX2-only NumPy, or a
    # whole run under --isa avx2): some promises are made for AVX2 machines only (issue 31).
    avx2_target: Optional[float] = None

    def target_for(self, avx2_only):
        return self.avx2_target if avx2_only and self.avx2_target is not None else self.target


@dataclasses.dataclass
class Setup:
    kwker: Callable
    competitors: dict              # key -> callable
    ctx: object = None             # context manager held while the case is timed


@dataclasses.dataclass
class Case:
    id: str
    section: str
    dtype: str
    kwker_desc: str
    competitors: list
    setup: Callable                # (sizes, mods) -> Setup
    n: Callable = lambda s: s.n    # elements per call, for the report
    shape: Callable = None         # optional: shape string for the report
    slow: bool = False             # competitor takes ~1 s per call at full size
    small: bool = False            # per-call overhead row: many calls per sample
    avx2: bool = False             # has an np.sort competitor worth an AVX2-only column
    note: str = ""

    def row_name(self, comp_key, prefix=""):
        return f"{prefix}{self.id} vs {comp_key}"


SECTIONS = {
    "1": "1. Value sort, 32-bit keys (uniform random)",
    "2": "2. Value sort, 64-bit keys (uniform random; 2 threads, and 1 thread against NumPy's "
         "AVX2 sort)",
    "3": "3. Stable argsort (uniform random)",
    "4": "4. Rows and ragged segments (float32)",
    "5": "5. Special inputs",
    "6": "6. Small arrays (per call, many calls per sample)",
    "7": "7. Informational rows (no target)",
    "8": "8. AVX2-only baseline: np.sort with AVX-512 dispatch disabled vs kwker's avx2 engine",
    "9": "9. DataFrames: kwker.frame vs pandas / Polars / Dask (2 threads; results identical "
         "to the stable sort)",
    "10": "10. Rows of every length and columns (axis=1 and axis=0, about 1e6 elements per call, "
          "default threads; and matrices of 16,000-70,000 keys against NumPy and Kwker's one "
          "thread)",
    "11": "11. Small 1-D arrays (per call, many calls per sample)",
    "12": "12. Short segments (1-64 elements each, about 1e6 values per call)",
    "13": "13. PyTorch: torch calls with kwker.torch_ops installed vs torch's own kernels, and "
          "torch.compile(backend=\"kwker\") (2 threads)",
    "16": ("16. Every dtype, 1-D (10,000, 100,000 and 1,000,000 keys per call, default threads), "
           "and inputs of few distinct or equal keys"),
    # Run only with --only cpu_backend (bench/cpu_backend.py): it loads models for minutes.
    "14": "14. CPU backend: decode tok/s (batch 1, 64 new tokens, 2 threads, generate()) and a "
          "256-token prompt, each mode vs torch in its precision",
    # Run only with --only contention (bench/contention.py): it starts processes of its own.
    "15": "15. Contention: alone, beside a busy process and beside a second copy, each side's "
          "slow-down (2 threads)",
}


# ---------------------------------------------------------------- data

def rng_for(case_id):
    """The same inputs for the same case in every process (the AVX2 child rebuilds them)."""
    return np.random.default_rng(zlib.crc32(case_id.encode()))


def uniform(rng, dtype, n):
    """Floats uniform in [0, 1); integers uniform over the whole range of the type."""
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return rng.random(n, dtype=dt)
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max, size=n, dtype=dt, endpoint=True)


# ---------------------------------------------------------------- 1, 2: value sort

def _sort_case(dtype, threads, section, target, avx2=True, avx2_target=None, tenth=False):
    """kwker.sort against np.sort at the preset's n, or a tenth of it (tenth: the id ends in
    /mid; 1e6 in the full preset)."""
    cid = f"sort/{dtype}/t{threads}" + ("/mid" if tenth else "")
    size = (lambda s: max(s.n // 10, 1000)) if tenth else (lambda s: s.n)

    def setup(sizes, mods):
        a = uniform(rng_for(cid), dtype, size(sizes))
        return Setup(kwker=lambda: kwker.sort(a, threads=threads),
                     competitors={"np.sort": lambda: np.sort(a)})
    return Case(cid, section, dtype, f"kwker.sort(a, threads={threads})",
                [Competitor("np.sort", "np.sort(a)", target, avx2_target=avx2_target)], setup,
                n=size, avx2=avx2)


# One thread against NumPy's AVX2 sort (x86-simd-sort's X86_V3 build): at least 1.15x for every
# 32- and 64-bit dtype at 1e6 and 1e7, a promise for AVX2 machines (issue 31). Against NumPy's
# AVX-512 build the float32 / int32 rows keep their 1x target and the others are information.
_T1_AVX2_TARGET = 1.15


def _t1_cases():
    out = []
    for dtype in ("float32", "int32", "uint32", "float64", "int64", "uint64"):
        native = 1.0 if dtype in ("float32", "int32") else None
        section = "1" if dtype.endswith("32") else "2"
        for tenth in (False, True):
            out.append(_sort_case(dtype, 1, section, native if not tenth else None,
                                  avx2_target=_T1_AVX2_TARGET, tenth=tenth))
    return out


# ---------------------------------------------------------------- 3: argsort

def _argsort_case(dtype, np_target, pl_target):
    cid = f"argsort/{dtype}"

    def setup(sizes, mods):
        a = uniform(rng_for(cid), dtype, sizes.n)
        comps = {"np.argsort(stable)": lambda: np.argsort(a, kind="stable")}
        pl = mods.get("polars")
        if pl is not None:
            s = pl.Series("a", a)          # built once, outside the timed region
            comps["polars.arg_sort"] = lambda: s.arg_sort()
        return Setup(kwker=lambda: kwker.argsort(a), competitors=comps)
    return Case(cid, "3", dtype, "kwker.argsort(a) (stable, default threads)",
                [Competitor("np.argsort(stable)", 'np.argsort(a, kind="stable")', np_target),
                 Competitor("polars.arg_sort", "s.arg_sort() on a prebuilt pl.Series (stable)",
                            pl_target, requires="polars")],
                setup, slow=True)


# ---------------------------------------------------------------- 4: rows and segments

def _matrix_sort_case():
    cid = "sort/float32/axis1"

    def setup(sizes, mods):
        m = uniform(rng_for(cid), "float32", sizes.rows * sizes.cols).reshape(sizes.rows,
                                                                              sizes.cols)
        return Setup(kwker=lambda: kwker.sort(m, axis=1),
                     competitors={"np.sort(axis=1)": lambda: np.sort(m, axis=1)})
    return Case(cid, "4", "float32", "kwker.sort(m, axis=1)",
                [Competitor("np.sort(axis=1)", "np.sort(m, axis=1)", 1.5)], setup,
                n=lambda s: s.rows * s.cols, shape=lambda s: f"{s.rows}x{s.cols}", avx2=True)


def _matrix_argsort_case():
    cid = "argsort/float32/axis1"

    def setup(sizes, mods):
        m = uniform(rng_for(cid), "float32", sizes.rows * sizes.cols).reshape(sizes.rows,
                                                                              sizes.cols)
        return Setup(kwker=lambda: kwker.argsort(m, axis=1),
                     competitors={"np.argsort(axis=1,stable)":
                                  lambda: np.argsort(m, axis=1, kind="stable")})
    return Case(cid, "4", "float32", "kwker.argsort(m, axis=1) (stable)",
                [Competitor("np.argsort(axis=1,stable)", 'np.argsort(m, axis=1, kind="stable")',
                            3.0)],
                setup, n=lambda s: s.rows * s.cols, shape=lambda s: f"{s.rows}x{s.cols}")


def ragged_offsets(rng, n, segments):
    """segments+1 offsets from 0 to n at random cut points: ragged segment lengths."""
    cuts = np.sort(rng.choice(n - 1, size=segments - 1, replace=False) + 1)
    return np.concatenate(([0], cuts, [n])).astype(np.int64)


def _segments_case():
    cid = "sort_segments/float32"

    def setup(sizes, mods):
        rng = rng_for(cid)
        v = uniform(rng, "float32", sizes.n)
        offsets = ragged_offsets(rng, sizes.n, sizes.segments)
        bounds = list(zip(offsets[:-1].tolist(), offsets[1:].tolist()))
        out = np.empty_like(v)             # preallocated once, outside the timed region

        def loop():
            for s, e in bounds:
                out[s:e] = np.sort(v[s:e])
            return out
        return Setup(kwker=lambda: kwker.sort_segments(v, offsets),
                     competitors={"np.sort loop": loop})
    return Case(cid, "4", "float32", "kwker.sort_segments(v, offsets)",
                [Competitor("np.sort loop",
                            "for s, e in bounds: out[s:e] = np.sort(v[s:e]) (out preallocated)",
                            2.0)],
                setup, shape=lambda s: f"{s.segments} ragged segments", avx2=True)


# ---------------------------------------------------------------- 5: special inputs

def _presorted_case(kind):
    cid = f"sort/int32/{kind}"

    def setup(sizes, mods):
        a = np.sort(uniform(rng_for(cid), "int32", sizes.n))
        if kind == "reversed":
            a = a[::-1].copy()
        return Setup(kwker=lambda: kwker.sort(a), competitors={"np.sort": lambda: np.sort(a)})
    return Case(cid, "5", "int32", f"kwker.sort(a), a {kind}",
                [Competitor("np.sort", "np.sort(a)", 5.0)], setup, avx2=True)


def _nan_case():
    cid = "sort/float32/nan10"

    def setup(sizes, mods):
        rng = rng_for(cid)
        clean = uniform(rng, "float32", sizes.n)
        nan = clean.copy()
        nan[rng.random(sizes.n) < 0.10] = np.nan
        return Setup(kwker=lambda: kwker.sort(nan),
                     competitors={"kwker no-NaN": lambda: kwker.sort(clean),
                                  "np.sort": lambda: np.sort(nan)})
    return Case(cid, "5", "float32", "kwker.sort(a), a with 10% NaN",
                [Competitor("kwker no-NaN", "kwker.sort(b), b = the same data without NaN "
                            "(ratio = time no-NaN / time NaN)", 0.95),
                 Competitor("np.sort", "np.sort(a), a with 10% NaN", None)],
                setup)


# ---------------------------------------------------------------- 6: small arrays

def _small_case(dtype):
    cid = f"sort/{dtype}/small"

    def setup(sizes, mods):
        a = uniform(rng_for(cid), dtype, sizes.small)
        return Setup(kwker=lambda: kwker.sort(a), competitors={"np.sort": lambda: np.sort(a)})
    return Case(cid, "6", dtype, "kwker.sort(a)",
                [Competitor("np.sort", "np.sort(a)", 0.83)], setup,
                n=lambda s: s.small, small=True, avx2=True)


# ---------------------------------------------------------------- 7: informational

@contextlib.contextmanager
def _torch_threads(torch, n):
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _torch_case(dtype):
    cid = f"argsort+take/{dtype}"

    def setup(sizes, mods):
        torch = mods["torch"]
        a = uniform(rng_for(cid), dtype, sizes.n)
        t = torch.from_numpy(a)            # zero-copy view, built outside the timed region

        def kw():
            idx = kwker.argsort(a)
            return np.take(a, idx), idx
        return Setup(kwker=kw, competitors={"torch.sort": lambda: torch.sort(t)},
                     ctx=_torch_threads(torch, 2))
    return Case(cid, "7", dtype, "idx = kwker.argsort(a); (np.take(a, idx), idx) (stable)",
                [Competitor("torch.sort", "torch.sort(t) -> (values, int64 indices), "
                            "torch.set_num_threads(2), stable=False", None, requires="torch")],
                setup, slow=(dtype == "float32"))


def _polars_sort_case(dtype):
    cid = f"sort/{dtype}/polars"

    def setup(sizes, mods):
        pl = mods["polars"]
        a = uniform(rng_for(cid), dtype, sizes.n)
        s = pl.Series("a", a)
        return Setup(kwker=lambda: kwker.sort(a), competitors={"polars.sort": lambda: s.sort()})
    return Case(cid, "7", dtype, "kwker.sort(a)",
                [Competitor("polars.sort", "s.sort() on a prebuilt pl.Series "
                            "(multithreaded, Polars pool)", None, requires="polars")],
                setup)


def _engine_case(engine, threads):
    cid = f"sort/float32/t{threads}/engine={engine}"

    def setup(sizes, mods):
        a = uniform(rng_for("sort/float32/engine"), "float32", sizes.n)
        return Setup(kwker=lambda: kwker.sort(a, threads=threads),
                     competitors={"np.sort": lambda: np.sort(a)},
                     ctx=kwker.config(isa=engine))
    return Case(cid, "7", "float32",
                f"kwker.sort(a, threads={threads}) with kwker.config(isa={engine!r})",
                [Competitor("np.sort", "np.sort(a)", None)], setup,
                slow=(engine == "portable"))


# ---------------------------------------------------------------- the list

def all_cases():
    cases = [
        _sort_case("float32", 2, "1", 1.5),
        _sort_case("int32", 2, "1", 1.5),
        *_t1_cases(),
        _sort_case("float64", 2, "2", 1.4),
        _sort_case("int64", 2, "2", 1.4),
        _sort_case("uint64", 2, "2", 1.4),
        _argsort_case("float32", 8.0, 1.5),
        _argsort_case("int32", 8.0, 1.5),
        _argsort_case("float64", 12.0, 3.0),
        _argsort_case("int64", 12.0, 3.0),
        _matrix_sort_case(),
        _matrix_argsort_case(),
        _segments_case(),
        _presorted_case("sorted"),
        _presorted_case("reversed"),
        _nan_case(),
        _small_case("float32"),
        _small_case("int64"),
        _torch_case("float32"),
        _torch_case("int32"),
        _polars_sort_case("float32"),
        _polars_sort_case("int32"),
    ]
    cases += [_engine_case(e, t) for t in (1, 2) for e in kwker.available_isas()]
    from . import frame_cases, torch_cases
    from .grid import grid_cases  # these build on this module's Case and data helpers
    cases += frame_cases.cases()
    cases += grid_cases()
    cases += torch_cases.cases()
    return cases


def case_by_id(case_id):
    for case in all_cases():
        if case.id == case_id:
            return case
    raise KeyError(case_id)
