"""``compileiq canary --module mybench:objective --compiler gcc``: the O0/O3 canary from the shell.

Exit status: 0 PASS (the controls reach the compiler), 1 FAIL (they do not, or O3 differs),
2 could not decide (bad arguments, an objective that cannot be imported or that failed, or verdict
UNDECIDED: the baseline's own runs spread too much on this host to tell).
"""

from __future__ import annotations

import argparse
import json
import sys

from ..errors import CompileIQError
from .canary import FAIL, MIN_SLOWDOWN, PASS, TOLERANCE, canary
from .objective_ref import ObjectiveRefError, load_objective

EXIT_PASS, EXIT_FAIL, EXIT_ERROR = 0, 1, 2


def build_parser(prog: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        # a description is printed as is (only help strings are %-formatted): one %, from the thresholds themselves
        prog=prog, description="Check that a candidate's controls reach the compiler: the objective runs the "
        f"baseline, the debug pack's O0 (must be >{MIN_SLOWDOWN:.0%} worse) and O3 (must be within {TOLERANCE:.0%}).",
        epilog="Exit status: 0 = PASS, 1 = FAIL, 2 = could not decide.")
    p.add_argument("--module", required=True, metavar="MODULE:FUNC",
                   help="the objective, e.g. mybench:objective or path/to/bench.py:objective")
    p.add_argument("--compiler", choices=("ptxas", "nvcc", "gcc", "clang"),
                   help="picks the built-in debug pack and the cache advice (default: the --pack's compiler, "
                        "else ptxas)")
    p.add_argument("--pack", metavar="PACK", help="a pack (zip, folder or built-in id) instead of the debug pack")
    p.add_argument("--repeats", type=int, default=3, help="interleaved rounds; medians are compared (default 3)")
    p.add_argument("--slow", default="O0", help="configuration that must regress (default O0)")
    p.add_argument("--same", default="O3", help="configuration that must match the baseline (default O3; "
                                                 "O2 for -O2 gcc/clang builds)")
    p.add_argument("--problem-type", choices=("min", "max"), default="min")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    return p


def main(argv=None, prog: str = "compileiq canary") -> int:
    args = build_parser(prog).parse_args(argv)
    try:
        objective = load_objective(args.module)
        result = canary(objective, args.compiler, repeats=args.repeats, pack=args.pack, slow=args.slow,
                        same=args.same, problem_type=args.problem_type)
    except (ObjectiveRefError, CompileIQError, KeyError, ValueError) as exc:
        msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"{prog}: error: {msg}", file=sys.stderr)
        return EXIT_ERROR
    print(json.dumps(result.as_dict(), indent=2) if args.json else result.report())
    return {PASS: EXIT_PASS, FAIL: EXIT_FAIL}.get(result.verdict, EXIT_ERROR)


if __name__ == "__main__":
    raise SystemExit(main())
