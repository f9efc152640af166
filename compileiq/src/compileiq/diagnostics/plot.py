"""``compileiq plot results.csv [-o DIR]``: PNG plots of a run (matplotlib, Agg, no display needed).

Drawing uses matplotlib's object API (Figure + Agg canvas) rather than pyplot, so it neither
needs nor changes a global backend and works inside notebooks and worker processes alike.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from .load import ResultsFileError, read_results
from .plot_data import FrontPoints, front_points, generation_series

INSTALL_HINT = 'compileiq plot needs matplotlib: pip install matplotlib'


def _figure(size=(7.0, 4.2)):
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as e:
        raise ImportError(INSTALL_HINT) from e
    fig = Figure(figsize=size, dpi=100)
    FigureCanvasAgg(fig)
    return fig


def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, format="png")
    return path


def draw_scores(series, label: str, problem_type: str, path: Path) -> Path:
    fig = _figure()
    ax = fig.add_subplot()
    ax.plot(series["generation"], series["median"], "o-", color="tab:gray", label="median of the generation")
    ax.plot(series["generation"], series["best"], "o-", color="tab:blue", label="best of the generation")
    ax.step(series["generation"], series["best_so_far"], where="post", color="tab:red", label="best so far")
    ax.set_xlabel("generation")
    ax.set_ylabel(f"{label} ({'lower' if problem_type == 'min' else 'higher'} is better)")
    ax.set_title(f"{label}: best and median per generation")
    ax.legend()
    ax.grid(alpha=0.3)
    return _save(fig, path)


def draw_invalid(series, path: Path) -> Path:
    fig = _figure()
    ax = fig.add_subplot()
    ax.bar(series["generation"], series["invalid_pct"], color="tab:orange")
    ax.set_ylim(0, 100)
    ax.set_xlabel("generation")
    ax.set_ylabel("invalid evaluations (%)")
    ax.set_title("invalid rate per generation")
    ax.grid(alpha=0.3, axis="y")
    return _save(fig, path)


def draw_front(fp: FrontPoints, path: Path) -> Path:
    fig = _figure((6.0, 5.0))
    ax = fig.add_subplot()
    ax.scatter(fp.points[:, 0], fp.points[:, 1], s=14, color="tab:gray", alpha=0.5, label="candidates")
    front = fp.front
    ax.plot(front[:, 0], front[:, 1], "o-", color="tab:red", label=f"Pareto front ({len(front)})")
    if fp.baseline is not None:
        ax.scatter([fp.baseline[0]], [fp.baseline[1]], marker="*", s=160, color="black", label="baseline")
    ax.set_xlabel(fp.x_label)
    ax.set_ylabel(fp.y_label)
    ax.set_title("Pareto front")
    ax.legend()
    ax.grid(alpha=0.3)
    return _save(fig, path)


def plot_results(csv_path: str | os.PathLike, out_dir: str | os.PathLike | None = None,
                 problem_type: str = "min") -> list[Path]:
    """Write the plots of a results CSV into ``out_dir`` (default: the CSV's folder); returns the paths.

    One score plot per objective, one invalid-rate plot, and the Pareto front of score_1 vs score_2
    when the run has several objectives."""
    loaded = read_results(csv_path)
    if not loaded.score_cols:
        raise ResultsFileError(f"{csv_path}: no score_1 column, nothing to plot; run `compileiq diagnose {csv_path}` "
                               "to see which columns the file has")
    out = Path(out_dir) if out_dir is not None else loaded.path.parent
    out.mkdir(parents=True, exist_ok=True)
    stem = loaded.path.stem
    written = []
    if loaded.has_generation:
        for i, col in enumerate(loaded.rank_cols):
            s = generation_series(loaded, i, problem_type)
            written.append(draw_scores(s, col, problem_type, out / f"{stem}_score_{i + 1}.png"))
        written.append(draw_invalid(generation_series(loaded, 0, problem_type), out / f"{stem}_invalid_rate.png"))
    if len(loaded.score_cols) >= 2:
        fp = front_points(loaded, problem_type)
        if len(fp.points):
            written.append(draw_front(fp, out / f"{stem}_pareto_front.png"))
    if not written:
        raise ResultsFileError(f"{csv_path}: no generation column and a single objective, so there is nothing to "
                               "plot; run `compileiq diagnose` on it")
    return written


def main(argv=None, prog: str = "compileiq plot") -> int:
    p = argparse.ArgumentParser(prog=prog, description="Write PNG plots of a CompileIQ results CSV: best and median "
                                "score per generation, invalid rate, and the Pareto front for several objectives.")
    p.add_argument("csv", help="results CSV written by Search(..., dump_results=...)")
    p.add_argument("-o", "--output-dir", metavar="DIR", help="folder for the PNG files (default: the CSV's folder)")
    p.add_argument("--problem-type", choices=("min", "max"), default="min")
    args = p.parse_args(argv)
    try:
        paths = plot_results(args.csv, args.output_dir, args.problem_type)
    except (ResultsFileError, ValueError, OSError, ImportError) as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 2
    for path in paths:
        print(path)
    return 0
