"""``python -m compileiq demo``: two real searches, offline, on the shipped search spaces.

1. GCC: tunes the options of a bundled stencil kernel with real timings (normalised to -O2), then
   re-measures -O2 and the best candidates interleaved and keeps only winners that pass the
   validation gate (the interval of the paired speed-up, better mean, spread: compileiq.validate).
2. ptxas: tunes a register-heavy CUDA kernel for two objectives (spill bytes, SASS instructions)
   and prints the Pareto front (with a GPU it times the kernel instead).
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from . import Search, SearchConfiguration
from .examples import gcc_stencil
from .search_spaces.compilers import GccSearchSpace
from .utils.validation import metadata_dict
from .worker import MultiProcessWorker


def _gcc_demo(generations: int, pool_size: int, num_workers: int, out: Path, top_k: int = 3) -> None:
    from .validate import validate
    space = GccSearchSpace()
    print(f"[1/2] GCC: tuning {space.toolchain.name} {space.toolchain.version_str} options of a 2-D stencil "
          f"({generations} generations x {pool_size} candidates, {num_workers} workers); baseline -O2")
    cfg = SearchConfiguration(generations=generations, pool_size=pool_size, normalize=True, seed=7)
    t0 = time.perf_counter()
    res = Search(gcc_stencil.objective, space, cfg, worker_type=MultiProcessWorker,
                 dump_results=out).start(num_workers=num_workers, task_timeout=120)
    df = res.get_results()
    cands = df[[not metadata_dict(m).get("baseline") for m in df["metadata"]]]
    ranked = cands[cands["norm_score_1"] != "*"].sort_values("norm_score_1", key=lambda c: c.astype(float))
    print(f"      searched {len(cands)} candidates in {time.perf_counter() - t0:.1f} s; results: {out}")
    top = ranked.head(top_k)
    with tempfile.TemporaryDirectory(prefix="ciq-demo-validate-") as d:
        (Path(d) / "base").mkdir()
        base_exe = gcc_stencil.build({}, Path(d) / "base")[0]
        runners = {}
        for i, (_, row) in enumerate(top.iterrows()):
            folder = Path(d) / f"c{i}"
            folder.mkdir()
            exe = gcc_stencil.build(row["params"], folder)[0]
            runners[f"#{i + 1} ({float(row['norm_score_1']):.3f}x in search)"] = _runner(exe)
        print(f"      validating the top {len(runners)} against -O2 (interleaved, {WARMUP} warm-up, {TRIALS} trials "
              f"each, up to {MAX_TRIALS} while undecided)...")
        decisions = validate(_runner(base_exe), runners, trials=TRIALS, warmup=WARMUP, max_trials=MAX_TRIALS,
                             output=out.with_name("validation.csv"))
    print("      | candidate | baseline us | candidate us | speed-up | paired speed-up [interval] | p | d | decision |")
    print("      |---|---|---|---|---|---|---|---|")
    for dec in decisions:
        v = dec.verdict
        print(f"      | {dec.name} | {v.baseline.mean / 1e3:.1f} | {v.candidate.mean / 1e3:.1f} | "
              f"{v.speedup:.3f}x | {_paired(v)} | {dec.p_value:.2g} | {dec.cohens_d:.2f} | {dec.decision} |")
    load = decisions[0].verdict.load
    if load is not None:
        print(f"      machine: {load.sentence()}")
    kept = [dec for dec in decisions if dec.kept]
    if kept:
        best = max(kept, key=lambda dec: dec.verdict.speedup)
        print(f"      winner: {best.name}, {best.verdict.speedup:.3f}x faster than -O2 "
              f"(p={best.p_value:.2g}, d={best.cohens_d:.2f}); decisions: {out.with_name('validation.csv')}")
    else:
        print(no_winner_text(decisions, "-O2"))


TRIALS, WARMUP, MAX_TRIALS = 60, 20, 240
NOT_BETTER = {"mean-not-better", "below-min-speedup", "not-significant", "small-effect"}


def _paired(v) -> str:
    ri = v.ratio
    if ri is None or not ri.formed:
        return "-"
    return f"{ri.median:.3f}x [{ri.low:.3f}, {ri.high:.3f}] ({ri.n} pairs)"


def no_winner_text(decisions, baseline: str, indent: str = "      ") -> str:
    """Why no candidate was kept, rule by rule; "the baseline is as good" only when that is what the
    numbers say (no candidate was surely better), never after a noise or spread rejection or an undecided one."""
    lines = [f"{indent}no candidate was kept:"]
    for dec in decisions:
        v = dec.verdict
        lines.append(f"{indent}  {dec.name}: {v.decision} ({v.speedup:.3f}x, p={dec.p_value:.2g}): {v.explanations[0]}")
    if all(set(dec.verdict.reasons) <= NOT_BETTER for dec in decisions):
        lines.append(f"{indent}on this machine {baseline} is as good as the search could show")
        return "\n".join(lines)
    advice = dict.fromkeys(a for dec in decisions for a in dec.verdict.advice)
    lines.append(f"{indent}the outcome came from a rule other than 'not better' (noise, spread, or too few runs to "
                 f"decide), so this is no verdict on {baseline}; what to do:")
    lines += [f"{indent}  - {a}" for a in advice]
    return "\n".join(lines)


def _runner(exe):
    def run_once():
        return gcc_stencil.time_binary(exe, repeats=1)
    run_once.device = "cpu"  # a GCC build runs on the CPU: validation's advice for a noisy machine fits that
    return run_once


def run_demo(generations: int = 5, pool_size: int = 12, num_workers: int = 2, output: str | None = None) -> int:
    folder = Path(output).parent if output else Path(tempfile.mkdtemp(prefix="compileiq-demo-"))
    folder.mkdir(parents=True, exist_ok=True)
    gcc_csv = Path(output) if output else folder / "gcc-results.csv"
    _gcc_demo(generations, pool_size, num_workers, gcc_csv)
    print()
    from .examples.ptxas_spill import run_ptxas_demo
    print("[2/2] ptxas:")
    run_ptxas_demo(generations=6, pool_size=16, num_workers=num_workers, output=folder / "ptxas-results.csv")
    return 0
