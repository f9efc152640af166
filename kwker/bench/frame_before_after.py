"""kwker.frame before and after a change, in one process: python kwker/bench/frame_before_after.py
--before REF [--repeats N] [--n ROWS]

`python -m kwker bench --before LIBKWKER` compares two builds of the C library; a change to
kwker.frame's Python is not in the library. This script takes kwker.frame as it was at the git
commit REF (git archive, into a temporary folder, imported beside this checkout's as
kwker.frame_before) and times the kwker call of every row of the benchmark's frame section
(section 9, Dask excepted) with both, on each row's own data (the same seeds), interleaved
(the two sides swap places every repeat), with the row's first competitor timed in the same
repeats. Prints a Markdown table: ns per row before and after, before / after (the median over
repeats of the paired ratio, > 1: faster now), and the ratio to the competitor on both sides.
"""
import argparse
import contextlib
import dataclasses
import gc
import io
import importlib.util
import pathlib
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
FRAME = "kwker/python/kwker/frame"


def load_before(ref, folder):
    """kwker.frame as it was at `ref`, imported as kwker.frame_before."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref, FRAME], check=True,
                             capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(folder, filter="data")
    path = pathlib.Path(folder) / FRAME
    spec = importlib.util.spec_from_file_location("kwker.frame_before", path / "__init__.py",
                                                  submodule_search_locations=[str(path)])
    module = importlib.util.module_from_spec(spec)
    sys.modules["kwker.frame_before"] = module
    spec.loader.exec_module(module)
    return module


def _setup(case, module, sizes, mods):
    """The case's Setup with `module` as kwker.frame (its setup imports kwker.frame)."""
    import kwker
    now = sys.modules["kwker.frame"]
    sys.modules["kwker.frame"] = kwker.frame = module
    try:
        return case.setup(sizes, mods)
    finally:
        sys.modules["kwker.frame"] = kwker.frame = now


def _timed(fn):
    gc.collect()
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--before", required=True, metavar="REF", help="git commit of the before side")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--n", type=int, default=10_000_000, help="rows (the strings row: n / 10)")
    args = p.parse_args(argv)
    import pandas
    import polars

    import kwker.frame as after
    from kwker.bench import cases, frame_cases
    sizes = dataclasses.replace(cases.PRESETS["full"], n=args.n)
    mods = {"pandas": pandas, "polars": polars}
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        before = load_before(args.before, folder)
        for case in frame_cases.cases():
            if "dask" in case.id:
                continue
            sides = {"after": _setup(case, after, sizes, mods),
                     "before": _setup(case, before, sizes, mods)}
            competitor = next(iter(sides["after"].competitors))
            times = {"after": [], "before": [], "competitor": []}
            with sides["after"].ctx or contextlib.nullcontext():
                for side in sides.values():
                    side.kwker()                                   # warm up
                for r in range(args.repeats):
                    for name in ("after", "before") if r % 2 == 0 else ("before", "after"):
                        times[name].append(_timed(sides[name].kwker))
                    times["competitor"].append(_timed(sides["after"].competitors[competitor]))
            n = case.n(sizes)
            med = {k: statistics.median(v) / n * 1e9 for k, v in times.items()}
            paired = [b / a for a, b in zip(times["after"], times["before"])]
            rows.append((case.id, n, med, statistics.median(paired), min(paired), max(paired),
                         competitor))
            print(f"{case.id}: done", file=sys.stderr, flush=True)
    print(f"kwker.frame at {args.before} (before) and this checkout (after), "
          f"{args.repeats} interleaved repeats\n")
    print("| row | n | before ns/row | after ns/row | before / after (spread) | competitor | "
          "competitor ns/row | ratio before | ratio after |")
    print("|---|---:|---:|---:|---:|---|---:|---:|---:|")
    for cid, n, med, ratio, lo, hi, comp in rows:
        print(f"| `{cid}` | {n:,} | {med['before']:.1f} | {med['after']:.1f} | {ratio:.2f}x "
              f"({lo:.2f}-{hi:.2f}) | {comp} | {med['competitor']:.1f} | "
              f"{med['competitor'] / med['before']:.2f}x | "
              f"{med['competitor'] / med['after']:.2f}x |")


if __name__ == "__main__":
    main()
