#!/usr/bin/env python3
"""Kwker benchmark: a thin wrapper around kwker.bench.main (same as `python -m kwker bench`).

    python kwker/bench/run.py                 # full run (~6 min on 2 cores), Markdown
    python kwker/bench/run.py --quick         # reduced sizes, < 30 s
    python kwker/bench/run.py --json          # one JSON object (schema kwker.bench, v1)
    python kwker/bench/run.py --only argsort  # rows whose name contains "argsort"

See kwker/bench/README.md and kwker/docs/benchmarks.md.
"""
import sys

from kwker.bench import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
