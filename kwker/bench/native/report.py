#!/usr/bin/env python3
"""Target table and before/after table of a native benchmark run (bench.cc --json).

    python kwker/bench/native/report.py RESULT.json [--current kwker] [--previous kwker-prev]

Ratios are speeds: the other side's time / Kwker's time, so > 1 means Kwker is faster. Each is
the median over the interleaved rounds of the per-round ratio (the two runs of one round share
the host's moment: its other tenants, its memory bandwidth), as the project's noise rule asks;
a result file without per-round times (older runs) falls back to the ratio of the medians. A
ratio target holds at 0.97 of its value (noise).
"""
import argparse
import json
import math
import statistics
import sys

RANDOM = ("uniform", "10% duplicates", "16 distinct")
PRESORTED = ("sorted", "reversed", "all equal")
DTYPES = ("float32", "int32", "float64", "int64")


class Times:
    """One library's runs of one case: the median, and every round's time when recorded."""

    def __init__(self, rec):
        self.median = rec["ns_median"]
        self.rounds = rec.get("ns") or []


def index(results):
    return {(r["dtype"], r["input"], r["n"], r["threads"], r["lib"]): Times(r) for r in results}


def speed(other, ours):
    """other's time / ours: the median of the per-round ratios where both have the same rounds."""
    if other.rounds and len(other.rounds) == len(ours.rounds):
        return statistics.median(o / k for o, k in zip(other.rounds, ours.rounds))
    return other.median / ours.median


def target(name, case, got, need):
    """A target row: it holds at 0.97 of the required ratio (noise)."""
    return (name, case, got, need, got >= need * 0.97)


def fmt_n(n):
    return f"1e{round(math.log10(n))}"


def targets(t, cur):
    """[(target, case, measured, required, ok)] for every target of issue 11."""
    rows = []

    def get(dtype, inp, n, threads, lib):
        return t.get((dtype, inp, n, threads, lib))

    for dtype in DTYPES:
        for n in (10**6, 10**7):
            for inp in RANDOM:
                k, v = get(dtype, inp, n, 1, cur), get(dtype, inp, n, 1, "vqsort")
                if k and v:
                    rows.append(target("1 thread >= 1.0x vqsort", f"{dtype} {inp} {fmt_n(n)}",
                                       speed(v, k), 1.0))
        for inp in ("uniform",):
            k, v = get(dtype, inp, 10**7, 1, cur), get(dtype, inp, 10**7, 1, "vqsort")
            if dtype in ("float32", "int32") and k and v:
                rows.append(target("1 thread >= 1.15x vqsort", f"{dtype} {inp} 1e7",
                                   speed(v, k), 1.15))
    two = []
    for dtype in DTYPES:
        for n in (10**6, 10**7):
            k2, v = get(dtype, "uniform", n, 2, cur), get(dtype, "uniform", n, 1, "vqsort")
            if k2 and v:
                two.append(speed(v, k2))
                rows.append(target("2 threads >= 1.1x vqsort (1 thread)",
                                   f"{dtype} uniform {fmt_n(n)}", two[-1], 1.1))
    if two:
        g = math.exp(sum(map(math.log, two)) / len(two))
        rows.append(target("2 threads: geometric mean >= 1.3x vqsort", "random, 1e6 and 1e7",
                           g, 1.3))
    for (dtype, inp, n, threads, lib), k2 in t.items():
        if lib == cur and threads == 2:
            k1 = get(dtype, inp, n, 1, cur)
            if k1:
                rows.append(target("2 threads never slower than 1", f"{dtype} {inp} {fmt_n(n)}",
                                   speed(k1, k2), 1.0))
    for dtype in ("float32", "float64"):
        for inp in PRESORTED:
            for threads in (1, 2):
                k = get(dtype, inp, 10**7, threads, cur)
                ips = get(dtype, inp, 10**7, threads, "ips4o" if threads == 1 else "ips4o-par")
                copy = get(dtype, inp, 10**7, 1, "copy")
                if k and ips:
                    rows.append(target("presorted: at most 2x ips4o's time",
                                       f"{dtype} {inp} 1e7, {threads} thread(s)", speed(ips, k),
                                       0.5))
                if k and copy:
                    rows.append(target("presorted: at most 3x a copy",
                                       f"{dtype} {inp} 1e7, {threads} thread(s)", speed(copy, k),
                                       1 / 3))
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(prog="report.py", description=__doc__.split("\n")[0])
    p.add_argument("json")
    p.add_argument("--current", default="kwker")
    p.add_argument("--previous", default="kwker-prev")
    args = p.parse_args(argv)
    with open(args.json) as f:
        data = json.load(f)
    t = index(data["results"])
    rows = targets(t, args.current)
    met = sum(1 for r in rows if r[4])
    print(f"## Targets ({met} of {len(rows)} met)\n")
    print("| target | case | speed ratio | required | result |\n|---|---|---:|---:|---|")
    for name, case, got, need, ok in rows:
        print(f"| {name} | {case} | {got:.2f}x | {need:.2f}x | {'PASS' if ok else '**MISS**'} |")
    prev = {k: v for k, v in t.items() if k[4] == args.previous}
    if prev:
        print(f"\n## Before and after: {args.previous} time / {args.current} time "
              "(> 1: faster now)\n")
        print("| dtype | input | n | threads | before ns/el | after ns/el | speed-up |\n"
              "|---|---|---:|---:|---:|---:|---:|")
        for (dtype, inp, n, threads, _), before in sorted(prev.items()):
            after = t.get((dtype, inp, n, threads, args.current))
            if after:
                print(f"| {dtype} | {inp} | {fmt_n(n)} | {threads} | {before.median:.2f} "
                      f"| {after.median:.2f} | {speed(before, after):.2f}x |")
    print(f"\nwall time {data['wall_s']:.0f} s; other processes used {data['other_cpu_s']:.0f} "
          f"CPU-s meanwhile; {data['wrong_results']} wrong results")
    return 0


if __name__ == "__main__":
    sys.exit(main())
