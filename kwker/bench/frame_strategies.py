"""Multi-column sort strategies of kwker.frame, measured against each other (docs/frame.md).

    python kwker/bench/frame_strategies.py [--n 10000000] [--repeats 5]

Each strategy orders the same keys with Kwker's kernels (kwker.frame._keys.order) and must give
the same permutation; the table gives the median time per row over interleaved repeats, and
np.lexsort (NumPy's own multi-key sort) as a reference.
"""
import argparse
import gc
import time

import numpy as np

from kwker.frame import _keys


def _cases(n, rng):
    i32 = rng.integers(-2**31, 2**31 - 1, n, dtype=np.int32)
    f64 = rng.random(n)
    null = rng.random(n) < 0.05
    f64n = np.where(null, np.nan, f64)
    small = rng.integers(0, 50, n).astype(np.int32)
    flags = rng.random(n) < 0.5
    cats = rng.integers(0, 12, n).astype(np.int8)
    K = _keys.Key
    return {
        "int32 (random), float64 (5% NaN)": (
            [K(i32), K(f64n)], [f64n, i32]),
        "int32 (50 values), float64 (5% NaN)": (
            [K(small), K(f64n)], [f64n, small]),
        "bool, category (12), int32 (50 values)": (
            [K(flags), K(cats, ncodes=12), K(small)], [small, cats, flags]),
        "float64, float64": (
            [K(f64), K(f64[::-1].copy())], [f64[::-1], f64]),
    }


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=10_000_000)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--no-lexsort", action="store_true", help="skip np.lexsort (slow)")
    args = p.parse_args(argv)
    rng = np.random.default_rng(0)
    names = list(_keys.STRATEGIES) + ([] if args.no_lexsort else ["np.lexsort"])
    print(f"n = {args.n:,}; median ns per row over {args.repeats} interleaved repeats\n")
    print("| keys | " + " | ".join(names) + " |")
    print("|---|" + "---:|" * len(names))
    for label, (keys, lex) in _cases(args.n, rng).items():
        times = {s: [] for s in names}
        ref = None
        for s in names[:-1] if not args.no_lexsort else names:     # warm-up (thread pools)
            _keys.order(keys, args.n, strategy=s)
        for r in range(args.repeats):
            for s in names[r % len(names):] + names[:r % len(names)]:   # rotate: no fixed
                # neighbour (np.lexsort leaves the caches and allocator in another state)
                gc.collect()
                t0 = time.perf_counter()
                perm = (np.lexsort(lex) if s == "np.lexsort"
                        else _keys.order(keys, args.n, strategy=s))
                times[s].append(time.perf_counter() - t0)
                if s != "np.lexsort":
                    ref = perm if ref is None else ref
                    assert np.array_equal(perm, ref), f"{s} differs on {label}"
        cells = [f"{np.median(times[s]) / args.n * 1e9:.1f}" for s in names]
        print(f"| {label} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
