#!/usr/bin/env python3
"""Diagnose a results CSV (same as `python -m compileiq diagnose`); exit status = pathologies found.

    python scripts/diagnose_csv.py results.csv [--problem-type max] [--json]
    python scripts/diagnose_csv.py --self-test
"""

import sys
from pathlib import Path

_SRC = Path(__file__).resolve().parents[1] / "src"
if (_SRC / "compileiq").is_dir():
    sys.path.insert(0, str(_SRC))  # run from a source checkout: use the package next to this script

from compileiq.diagnostics.cli import main  # noqa: E402

if __name__ == "__main__":
    raise SystemExit(main(prog="diagnose_csv.py"))
