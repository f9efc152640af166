"""``compileiq diagnose results.csv`` / ``scripts/diagnose_csv.py``.

Exit status = the number of pathologies found (0 = healthy). A file that cannot be read at all
(missing, empty, not a CSV) exits with 64, outside the range of pathology counts.
"""

from __future__ import annotations

import argparse
import sys

from .load import ResultsFileError
from .report import diagnose

EXIT_INPUT = 64


def build_parser(prog: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=prog, description="Per-generation statistics of a CompileIQ results CSV and the pathologies they show "
        "(INCREASING_INVALID_RATE, STALLED_CONVERGENCE, HIGH_VARIANCE, IDENTICAL_SCORES, ALL_INVALID, "
        "NO_GENERATION_COLUMN, NO_SCORE_COLUMN), each with what to do.",
        epilog="Exit status: the number of pathologies (0 = HEALTHY); 64 = the file could not be read.")
    p.add_argument("csv", nargs="?", help="results CSV written by Search(..., dump_results=...)")
    p.add_argument("--problem-type", choices=("min", "max"), default="min",
                   help="min (default): lower scores are better; max: higher are better")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--self-test", action="store_true", help="classify synthetic CSVs of every pathology and exit")
    return p


def main(argv=None, prog: str = "compileiq diagnose") -> int:
    args = build_parser(prog).parse_args(argv)
    if args.self_test:
        from .selftest import run
        return 1 if run() else 0
    if not args.csv:
        print(f"{prog}: error: give the results CSV to diagnose, e.g. {prog} results.csv", file=sys.stderr)
        return EXIT_INPUT
    try:
        report = diagnose(args.csv, args.problem_type)
    except (ResultsFileError, OSError) as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return EXIT_INPUT
    print(report.to_json() if args.json else report.render())
    return report.pathologies
