#!/usr/bin/env python3
"""Validate search winners against the baseline (same as `python -m compileiq validate`).

    python scripts/welch_validate.py --baseline-cmd './bench' --candidate-cmd './bench-tuned' \
        --score-regex 'time: ([0-9.]+) ms' --output validation.csv
    python scripts/welch_validate.py --self-test
"""

import sys
from pathlib import Path

_SRC = Path(__file__).resolve().parents[1] / "src"
if (_SRC / "compileiq").is_dir():
    sys.path.insert(0, str(_SRC))  # run from a source checkout: use the package next to this script

from compileiq.validate.cli import main  # noqa: E402

if __name__ == "__main__":
    raise SystemExit(main(prog="welch_validate.py"))
