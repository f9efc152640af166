"""``python -m compileiq <command>`` (also the ``compileiq`` console script)."""

from __future__ import annotations

import argparse
import importlib
import sys

# commands with their own argparse: the raw arguments are forwarded to their main()
_FORWARD = {"validate": "compileiq.validate.cli", "diagnose": "compileiq.diagnostics.cli",
            "plot": "compileiq.diagnostics.plot", "doctor": "compileiq.doctor.cli",
            "pack": "compileiq.boosters.cli", "canary": "compileiq.boosters.canary_cli",
            "profile": "compileiq.profile.cli", "skills": "compileiq.skills.cli"}


def _demo(args) -> int:
    from .demo import run_demo
    from .errors import CompileIQError
    try:
        return run_demo(generations=args.generations, pool_size=args.pool_size, num_workers=args.workers,
                        output=args.output)
    except (CompileIQError, OSError) as exc:  # a missing compiler, an unwritable output: one line, no traceback
        print(f"compileiq demo: error: {exc}", file=sys.stderr)
        return 2


def _positive(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number >= 1")
    return n


def _bench(args) -> int:
    from .bench.__main__ import main as bench_main
    return bench_main((["--quick"] if args.quick else []) + (["--only", args.only] if args.only else []))


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="compileiq", description="Evolutionary search over compiler controls.")
    sub = p.add_subparsers(dest="command", metavar="command")
    d = sub.add_parser("demo", help="tune a GCC-compiled CPU kernel (validated) and a CUDA kernel's ptxas options, offline")
    d.add_argument("--generations", type=_positive, default=5)
    d.add_argument("--pool-size", type=_positive, default=12)
    d.add_argument("--workers", type=_positive, default=2)
    d.add_argument("--output", default=None, help="results CSV (default: a temporary file)")
    d.set_defaults(func=_demo)
    b = sub.add_parser("bench", help="engine quality, engine overhead and worker throughput against the competitors")
    b.add_argument("--quick", action="store_true")
    b.add_argument("--only", choices=["engine_quality", "engine_overhead", "throughput", "ptxas_workers"])
    b.set_defaults(func=_bench)
    sub.add_parser("pack", add_help=False, help="list, verify, build and try booster packs")
    sub.add_parser("canary", add_help=False, help="O0/O3 canary: do a candidate's controls reach the compiler?")
    sub.add_parser("profile", add_help=False, help="compare two builds: resources, SASS mix, Nsight Compute metrics")
    sub.add_parser("skills", add_help=False, help="list the agent skills or install them into an agent's skills folder")
    sub.add_parser("doctor", add_help=False, help="compilers, GPUs, CIQ_* settings, a live worker check, and fixes")
    sub.add_parser("validate", add_help=False, help="re-measure winners against the baseline and decide KEPT/REJECTED (Welch)")
    sub.add_parser("diagnose", add_help=False, help="per-generation table and pathologies of a results CSV")
    sub.add_parser("plot", add_help=False, help="PNG plots of a results CSV (needs matplotlib)")
    v = sub.add_parser("version", help="print the version")
    v.set_defaults(func=lambda a: print(__import__("compileiq").__version__) or 0)
    return p


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in _FORWARD:
        return int(importlib.import_module(_FORWARD[argv[0]]).main(argv[1:]) or 0)
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    return int(args.func(args) or 0)
