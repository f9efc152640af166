"""ptxas evaluations per second with 1 and 2 MultiProcessWorker workers (the "Speed" requirement).

    python -m compileiq.bench.ptxas_workers            # 16 candidates per measurement, about 1.5 min
    python -m compileiq.bench.ptxas_workers --quick    # 8 candidates per measurement, about 45 s

One evaluation is the demo's objective on the bundled spill_kernel.ptx: ptxas with an open
controls file, then ``cuobjdump -sass`` for the instruction count. The candidates are fixed
option mixes, so both worker counts do the same work. Each worker count gets its own worker,
warmed up with one batch (starting processes is not counted: a search keeps them across
generations), then the batch is timed REPEATS times, the worker counts taking turns; the rate is
the median. PASS needs the 2-worker rate to be at least 1.6x the 1-worker rate.
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import time

from ..compilers import find_ptxas
from ..controls.format import format_controls
from ..examples.ptxas_spill import PtxasSpillObjective
from ..worker import MultiProcessWorker

THRESHOLD = 1.6
REPEATS = 5


def candidates(n: int) -> list[str]:
    """``n`` distinct open ptxas controls files (hex), cycling through public option mixes."""
    version = find_ptxas().version_str
    levels = ["-O0", "-O1", "-O2", "-O3"]
    usage = ["--register-usage-level=0", "--register-usage-level=5", "--register-usage-level=10"]
    # (--Ofast-compile=max conflicts with any -O level but -O0, so it is not among these)
    extra = [[], ["-dlcm", "cg"], ["--allow-expensive-optimizations", "true"], ["--fmad", "false"]]
    out = []
    # the -O level changes fastest, so even a short batch mixes cheap and expensive compiles
    for more, use, opt in itertools.islice(itertools.cycle(itertools.product(extra, usage, levels)), n):
        out.append(format_controls("ptxas", version, [opt, use, *more]).hex())
    return out


def _batch(worker, objective, pool: list[str], workers: int, first_id: int) -> float:
    """Evaluations per second of one batch."""
    ids = list(range(first_id, first_id + len(pool)))
    t0 = time.perf_counter()
    scores = worker.run(function=objective, params_pool=pool, params_ids=ids, num_function_returns=2,
                        num_workers=workers, task_timeout=120)
    elapsed = time.perf_counter() - t0
    failed = [s for s in scores if s.invalid]
    if failed:
        why = [ln for ln in (failed[0].error or "").splitlines() if "Error" in ln or "error" in ln]
        raise RuntimeError(f"{len(failed)} ptxas evaluations failed, e.g.: {why[-1] if why else failed[0].failure}")
    return len(pool) / elapsed


def rates(pool: list[str], repeats: int, counts=(1, 2)) -> dict[int, list[float]]:
    """Evaluations per second per worker count, ``repeats`` timed batches each.

    The worker counts take turns batch by batch, so a burst of load from other processes hits
    all of them alike; each worker's first batch (starting its processes) is not timed."""
    objective = PtxasSpillObjective()
    workers = {n: MultiProcessWorker.create(None, False) for n in counts}
    out: dict[int, list[float]] = {n: [] for n in counts}
    next_id = 0
    try:
        for rep in range(repeats + 1):
            for n, w in workers.items():
                r = _batch(w, objective, pool, n, next_id)
                next_id += len(pool)
                if rep:
                    out[n].append(r)
    finally:
        for w in workers.values():
            w.close()
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m compileiq.bench.ptxas_workers", description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="8 candidates per measurement instead of 16")
    p.add_argument("--repeats", type=int, default=REPEATS, help=f"timed batches per worker count (default {REPEATS})")
    args = p.parse_args(argv)
    n = 8 if args.quick else 16
    pool = candidates(n)
    tool = find_ptxas()
    print(f"ptxas {tool.version_str} ({tool.path}); {n} candidates per batch, median of {args.repeats} batches; "
          f"{os.cpu_count()} CPUs")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    measured = rates(pool, args.repeats)
    one_all, two_all = measured[1], measured[2]
    one, two = statistics.median(one_all), statistics.median(two_all)
    speedup = two / one
    ok = speedup >= THRESHOLD
    print()
    print("| workers | evaluations/s (median) | all repeats | speed-up |")
    print("|---|---|---|---|")
    print(f"| 1 | {one:.2f} | {', '.join(f'{r:.2f}' for r in one_all)} | 1.00x |")
    print(f"| 2 | {two:.2f} | {', '.join(f'{r:.2f}' for r in two_all)} | {speedup:.2f}x |")
    print()
    print(f"{'PASS' if ok else 'FAIL'}: 2 workers run ptxas evaluations {speedup:.2f}x as fast as 1 "
          f"(required: {THRESHOLD}x)")
    busy = max(load, os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0)
    if not ok and busy > 0.5:
        print(f"note: the load average was {busy:.1f} while measuring: other processes competing for the "
              f"{os.cpu_count()} CPUs hold back the second worker. Rerun on an idle machine (with Linux "
              "autogroup scheduling, jobs of another session take an equal share whatever their nice value).")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
