"""Run every CompileIQ benchmark in turn (``python -m compileiq bench``)."""

from __future__ import annotations

import argparse
import importlib

BENCHES = ("engine_overhead", "throughput", "ptxas_workers", "engine_quality", "validation_rates")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="compileiq bench")
    p.add_argument("--quick", action="store_true", help="fewer seeds and repeats (about a minute each)")
    p.add_argument("--only", choices=BENCHES)
    args = p.parse_args(argv)
    rc = 0
    for name in BENCHES:
        if args.only and name != args.only:
            continue
        print(f"\n## {name}\n", flush=True)
        mod = importlib.import_module(f"compileiq.bench.{name}")
        rc |= int(mod.main(["--quick"] if args.quick else []) or 0)
    return rc


if __name__ == "__main__":
    raise SystemExit(main())
