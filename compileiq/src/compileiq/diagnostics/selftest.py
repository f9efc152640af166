"""``--self-test``: one synthetic results CSV per pathology, classified and checked.

The data are seeded, so a failure means the classification changed, never bad luck.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

from ..results.csv_io import write_csv
from .report import diagnose

POOL = 20


def _frame(scores: list[list], k: int = 1, baselines: list[float] = (100.0,)) -> pd.DataFrame:
    """Rows (generation, score_1..k) to a results frame with the baseline row(s) first."""
    rows = [{"metadata": {"baseline": True}, "generation": 0, **{f"score_{i + 1}": b for i in range(k)},
             "params": {}} for b in baselines]
    for n, (gen, *vals) in enumerate(scores):
        rows.append({"metadata": {"param_id": f"p{n}"}, "generation": gen,
                     **{f"score_{i + 1}": v for i, v in enumerate(vals)}, "params": {"x": n}})
    cols = ["metadata", "generation"] + [f"score_{i + 1}" for i in range(k)] + ["params"]
    return pd.DataFrame(rows, columns=cols)


def _improving(rng, gens: int = 6, rate: float = 0.9, cv: float = 0.05, invalid=None, k: int = 1) -> pd.DataFrame:
    out = []
    for g in range(gens):
        bad = 0 if invalid is None else round(invalid[g] * POOL)
        for j in range(POOL):
            vals = [100.0 * rate ** g * (1 + cv * rng.standard_normal()) for _ in range(k)]
            out.append([g, *(["*"] * k if j < bad else vals)])
    return _frame(out, k)


def _stalled(rng, gens: int = 8) -> pd.DataFrame:
    out = []
    for g in range(gens):
        floor = 100.0 * 0.9 ** min(g, 2)  # best found by generation 2, never beaten after
        out += [[g, floor if j == 0 else floor * (1 + 0.05 * abs(rng.standard_normal()))] for j in range(POOL)]
    return _frame(out)


def _noisy(rng, gens: int = 6) -> pd.DataFrame:
    # the baseline measured once per generation (as a Ray worker on several nodes does): it varies by ~30%
    baselines = [100.0 * float(np.exp(0.3 * rng.standard_normal())) for _ in range(gens)]
    return _frame([[g, 100.0 * 0.8 ** g * (1 + 0.05 * rng.standard_normal())] for g in range(gens) for _ in range(POOL)],
                  baselines=baselines)


def _diverse(rng, gens: int = 6) -> pd.DataFrame:
    # a deterministic objective over a wide space: candidates differ by ~60%, yet nothing is noisy
    return _frame([[g, 100.0 * 0.85 ** g * float(np.exp(0.6 * rng.standard_normal()))]
                   for g in range(gens) for _ in range(POOL)])


def cases(rng: np.random.Generator) -> list[tuple[str, pd.DataFrame, set[str]]]:
    healthy = _improving(rng)
    return [
        ("healthy", healthy, {"HEALTHY"}),
        ("rising invalid rate", _improving(rng, invalid=[0, 0, 0.1, 0.3, 0.4, 0.5]), {"INCREASING_INVALID_RATE"}),
        ("stalled", _stalled(rng), {"STALLED_CONVERGENCE"}),
        ("noisy", _noisy(rng), {"HIGH_VARIANCE"}),
        ("diverse, deterministic", _diverse(rng), {"HEALTHY"}),
        ("identical scores", _frame([[g, 42.0] for g in range(4) for _ in range(POOL)]), {"IDENTICAL_SCORES"}),
        ("all invalid", _frame([[g, "*"] for g in range(3) for _ in range(POOL)]), {"ALL_INVALID"}),
        ("missing generation column", healthy.rename(columns={"generation": "generaton"}), {"NO_GENERATION_COLUMN"}),
        ("missing score column", healthy.rename(columns={"score_1": "scor_1"}), {"NO_SCORE_COLUMN"}),
        ("two objectives, healthy", _improving(rng, k=2), {"HEALTHY"}),
    ]


def run(echo: Callable[[str], None] = print) -> int:
    """Classify every synthetic case, print one line each, return the number of mismatches."""
    rng = np.random.default_rng(7)
    failures = 0
    echo("CompileIQ diagnose self-test")
    with tempfile.TemporaryDirectory(prefix="ciq-diagnose-selftest-") as tmp:
        for i, (name, df, expected) in enumerate(cases(rng)):
            path = write_csv(df, Path(tmp) / f"case{i}.csv")
            got = set(diagnose(path).codes)
            ok = got == expected
            failures += not ok
            echo(f"  {'PASS' if ok else 'FAIL'}  {name:<27} {', '.join(sorted(got))}"
                 + ("" if ok else f"   (expected {', '.join(sorted(expected))})"))
    echo("all cases classified as expected" if not failures else f"{failures} case(s) misclassified")
    return failures
