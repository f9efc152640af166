"""How many evaluations each engine needs to reach a fixed bar on synthetic compiler-like problems.

    python -m compileiq.bench.engine_quality            # full run: 10 seeds, one to two minutes
    python -m compileiq.bench.engine_quality --quick    # 5 seeds, under a minute

The bar of a problem is the best of 2,000 uniform random candidates (for two objectives: the
hypervolume of their front), from a fixed seed. Each engine runs Search's loop (ask a pool of 32,
evaluate, tell) until a candidate reaches the bar, judged on the noiseless value even when the
engine is told noisy ones. A run that never gets there within the budget counts as budget + 1.
Optuna's TPE slows down as trials pile up (each ask refits on every trial so far), which is why the
budget is capped at 2,000 evaluations for every engine. Runs go to worker processes (``--jobs``);
every run is seeded, so the table does not depend on how many.

Exit status 0 when the default engine beats random search on every problem and Optuna TPE on
more than half of them, 1 otherwise.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import time
from concurrent.futures import ProcessPoolExecutor

from ..engines.base import EngineSettings, make_engine
from ..testing import problems as P
from ..types import derived_cull_size

POOL = 32
BUDGET = 2_000
SEEDS = 10


def evaluations_to_target(problem: P.Problem, engine: str, seed: int, budget: int, pool: int = POOL) -> int:
    """Evaluations until the first candidate at or past the problem's bar; budget + 1 if none."""
    bar = _target(problem.name)
    k = problem.num_objectives
    settings = EngineSettings(num_objectives=k, pool_size=pool, cull_size=derived_cull_size(pool, k), seed=seed)
    space = problem.search_space
    eng = make_engine(engine, space, settings)
    noise = random.Random(seed * 7919 + 17)
    front: list[tuple] = []  # noiseless non-dominated points so far (two objectives)
    best = float("inf")
    done = 0
    try:
        while done < budget:
            batch = eng.ask()
            if not batch:
                break
            told = []
            for g in batch:
                params = space.decode(g)
                told.append(_as_tuple(problem.observe(params, noise)))
                done += 1
                true = problem.value(params)
                if k == 1:
                    best = min(best, true)
                    reached = best <= bar
                else:
                    reached = _add_to_front(front, true) and -P.hypervolume_2d(front, problem.reference) <= bar
                if reached:
                    return done
                if done >= budget:
                    break
            eng.tell(batch[:len(told)], told)
    finally:
        eng.close()
    return budget + 1


def _as_tuple(v):
    return v if isinstance(v, tuple) else (v,)


def _add_to_front(front: list, p: tuple) -> bool:
    """Insert p into a non-dominated set; True when it entered (the hypervolume may have grown)."""
    if any(all(q[i] <= p[i] for i in range(len(p))) for q in front):
        return False
    front[:] = [q for q in front if not all(p[i] <= q[i] for i in range(len(p)))]
    front.append(p)
    return True


_TARGETS: dict[str, float] = {}


def _target(name: str) -> float:
    if name not in _TARGETS:
        _TARGETS[name] = P.target(P.problem(name))
    return _TARGETS[name]


def _job(args):
    name, engine, seed, budget = args
    t = time.perf_counter()
    n = evaluations_to_target(P.problem(name), engine, seed, budget)
    return name, engine, seed, n, time.perf_counter() - t


def engines_for(problem: P.Problem) -> list[str]:
    names = ["auto", "random", "optuna-tpe"]
    if problem.num_objectives > 1:
        names.append("optuna-nsga2")
    return names


def run(problems, seeds: int, budget: int, jobs: int, engines=None) -> dict:
    work = [(p.name, e, s, budget) for p in problems for e in (engines or engines_for(p)) for s in range(seeds)]
    # the slow (Optuna) runs first, so that the pool does not end on one long straggler
    work.sort(key=lambda w: not w[1].startswith("optuna"))
    results: dict = {}
    if jobs > 1:
        with ProcessPoolExecutor(jobs) as ex:
            done = list(ex.map(_job, work, chunksize=1))
    else:
        done = [_job(w) for w in work]
    for name, engine, seed, n, secs in done:
        results.setdefault((name, engine), []).append((seed, n, secs))
    return results


def _fmt(n: float, budget: int) -> str:
    return f">{budget:,}" if n > budget else f"{n:,.0f}"


def _ratio(a: float, b: float, budget: int) -> str:
    r = f"{a / b:.2f}"
    # a capped run makes the true ratio unknown: the engine that missed needs *at least* budget + 1
    if b > budget and a <= budget:
        return "<" + r
    if a > budget and b <= budget:
        return ">" + r
    return r


def table(problems, results: dict, budget: int) -> tuple[str, int, int]:
    rows = ["| problem | bar | default | random | TPE | NSGA-II (Optuna) | default / random | default / TPE |",
            "|---|---|---|---|---|---|---|---|"]
    beat_random = beat_tpe = 0
    for p in problems:
        med = {e: statistics.median(n for _, n, _ in results[(p.name, e)]) for e in engines_for(p)}
        d, r, t = med["auto"], med["random"], med["optuna-tpe"]
        beat_random += d < r
        beat_tpe += d < t
        bar = _target(p.name)
        bar_s = f"HV {-bar:.4g}" if p.num_objectives > 1 else f"{bar:.4g}"
        nsga = _fmt(med["optuna-nsga2"], budget) if "optuna-nsga2" in med else "-"
        rows.append(f"| {p.name} | {bar_s} | {_fmt(d, budget)} | {_fmt(r, budget)} | {_fmt(t, budget)} | {nsga} "
                    f"| {_ratio(d, r, budget)} | {_ratio(d, t, budget)} |")
    return "\n".join(rows), beat_random, beat_tpe


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m compileiq.bench.engine_quality", description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="5 seeds instead of 10 (under a minute)")
    ap.add_argument("--seeds", type=int, default=None, help=f"seeds per engine and problem (default {SEEDS}, 5 with --quick)")
    ap.add_argument("--budget", type=int, default=BUDGET, help=f"evaluations per run (default {BUDGET:,})")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="worker processes (default: all CPUs)")
    ap.add_argument("--problems", default=None, help="comma-separated problem names (default: the whole suite)")
    ap.add_argument("--engines", default=None, help="comma-separated engines to run (default: auto, random, optuna-tpe[, optuna-nsga2])")
    args = ap.parse_args(argv)
    seeds = args.seeds or (5 if args.quick else SEEDS)
    problems = P.suite()
    if args.problems:
        wanted = args.problems.split(",")
        problems = [p for p in problems if p.name in wanted]
    engines = args.engines.split(",") if args.engines else None
    t0 = time.perf_counter()
    results = run(problems, seeds, args.budget, args.jobs, engines)
    if engines:  # a partial run: raw medians only
        for (name, e), rs in sorted(results.items()):
            ns = [n for _, n, _ in rs]
            print(f"{name:22s} {e:12s} median {_fmt(statistics.median(ns), args.budget):>7s}  runs {ns}  {sum(s for *_, s in rs):.1f}s")
        return 0
    text, beat_random, beat_tpe = table(problems, results, args.budget)
    n = len(problems)
    print(f"Evaluations to reach the bar (median of {seeds} seeds; pool {POOL}; budget {args.budget:,} evaluations "
          f"for every engine, capped because Optuna TPE slows down with thousands of trials). The bar is the best of "
          f"{P.RANDOM_SAMPLES:,} uniform random candidates; noisy problems are judged on the noiseless value; "
          f"lower is better, ratio < 1 means the default engine needs fewer evaluations.\n")
    print(text)
    print(f"\ndefault beats random on {beat_random}/{n} problems, beats TPE on {beat_tpe}/{n}")
    print(f"({time.perf_counter() - t0:.0f} s with {args.jobs} worker process(es))")
    return 0 if beat_random == n and beat_tpe * 2 > n else 1


if __name__ == "__main__":
    raise SystemExit(main())
