"""How often validation keeps what it should on a loaded machine: an A/A comparison and the demo's winner.

    python -m compileiq.bench.validation_rates            # 20 runs of each, about 2-4 minutes on 2 CPUs
    python -m compileiq.bench.validation_rates --quick    # 5 runs of each

The demo's GCC search (seed 7, 5 generations x 12) finds the winner, unless --options gives its
options. Both -O2 and the winner are built as the demo builds them (gcc_stencil.build) and
measured as the demo measures them (one run of the binary per trial, 20 warm-up and 60 trials,
up to 240 while undecided), with one busy process (a Python loop) running beside them the whole
time. Runs take turns: the A/A comparison (-O2 against itself: any KEPT is a false positive), then
-O2 against the winner. The same pairs are also judged by NVIDIA's CV gate (noise_rule="cv", on
the first 60 pairs), so the table compares the two rules on identical measurements.

Exit status 0 when the A/A comparison is kept in at most 5% of the runs and the winner in at
least 95%, 1 otherwise.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ..examples import gcc_stencil
from ..validate import validate, welch_decide

TRIALS, WARMUP, MAX_TRIALS = 60, 20, 240
# the winner of the demo's search on the machine this benchmark was written on (used with --recorded)
RECORDED = ("-O3 -march=x86-64-v3 -mtune=intel -fpeel-loops -fschedule-insns -fgcse-after-reload -funswitch-loops "
            "-fversion-loops-for-strides -fpredictive-commoning -falign-functions=16 -ffp-contract=on "
            "-fno-semantic-interposition --param=max-unroll-times=15 --param=max-inline-insns-single=70 "
            "--param=early-inlining-insns=2 --param=max-unswitch-insns=100 "
            "--param=max-variable-expansions-in-unroller=4 --param=vect-epilogues-nomask=1")


def demo_winner(folder: Path) -> str:
    """The hex controls of the best candidate of the demo's GCC search (as `make demo` runs it)."""
    from .. import Search, SearchConfiguration
    from ..search_spaces.compilers import GccSearchSpace
    from ..utils.validation import metadata_dict
    from ..worker import MultiProcessWorker

    cfg = SearchConfiguration(generations=5, pool_size=12, normalize=True, seed=7)
    res = Search(gcc_stencil.objective, GccSearchSpace(), cfg, worker_type=MultiProcessWorker,
                 dump_results=folder / "search.csv", disable_progress_bar=True).start(num_workers=2, task_timeout=120)
    df = res.get_results()
    df = df[[not metadata_dict(m).get("baseline") for m in df["metadata"]]]
    df = df[df["norm_score_1"] != "*"].sort_values("norm_score_1", key=lambda c: c.astype(float))
    return df.iloc[0]["params"]


def options_hex(options: str) -> str:
    from ..compilers import find_gcc
    from ..controls.format import format_controls
    return format_controls("gcc", find_gcc().version_str, options.split()).hex()


def runner(exe: Path):
    def run_once():
        return gcc_stencil.time_binary(exe, repeats=1)
    run_once.device = "cpu"
    return run_once


def busy_process() -> subprocess.Popen:
    """One CPU-bound process beside the validation, as another job on a shared machine."""
    return subprocess.Popen([sys.executable, "-c", "while True: pass"])


def one_run(base: Path, cand: Path) -> dict:
    t0 = time.perf_counter()
    d = validate(runner(base), {"c": runner(cand)}, trials=TRIALS, warmup=WARMUP, max_trials=MAX_TRIALS)[0]
    v = d.verdict
    nvidia = welch_decide(d.baseline_samples[:TRIALS], d.candidate_samples[:TRIALS], noise_rule="cv")
    return {"decision": d.decision, "pairs": v.ratio.n, "ratio": v.ratio.median, "cv": max(v.baseline.cv, v.candidate.cv),
            "others": v.load.others if v.load else float("nan"), "seconds": time.perf_counter() - t0,
            "nvidia": nvidia.decision}


def _row(name: str, runs: list[dict]) -> str:
    n = len(runs)
    kept = sum(r["decision"] == "KEPT" for r in runs)
    rejected = sum(r["decision"].startswith("REJECTED") for r in runs)
    undecided = sum(r["decision"] == "UNDECIDED" for r in runs)
    nv_kept = sum(r["nvidia"] == "KEPT" for r in runs)
    nv_noisy = sum(r["nvidia"] == "REJECTED:noisy" for r in runs)
    med = statistics.median
    return (f"| {name} | {n} | {kept} ({kept / n:.0%}) | {rejected} | {undecided} | {med(r['pairs'] for r in runs):.0f} | "
            f"{med(r['ratio'] for r in runs):.3f}x | {med(r['cv'] for r in runs):.1%} | "
            f"{med(r['others'] for r in runs):.2f} | {nv_kept} ({nv_kept / n:.0%}), {nv_noisy} noisy | "
            f"{med(r['seconds'] for r in runs):.1f} |")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m compileiq.bench.validation_rates", description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="5 runs of each instead of 20")
    ap.add_argument("--runs", type=int, help="runs of each comparison (default 20, 5 with --quick)")
    ap.add_argument("--options", help="the winner's gcc options (default: run the demo's search and take its best)")
    ap.add_argument("--recorded", action="store_true", help="use the winner recorded in this file instead of searching")
    args = ap.parse_args(argv)
    runs = args.runs or (5 if args.quick else 20)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="ciq-bench-validation-") as d:
        d = Path(d)
        if args.options or args.recorded:
            win_hex, source = options_hex(args.options or RECORDED), "given options" if args.options else "recorded"
        else:
            win_hex, source = demo_winner(d), "the demo's search (seed 7)"
        for sub in ("base", "win"):
            (d / sub).mkdir()
        base = gcc_stencil.build({}, d / "base")[0]
        win = gcc_stencil.build(win_hex, d / "win")[0]
        print(f"winner from {source}; -O2 and the winner built as the demo builds them; one busy process beside "
              f"every run; {WARMUP} warm-up, {TRIALS} trials, up to {MAX_TRIALS} pairs while undecided", flush=True)
        results: dict[str, list[dict]] = {"A/A: -O2 vs -O2": [], "-O2 vs the demo's winner": []}
        busy = busy_process()
        try:
            for i in range(runs):
                for name, cand in zip(results, (base, win)):
                    results[name].append(one_run(base, cand))
                    r = results[name][-1]
                    print(f"  run {i + 1:2d} {name:26s} {r['decision']:28s} {r['pairs']:3d} pairs  "
                          f"{r['ratio']:.3f}x  CV {r['cv']:.1%}  others {r['others']:.2f} CPUs  (cv rule: {r['nvidia']})",
                          flush=True)
        finally:
            busy.kill()
            busy.wait()
    print()
    print("| comparison | runs | KEPT | REJECTED | UNDECIDED | median pairs | median paired speed-up | median worst CV "
          "| other processes (CPUs) | NVIDIA's CV gate on the same pairs: KEPT | s per run |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, rs in results.items():
        print(_row(name, rs))
    aa, win_runs = results.values()
    aa_rate = sum(r["decision"] == "KEPT" for r in aa) / runs
    win_rate = sum(r["decision"] == "KEPT" for r in win_runs) / runs
    ok = aa_rate <= 0.05 and win_rate >= 0.95
    print(f"\nA/A kept {aa_rate:.0%} (at most 5%), winner kept {win_rate:.0%} (at least 95%): "
          f"{'PASS' if ok else 'FAIL'}  ({time.perf_counter() - t0:.0f} s)")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
