"""Evaluations per second of the process workers against the ideal, with a 100 ms objective.

    python -m compileiq.bench.throughput            # 40 candidates per measurement, about 40 s
    python -m compileiq.bench.throughput --quick    # 20 candidates per measurement, about 20 s

The ideal is workers x 10 evaluations/s (each evaluation sleeps 100 ms). MultiProcessWorker runs
two generations and is timed on the second, so that starting its processes is not counted (Search
keeps them across generations); it must reach 90% of the ideal with 2 and 4 workers.
IsoMultiProcessWorker (a process per candidate, start-up included) and AsyncWorker (an awaited
sleep in the parent) are shown for reference.
"""

from __future__ import annotations

import argparse
import asyncio
import time

from ..worker import AsyncWorker, IsoMultiProcessWorker, MultiProcessWorker

SLEEP = 0.1
THRESHOLD = 0.90
GATED = {2, 4}  # worker counts MultiProcessWorker must reach THRESHOLD at


def sleep_100ms(params) -> float:
    time.sleep(SLEEP)
    return 1.0


async def sleep_100ms_async(params) -> float:
    await asyncio.sleep(SLEEP)
    return 1.0


def rate(worker_cls, function, workers: int, candidates: int, generations: int) -> float:
    """Evaluations per second of the last generation."""
    w = worker_cls.create(None, False)
    try:
        for g in range(generations):
            ids = list(range(g * candidates, (g + 1) * candidates))
            t0 = time.perf_counter()
            scores = w.run(function=function, params_pool=[{"i": i} for i in ids], params_ids=ids,
                           num_workers=workers)
            elapsed = time.perf_counter() - t0
            failed = [s for s in scores if s.invalid]
            if failed:
                raise RuntimeError(f"{worker_cls.__name__}: {len(failed)} evaluations failed: {failed[0].error}")
    finally:
        w.close()
    return candidates / elapsed


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m compileiq.bench.throughput", description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="20 candidates per measurement instead of 40")
    args = p.parse_args(argv)
    n = 20 if args.quick else 40
    runs = [(MultiProcessWorker, sleep_100ms, 2, "second generation (start-up excluded)"),
            (IsoMultiProcessWorker, sleep_100ms, 1, "a process per candidate, start-up included"),
            (AsyncWorker, sleep_100ms_async, 1, "asyncio.sleep in the parent")]
    print(f"{n} candidates per row, objective sleeps {SLEEP * 1000:.0f} ms; "
          f"PASS = MultiProcessWorker at >= {THRESHOLD:.0%} of ideal with {sorted(GATED)} workers\n")
    print("| worker | workers | evals/s | ideal | % of ideal | result | note |")
    print("|---|---:|---:|---:|---:|---|---|")
    ok = True
    for cls, fn, gens, note in runs:
        for workers in (1, 2, 4):
            r = rate(cls, fn, workers, n, gens)
            ideal = workers / SLEEP
            verdict = "reference"
            if cls is MultiProcessWorker and workers in GATED:
                passed = r >= THRESHOLD * ideal
                ok &= passed
                verdict = "PASS" if passed else "FAIL"
            print(f"| {cls.__name__} | {workers} | {r:.1f} | {ideal:.0f} | {r / ideal:.0%} | {verdict} | {note} |",
                  flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
