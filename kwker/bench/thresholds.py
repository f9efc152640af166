#!/usr/bin/env python3
"""Measures the size thresholds at which Kwker's engines switch algorithms.

    python kwker/bench/thresholds.py                    # every engine this CPU runs
    python kwker/bench/thresholds.py --engines avx2     # one engine
    python kwker/bench/thresholds.py --out kwker/bench/thresholds.md

For every tuning knob (runtime/tuning.h; names in docs/design.md) it times the two algorithms
the knob chooses between, on the same inputs, with the knob forced each way, and reports the
crossover it finds next to the default compiled into the engine (core/tuning-inl.h). The
defaults are copied from this table; tests/python/test_thresholds.py checks that the committed
table and the library agree.

Timing: one thread, thread CPU time (time.thread_time), so other processes on a shared machine
barely disturb it; each point is the better of the two algorithms' medians over 5 interleaved
samples of at least 20 ms.
"""
import argparse
import json
import math
import platform
import statistics
import sys
import time

import numpy as np

import kwker
from kwker import _runtime as rt

BIG = 1 << 40  # a knob value that no input reaches
# Keys one register network holds, per engine and key width: lanes x 16 registers
# (core/simd-inl.h, core/simd16-inl.h); the portable engine sorts 16 scalars.
CAPACITY = {"avx512": {16: 512, 32: 256, 64: 128}, "avx2": {16: 256, 32: 128, 64: 64},
            "sse4.2": {16: 128, 32: 64, 64: 32}, "portable": {16: 16, 32: 16, 64: 16}}


# Knobs whose best value depends on the core more than on the engine: they have one row per CPU
# vendor ("avx512 on Intel", "avx512 on AMD", ...; core/tuning-inl.h's kIntelDefaults).
VENDOR_KNOBS = {"avx512": ("sort_float_min_32", "sort_float_max_32", "sort_float_min_64",
                           "sort_float_max_64", "sort_float_pair_min_32",
                           "sort_float_pair_min_64", "sort_float_rows_max"),
                "avx2": ("argsort_network_max_32", "radix32_pairs_min")}


def cpu_vendor():
    """The vendor whose defaults this CPU takes: Intel, or AMD (every other vendor too)."""
    return "Intel" if kwker.runtime_info()["cpu"].get("vendor") == "GenuineIntel" else "AMD"


def section(engine, knob, vendor):
    """The table section that holds knob's row for engine on a CPU of this vendor."""
    return f"{engine} on {vendor}" if knob in VENDOR_KNOBS.get(engine, ()) else engine


MIN_TIME, REPEATS = 0.02, 5  # --smoke lowers both (a check of the machinery, not a measurement)


def sample(fn, min_time=None):
    """Thread CPU seconds per call of fn, looped to last at least min_time."""
    min_time = MIN_TIME if min_time is None else min_time
    fn()
    loops, t = 1, 0.0
    while True:
        t0 = time.thread_time()
        for _ in range(loops):
            fn()
        t = time.thread_time() - t0
        if t >= min_time:
            return t / loops
        loops *= 2 if t <= 0 else max(2, int(min_time / t * 1.3))


def compare(fn, a, b):
    """Median seconds per call of fn() under knob settings a and b (dicts), interleaved."""
    ta, tb = [], []
    for _ in range(REPEATS):
        for knobs, out in ((a, ta), (b, tb)):
            with rt.tuning(**knobs):
                out.append(sample(fn))
    return statistics.median(ta), statistics.median(tb)


def data(dtype, n, rng, kind="normal"):
    dt = np.dtype(dtype)
    if dt.kind == "f" and kind == "uniform":
        return rng.random(n).astype(dt)
    if dt.kind == "f":  # both signs: the integer-key path reverses the negative block
        return rng.standard_normal(n).astype(dt)
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max, size=n, dtype=dt, endpoint=True)


def segments_call(op, a, length):
    """Many independent inputs of `length` keys through the ragged-segment path (explicit
    offsets), so that no multi-row register kernel stands in for the per-input algorithm."""
    offsets = np.arange(0, a.size + 1, length, dtype=np.int64)
    if op == "sort":
        return lambda: kwker.sort_segments(a, offsets, threads=1)
    return lambda: kwker.sort_segments(a, offsets, return_indices=True, threads=1)


def one_call(op, a):
    if op == "sort":
        return lambda: kwker.sort(a, threads=1)
    return lambda: kwker.argsort(a, threads=1)


def largest_winning(points, threshold=0.97):
    """points: [(n, ratio)] in increasing n, ratio = other path / the knob's path. The largest n
    such that the knob's path is not slower (ratio >= threshold) at every size up to n."""
    best = 0
    for n, r in points:
        if r < threshold:
            break
        best = n
    return best


def largest_on_balance(points):
    """For knobs whose two paths are close (both end in sorting networks): the largest n at
    which the knob's path is not slower on balance over every size up to n (geometric mean of
    the ratios >= 0.97: within noise, the short path is preferred, having no per-call setup)
    and not clearly slower at n itself (>= 0.9). Robust to one noisy point, and to sizes where
    one path is better only on even or odd lengths."""
    best, log_sum = 0, 0.0
    for i, (n, r) in enumerate(points):
        log_sum += math.log(r)
        if log_sum / (i + 1) >= math.log(0.97) and r >= 0.9:
            best = n
    return best


def best_window(points, min_points=3, min_gain=1.03):
    """(first n, last n) of the run of consecutive sizes with the largest total gain (sum of the
    log ratios), or None unless it spans min_points sizes at a geometric-mean ratio of at least
    min_gain: the knob's path pays only inside a window, and a lone point is noise."""
    best, best_sum = None, 0.0
    for i in range(len(points)):
        total = 0.0
        for j in range(i, len(points)):
            total += math.log(points[j][1])
            if (j - i + 1 >= min_points and total > best_sum
                    and total / (j - i + 1) >= math.log(min_gain)):
                best, best_sum = (points[i][0], points[j][0]), total
    return best


def smallest_winning_tail(points, threshold=1.0):
    """The smallest n from which the ratio stays above threshold at every larger size."""
    best = None
    for n, r in reversed(points):
        if r <= threshold:
            break
        best = n
    return best


class Measure:
    def __init__(self, rng, total, log):
        self.rng = rng
        self.total = total
        self.log = log

    def rows(self, op, dtype, sizes, short, general, kind="normal"):
        """kind: float values "normal" (both signs) or "uniform" (in [0, 1))."""
        points = []
        for n in sizes:
            a = data(dtype, max(n, self.total // n * n), self.rng, kind)
            t_short, t_gen = compare(segments_call(op, a, n), short(n), general(n))
            points.append((n, t_gen / t_short))
        self.log(f"    {op} {dtype}: " + ", ".join(f"{n}: {r:.2f}x" for n, r in points))
        return points


def network_sizes(cap, lo):
    out = sorted({s for s in (lo, 9, 12, 16, 17, 24, 32, 33, 48, 64, 65, 96, 128, 129, 192,
                              256, 257, 384, 512) if lo <= s <= cap})
    return out


def measure_engine(engine, args, log):
    kwker.set_isa(engine)
    rng = np.random.default_rng(1)
    m = Measure(rng, args.total, log)
    code = {k: rt.get_tuning(k) for k in rt.TUNING_KNOBS}
    res = {}

    def note(knob, value, evidence):
        res[knob] = {"measured": value, "in_code": code[knob], "evidence": evidence}
        log(f"  {knob}: measured {value}, in code {code[knob]}")

    def fmt(points):
        return ", ".join(f"{n}: {r:.2f}x" for n, r in points)

    only = set(args.knobs.split(",")) if args.knobs else None

    def want(*knobs):
        return only is None or any(k in only for k in knobs)

    off = {"sort_network_max_16": 0, "sort_network_max_32": 0, "sort_network_max_64": 0,
           "sort_pair_max_16": 0, "sort_pair_max_32": 0, "sort_pair_max_64": 0,
           "sort_tiny_max": 0}
    # Tiny scalar networks vs one vector network (sizes 2-8); the vector network is the
    # general path here, so the network knobs stay at their defaults.
    for op, knob in (("sort", "sort_tiny_max"), ("argsort", "argsort_tiny_max")):
        if not want(knob):
            continue
        pts = []
        for dtype in ("int32", "float64"):
            pts.append(m.rows(op, dtype, range(2, 9), lambda n: {knob: 8}, lambda n: {knob: 0}))
        worst = [(n, min(p[i][1] for p in pts)) for i, n in enumerate(range(2, 9))]
        note(knob, largest_on_balance(worst), "general/tiny per size (worst dtype): " + fmt(worst))

    # One register network vs the general path (quicksort / packed quicksort).
    # Float dtypes: their keys need encoding, which is where the register path differs from
    # the general one (for integers both end in the same network).
    for width, dtype, knob in ((16, "float16", "sort_network_max_16"),
                               (32, "float32", "sort_network_max_32"),
                               (64, "float64", "sort_network_max_64")):
        cap = CAPACITY[engine][width]
        if want(knob):
            pts = m.rows("sort", dtype, network_sizes(cap, 9),
                         lambda n: {knob: BIG, "sort_tiny_max": 8}, lambda n: dict(off))
            note(knob, largest_on_balance(pts), "general/network: " + fmt(pts))
        # Two networks and a merge layer, above one network's capacity, on integer keys: the
        # integer dtype of the width and its float dtype kept to integer keys (floats with a
        # NaN or -0.0, or outside the float window), whichever gains less. Floats compared as
        # floats have their own lower bound (sort_float_pair_min, below).
        lo_k, hi_k = f"sort_pair_min_{width}", f"sort_pair_max_{width}"
        sizes = sorted({cap + 1, cap * 5 // 4, cap * 11 // 8, cap * 3 // 2, cap * 25 // 16,
                        cap * 13 // 8, cap * 7 // 4, cap * 2})
        as_ints = {f"sort_float_min_{width}": 0} if width > 16 else {}
        if want(lo_k, hi_k) and engine != "portable":
            per = [m.rows("sort", dt, sizes, lambda n: {lo_k: 0, hi_k: BIG, **as_ints},
                          lambda n: {lo_k: BIG, hi_k: 0, **as_ints})
                   for dt in (f"int{width}", dtype)]
            pts = [(n, min(p[i][1] for p in per)) for i, n in enumerate(sizes)]
            # A window, not a tail: the second network is the smallest that holds the keys
            # beyond the first, so the pair gains most just above each power of two of
            # vectors and least just below (sse4.2 int32: 65-96 keys 1.24-1.38x, 100-128
            # 0.78-0.96x, where the second network is as large as the first).
            win = best_window(pts)
            note(lo_k, win[0] if win else 0,
                 f"general/pair (worse of int{width}, {dtype} as integer keys): " + fmt(pts))
            note(hi_k, win[1] if win else 0,
                 "the last size of the window above" if win else "no window")
        elif want(lo_k, hi_k):
            note(lo_k, 0, "no vector networks on this engine")
            note(hi_k, 0, "no vector networks on this engine")
        # Floats compared as floats inside their window: the pair's own lower bound, on values
        # of both signs and on [0, 1) (the general path's cost differs between them: float32
        # on a Zen 5 held to AVX2 won from 129 keys on the first, only from ~200 on the second).
        fp_k = f"sort_float_pair_min_{width}"
        if width == 16 or not want(fp_k):
            continue
        if engine not in ("avx512", "avx2") or rt.get_tuning(f"sort_float_min_{width}") == 0:
            note(fp_k, 0, "no float comparisons here: the pair starts at " + lo_k)
            continue
        if rt.get_tuning(f"sort_float_max_{width}") <= cap:
            note(fp_k, 0, "the float window ends within one network: the pair starts at " + lo_k)
            continue
        per = [m.rows("sort", dtype, sizes, lambda n: {fp_k: cap + 1, hi_k: BIG},
                      lambda n: {fp_k: BIG, lo_k: BIG}, kind) for kind in ("normal", "uniform")]
        pts = [(n, min(p[i][1] for p in per)) for i, n in enumerate(sizes)]
        start = smallest_winning_tail(pts)
        # Nowhere: a bound above the pair's largest size, so floats never take it.
        note(fp_k, start if start is not None else 2 * cap + 1,
             f"general/pair compared as floats (worse of normal, [0, 1) {dtype}): " + fmt(pts))

    # Packed argsort words: 32 bits for 16-bit keys, 64 bits otherwise.
    for knob, dtype, width in (("argsort_network_max_16", "int16", 32),
                               ("argsort_network_max_32", "float32", 64),
                               ("argsort_network_max_64", "float64", 64)):
        if not want(knob):
            continue
        cap = CAPACITY[engine][width]
        pts = m.rows("argsort", dtype, network_sizes(cap, 9),
                     lambda n: {knob: BIG, "argsort_tiny_max": 8},
                     lambda n: {knob: 0, "argsort_tiny_max": 0})
        note(knob, largest_on_balance(pts), "general/network: " + fmt(pts))

    # Presorted detection: its cost on random input, where it never pays.
    if want("presorted_min"):
        pts = []
        for n in (256, 512, 1024, 2048, 4096, 16384):
            a = data("float32", n, rng)
            t_on, t_off = compare(one_call("sort", a), {"presorted_min": 0},
                                  {"presorted_min": BIG})
            pts.append((n, t_off / t_on))
        log("    presorted probe, random float32: " + fmt(pts))
        start = smallest_winning_tail(pts, 0.98)  # the probe costs at most 2% from here on
        note("presorted_min", start if start is not None else pts[-1][0],
             "time without / with the probe on random input: " + fmt(pts))

    # The 16-bit counting sort vs the widened quicksort; the 16-bit radix argsort (two scatters
    # of 256 buckets, core/radix-inl.h) vs the packed argsort.
    for op, knob, path in (("sort", "count16_sort_min", "counting"),
                           ("argsort", "count16_argsort_min", "radix")):
        if not want(knob):
            continue
        pts = []
        for n in ((10_000, 30_000, 60_000, 65_536, 65_537, 100_000, 200_000, 250_000, 300_000,
                   350_000, 600_000, 1_000_000) if REPEATS > 1 else (10_000, 65_537)):
            a = data("int16", n, rng)
            t_count, t_other = compare(one_call(op, a), {knob: 0}, {knob: BIG})
            pts.append((n, t_other / t_count))
        start = smallest_winning_tail(pts)
        note(knob, start if start is not None else BIG, f"quicksort/{path}: " + fmt(pts))

    # The 16-bit quicksort on compressed 16-bit lanes vs keys widened to 32 bits, from the first
    # size past the two-network merge (smaller inputs never reach either): the avx512 engine on
    # CPUs with AVX512-VBMI2 only (core/sort16_compress.h).
    knob = "sort16_compress_min"
    if want(knob) and engine != "avx512":
        note(knob, 0, "no compressed 16-bit lanes on this engine")
    elif want(knob) and not kwker.runtime_info()["cpu"]["features"].get("avx512_vbmi2"):
        note(knob, code[knob], "kept: this CPU has no AVX512-VBMI2, where the knob does nothing")
    elif want(knob):
        first = rt.get_tuning("sort_pair_max_16") + 1
        pts = []
        for n in ((first, first * 3 // 2, first * 2, first * 4, 10_000, 30_000, 100_000)
                  if REPEATS > 1 else (first, 10_000)):
            a = data("int16", n, rng)
            t_c, t_w = compare(one_call("sort", a), {knob: 1, "count16_sort_min": BIG},
                               {knob: 0, "count16_sort_min": BIG})
            pts.append((n, t_w / t_c))
        start = smallest_winning_tail(pts)
        note(knob, start if start is not None else 0, "widened/compressed: " + fmt(pts))

    # LSD radix (one or two passes) vs the packed quicksort for 64-bit argsort, by key range.
    if want("radix64_argsort_max_bits"):
        pts = []
        n = 1_000_000 if REPEATS > 1 else 20_000
        for bits in (6, 8, 10, 11, 12, 14, 16, 22):
            a = rng.integers(0, 1 << bits, size=n, dtype=np.int64)
            t_radix, t_packed = compare(one_call("argsort", a),
                                        {"radix64_argsort_max_bits": 64, "radix64_argsort_min": 0},
                                        {"radix64_argsort_max_bits": 0})
            pts.append((bits, t_packed / t_radix))
        # Not on balance: one digit (up to 11 bits) counts and scatters straight from the keys
        # and wins by 2-6x, which would carry a slower second digit along in a mean.
        note("radix64_argsort_max_bits", largest_winning(pts),
             "packed/radix by key bits (n = 1e6): " + fmt(pts))
    # From how many keys that radix beats the packed sort: its counters are a fixed cost. Worse
    # of a 4-bit and a 10-bit key range (one digit either way) at each size.
    knob = "radix64_argsort_min"
    if want(knob):
        pts = []
        for n in ((250, 500, 1000, 2000, 4000, 8000, 16000, 32000, 65536, 100_000, 300_000,
                   1_000_000) if REPEATS > 1 else (1000, 100_000)):
            worst = None
            for bits in (4, 10):
                a = rng.integers(0, 1 << bits, size=n, dtype=np.int64)
                t_radix, t_packed = compare(one_call("argsort", a),
                                            {knob: 0, "radix64_argsort_max_bits": 64},
                                            {"radix64_argsort_max_bits": 0})
                gain = t_packed / t_radix
                worst = gain if worst is None else min(worst, gain)
            pts.append((n, worst))
        start = smallest_winning_tail(pts)
        note(knob, start if start is not None else BIG, "packed/radix by keys: " + fmt(pts))
    # The 32-bit integers' LSD radix (radix_pairs32) vs the packed words' quicksort, for the
    # stable argsort of uniform int32 keys (four 8-bit passes, the most it makes), in wall time
    # on the default threads: from 100,000 keys both run on two threads. Up to 2^21 keys, the
    # radix's upper bound (kRadix32PairsMax).
    knob = "radix32_pairs_min"
    if want(knob):
        pts = []
        for n in ((1000, 2000, 3000, 5000, 10_000, 20_000, 30_000, 50_000, 70_000, 100_000,
                   300_000, 1_000_000, 2_000_000) if REPEATS > 1 else (1000, 30_000)):
            a = rng.integers(-2**31, 2**31 - 1, size=n, dtype=np.int32)
            t_radix, t_packed = compare(one_call("argsort", a), {knob: 1}, {knob: 0})
            pts.append((n, t_packed / t_radix))
        start = smallest_winning_tail(pts)
        note(knob, start if start is not None else 0, "packed/radix by keys: " + fmt(pts))
    # Float keys compared as floats (vq::FOps) vs encoded to integer keys, in the register
    # paths (one network, two networks and a merge), on values of both signs with no NaN or
    # -0.0 (the float path's precondition). The min / max knobs bound the window of sizes
    # where the float path wins (best_window); 0 if nowhere.
    for width, dtype in ((32, "float32"), (64, "float64")):
        knob, top = f"sort_float_min_{width}", f"sort_float_max_{width}"
        if not want(knob, top):
            continue
        if engine not in ("avx512", "avx2"):
            note(knob, 0, "no float comparisons on this engine")  # core/coded-inl.h
            note(top, 0, "no float comparisons on this engine")
            continue
        net = rt.get_tuning(f"sort_network_max_{width}")
        lo, hi = (rt.get_tuning(f"sort_pair_{e}_{width}") for e in ("min", "max"))
        sizes = [n for n in (9, 12, 16, 17, 24, 32, 33, 48, 64, 65, 96, 128, 192, 256, 416, 448,
                             512) if n <= net or lo <= n <= hi]  # where a register path runs
        pts = []
        for n in sizes:
            a = rng.standard_normal(max(n, args.total // n * n)).astype(dtype)
            a[a == 0] = 1.0  # no -0.0 can come out of the normal sampler's zero either
            t_float, t_int = compare(segments_call("sort", a, n), {knob: 2, top: BIG},
                                     {knob: 0})
            pts.append((n, t_int / t_float))
        log(f"    sort {dtype} as floats: " + fmt(pts))
        window = best_window(pts)
        note(knob, window[0] if window else 0, "integer keys/float compares: " + fmt(pts))
        note(top, window[1] if window else 0,
             "the last size of the window above" if window else "no window above")
    # Rows sorted in registers (rows of 2-16 keys; longer rows go one at a time through the
    # paths above) compared as floats besides the window, which stands for 1-D sorts: rows of n
    # float32 / float64 values of both signs, the window off, every row on float compares (knob
    # BIG) against none (0), one thread. Only where the window leaves some of those row lengths
    # of either width to the integer keys.
    knob = "sort_float_rows_max"
    if want(knob):
        lengths = (2, 3, 4, 5, 7, 8, 9, 12, 15, 16)
        covered = all(0 < rt.get_tuning(f"sort_float_min_{w}") <= 9 and
                      rt.get_tuning(f"sort_float_max_{w}") >= lengths[-1] for w in (32, 64))
        if engine not in ("avx512", "avx2"):
            note(knob, 0, "no float comparisons on this engine")
        elif covered:
            note(knob, 0, "the float window already holds every row length sorted in registers "
                          f"(2-{lengths[-1]} keys) for both widths")
        else:
            per = []
            for w in (32, 64):
                off = {f"sort_float_min_{w}": 0}
                pts = []
                for n in lengths:
                    a = rng.standard_normal(max(n, args.total // n * n)).astype(f"float{w}")
                    a[a == 0] = 1.0
                    mat = a.reshape(-1, n)
                    t_float, t_int = compare(lambda: kwker.sort(mat, axis=1, threads=1),
                                             {knob: BIG, **off}, {knob: 0, **off})
                    pts.append((n, t_int / t_float))
                log(f"    rows of float{w} as floats: " + fmt(pts))
                per.append(pts)
            worst = [(n, min(p[i][1] for p in per)) for i, n in enumerate(lengths)]
            note(knob, largest_winning(worst),
                 "integer keys/float compares, rows of n in registers (worse of float32, "
                 "float64): " + fmt(worst))
    kwker.set_isa(None)
    return res


def parse_table(text):
    """The results of a table this script wrote: (environment line, {engine: {knob: row}})."""
    import re
    results, engine, env_line = {}, None, ""
    for line in text.splitlines():
        if line.startswith("Machine:"):
            env_line = line
        m = re.match(r"## (.+)$", line)
        if m:
            engine = results.setdefault(m.group(1), {})
        m = re.match(r"\| `(\w+)` \| (\d+) \| (\d+) \| (.*) \|$", line)
        if m and engine is not None:
            engine[m.group(1)] = {"measured": int(m.group(2)), "in_code": int(m.group(3)),
                                  "evidence": m.group(4)}
    return env_line, results


def refresh(path):
    """Rewrites the *in code* column of a committed table from the library, keeping the
    measurements: the step after copying measured values into core/tuning-inl.h."""
    with open(path) as f:
        env_line, results = parse_table(f.read())
    vendor = cpu_vendor()
    for name, res in results.items():
        engine, _, on = name.partition(" on ")
        if engine not in kwker.available_isas() or on not in ("", vendor):
            continue  # the library here cannot say another vendor's defaults
        with kwker.config(isa=engine):
            for knob, r in res.items():
                r["in_code"] = rt.get_tuning(knob)
    text = markdown(results, None, env_line)
    with open(path, "w") as f:
        f.write(text + "\n")


def markdown(results, env, env_line=None):
    if env_line is None:
        env_line = (f"Machine: {env['cpu']}; kwker {env['kwker']}; NumPy {env['numpy']}; "
                    f"Python {env['python']}; measured {env['when']} with "
                    "`python kwker/bench/thresholds.py` (one thread, thread CPU time, medians "
                    "of 5 interleaved samples).")
    lines = ["# Measured algorithm thresholds", "", env_line, "",
             "The *in code* column is the engine's compiled default (core/tuning-inl.h); "
             "`tests/python/test_thresholds.py` checks that it matches the library. Ratios in "
             "the evidence column are the time of the alternative path over the time of the "
             "path the knob enables (> 1: the knob's path is faster). A section named "
             "*engine on vendor* holds that engine's knobs whose defaults differ between Intel "
             "and AMD cores (measured on one of each; core/tuning-inl.h's kIntelDefaults); "
             "CPUs of other vendors take the AMD values.", ""]
    bases = [name for name in results if " on " not in name]
    order = [n for b in bases for n in [b] + sorted(x for x in results
                                                   if x.startswith(b + " on "))]
    for engine in order:
        res = results[engine]
        lines += [f"## {engine}", "", "| knob | measured | in code | evidence |",
                  "|---|---:|---:|---|"]
        for knob, r in res.items():
            lines.append(f"| `{knob}` | {r['measured']} | {r['in_code']} | {r['evidence']} |")
        lines.append("")
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(prog="python kwker/bench/thresholds.py",
                                description=__doc__.split("\n")[1])
    p.add_argument("--engines", help="comma-separated engines (default: every engine this "
                                     "CPU runs)")
    p.add_argument("--total", type=int, default=200_000,
                   help="keys per timed call of the per-size measurements (default 200000)")
    p.add_argument("--out", help="also write the Markdown table to this file")
    p.add_argument("--json", action="store_true", help="print JSON instead of Markdown")
    p.add_argument("--smoke", action="store_true",
                   help="one short sample per point: checks the script, measures nothing")
    p.add_argument("--knobs", help="comma-separated knobs to measure (default: all)")
    p.add_argument("--merge", metavar="TABLE",
                   help="write the measured knobs into TABLE in place of their rows, keeping the "
                        "others (their evidence names this machine when the table's differs)")
    p.add_argument("--refresh", metavar="TABLE",
                   help="rewrite only the 'in code' column of TABLE from the library (after "
                        "copying the measured values into core/tuning-inl.h) and exit")
    args = p.parse_args(argv)
    if args.refresh:
        refresh(args.refresh)
        return 0
    if args.smoke:
        global MIN_TIME, REPEATS
        MIN_TIME, REPEATS, args.total = 0.0, 1, 2_000
    if args.knobs:
        unknown = set(args.knobs.split(",")) - set(rt.TUNING_KNOBS)
        if unknown:
            p.error(f"unknown knob(s) {', '.join(sorted(unknown))} (knobs: "
                    f"{', '.join(rt.TUNING_KNOBS)})")
    engines = args.engines.split(",") if args.engines else kwker.available_isas()[::-1]
    for e in engines:
        if e not in kwker.available_isas():
            p.error(f"engine {e!r} does not run on this CPU (it runs: "
                    f"{', '.join(kwker.available_isas())})")

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    info = kwker.runtime_info()
    env = {"cpu": info.get("cpu", {}).get("brand"), "kwker": kwker.__version__,
           "numpy": np.__version__, "python": platform.python_version(),
           "when": time.strftime("%Y-%m-%d")}
    results, vendor = {}, cpu_vendor()
    for e in engines:
        log(f"engine {e}")
        results.setdefault(e, {})
        for knob, r in measure_engine(e, args, log).items():
            results.setdefault(section(e, knob, vendor), {})[knob] = r
    if args.merge:
        with open(args.merge) as f:
            env_line, table = parse_table(f.read())
        elsewhere = str(env["cpu"]) not in env_line  # the table was measured on another CPU
        for e, res in results.items():
            for knob, r in res.items():
                if elsewhere:
                    r["evidence"] = f"(measured on {env['cpu']}, {env['when']}) " + r["evidence"]
                table.setdefault(e, {})[knob] = r
        text = markdown(table, None, env_line)
        with open(args.merge, "w") as f:
            f.write(text + "\n")
        print(text)
        return 0
    text = markdown(results, env)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    print(json.dumps({"environment": env, "engines": results}, indent=1) if args.json else text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
