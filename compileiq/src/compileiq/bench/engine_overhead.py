"""What an engine costs per candidate (ask + tell, the objective excluded), at pool 128 on 20 knobs.

    python -m compileiq.bench.engine_overhead            # 10 generations of 128
    python -m compileiq.bench.engine_overhead --quick    # 3 generations

The target for our engines is at most 2 ms per candidate: negligible next to a compile and a
benchmark run, even when many workers ask for candidates at once.
"""

from __future__ import annotations

import argparse
import random
import time

from ..engines.base import EngineSettings, make_engine
from ..search_spaces import base as ss
from ..space.space import SearchSpace
from ..types import derived_cull_size

POOL = 128
TARGET_MS = 2.0
OURS = ("ga", "nsga2", "random")


def space_20() -> SearchSpace:
    """20 knobs shaped like a compiler's: ranges, log grids, enumerations and on/off flags."""
    space = {}
    for i in range(6):
        space[f"range{i}"] = ss.range(0, 31)
    for i in range(3):
        space[f"log{i}"] = ss.log_sampling(16, 4096, 9)
    for i in range(5):
        space[f"enum{i}"] = ss.choice(["a", "b", "c", "d", "e"], knockout_prob=0.2 if i % 2 else None)
    for i in range(6):
        space[f"-fflag{i}"] = ss.literal(f"-fflag{i}", knockout_prob=0.5)
    return SearchSpace(space)


def _objective(g, k: int) -> tuple:
    # cheap and deterministic; its cost is not timed anyway
    a = sum((x - 7) ** 2 for x in g)
    return (float(a),) if k == 1 else (float(a), float(sum((x - 2) ** 2 for x in g)))


def measure(engine: str, k: int, generations: int, pool: int = POOL, seed: int = 0) -> float:
    """Milliseconds of ask + tell per candidate over ``generations`` generations of ``pool``."""
    space = space_20()
    settings = EngineSettings(num_objectives=k, pool_size=pool, cull_size=derived_cull_size(pool, k),
                              seed=seed, generations=generations)
    eng = make_engine(engine, space, settings)
    noise = random.Random(seed)
    spent, count = 0.0, 0
    try:
        for _ in range(generations):
            t = time.perf_counter()
            batch = eng.ask()
            spent += time.perf_counter() - t
            scores = [tuple(v + noise.random() for v in _objective(g, k)) for g in batch]
            t = time.perf_counter()
            eng.tell(batch, scores)
            spent += time.perf_counter() - t
            count += len(batch)
    finally:
        eng.close()
    return 1000.0 * spent / max(1, count)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m compileiq.bench.engine_overhead", description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="3 generations instead of 10")
    ap.add_argument("--generations", type=int, default=None, help="generations per engine (default 10, 3 with --quick)")
    ap.add_argument("--pool", type=int, default=POOL, help=f"pool size (default {POOL})")
    ap.add_argument("--no-optuna", action="store_true", help="skip Optuna TPE (slow, and needs optuna)")
    args = ap.parse_args(argv)
    gens = args.generations or (3 if args.quick else 10)
    rows = [("ga", 1), ("nsga2", 2), ("random", 1)]
    if not args.no_optuna:
        rows.append(("optuna-tpe", 1))
    print(f"Engine cost per candidate (ask + tell, objective excluded): pool {args.pool}, 20-knob space, "
          f"{gens} generations ({gens * args.pool:,} candidates). Target for ours: <= {TARGET_MS:g} ms.\n")
    print("| engine | objectives | ms / candidate | <= 2 ms |")
    print("|---|---|---|---|")
    ok = True
    for name, k in rows:
        try:
            ms = measure(name, k, gens, args.pool)
        except ImportError as exc:
            print(f"| {name} | {k} | skipped: {exc} | - |")
            continue
        verdict = "-"
        if name in OURS:
            passed = ms <= TARGET_MS
            ok &= passed
            verdict = "PASS" if passed else "FAIL"
        print(f"| {name} | {k} | {ms:.3f} | {verdict} |")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
