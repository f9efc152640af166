"""``compileiq validate`` / ``scripts/welch_validate.py``: the shipping gate from the command line.

Exit status: 0 when at least one candidate is KEPT, 1 when every candidate is REJECTED, 2 when
nothing could be decided (bad arguments, a missing file, a side that produced no score, or no
candidate KEPT and at least one UNDECIDED after --max-trials).
"""

from __future__ import annotations

import argparse
import json
import math
import shlex
import sys
from pathlib import Path

from ..errors import CompileIQError
from .measure import CommandMeasure, compile_regex
from .runner import Candidate, validate
from .device import DEVICES
from .stats import MIN_SPEEDUP, NOISE_RULES, SPREAD_RULES

EXIT_KEPT, EXIT_REJECTED, EXIT_ERROR = 0, 1, 2
PLACEHOLDER = "{controls}"


class UsageError(ValueError):
    """The arguments do not describe a validation that can run."""


def build_parser(prog: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=prog, description="Re-measure a baseline and candidates interleaved and decide KEPT, "
        "REJECTED:<reason> or UNDECIDED. Default rule (--noise-rule ratio_ci): the 95% interval of the median "
        "paired speed-up must lie above 1 + --min-speedup (2%), the mean must be better and the p5-p95 spread at "
        "most 25% wider relative to the mean (unless the candidate's slow tail beats the baseline's fast tail); "
        "undecided candidates get more trials up to --max-trials. --noise-rule cv is NVIDIA's rule: CV <= 10%, "
        "one-sided Welch p < 0.05, Cohen's d > 0.2, better mean, the spread check.",
        epilog="Exit status: 0 = at least one candidate KEPT, 1 = all REJECTED, 2 = could not decide.")
    p.add_argument("--baseline-cmd", metavar="CMD", help="shell command that measures the baseline once")
    p.add_argument("--candidate-cmd", "--opt-cmd", metavar="CMD", action="append", default=[], dest="candidate_cmd",
                   help="shell command that measures a candidate once (repeat for several)")
    p.add_argument("--acf", "--controls", metavar="PATH", action="append", default=[], dest="controls",
                   help="controls (ACF) file of a candidate, substituted into --cmd-template (repeat for several)")
    p.add_argument("--cmd-template", metavar="TEMPLATE",
                   help=f"command with {PLACEHOLDER} where the controls path goes; the baseline runs it with "
                        f"{PLACEHOLDER} empty (unless --baseline-cmd is given); CIQ_CONTROLS is set to the path too")
    p.add_argument("--trials", type=int, default=100, help="measured runs per side (default 100)")
    p.add_argument("--warmup", type=int, default=50, help="discarded runs per side before measuring (default 50)")
    p.add_argument("--score-regex", metavar="RE",
                   help="regex reading the score from a command's output: first group, else the whole match "
                        "(default: the last number printed)")
    p.add_argument("--problem-type", choices=("min", "max"), default="min",
                   help="min: lower is better (time); max: higher is better (throughput)")
    p.add_argument("--output", metavar="CSV", help="append one row per decision, with provenance, to this CSV")
    p.add_argument("--input-shape", metavar="SHAPE", default="", help="input shape recorded in the log, e.g. 4096x4096")
    p.add_argument("--framework", metavar="NAME", default="", help="framework and version recorded in the log")
    p.add_argument("--timeout", type=float, metavar="S", help="seconds one run may take before it counts as no score")
    p.add_argument("--spread-rule", choices=SPREAD_RULES, default="relative",
                   help="relative (default): p5-p95 spans as a share of each side's mean; absolute: NVIDIA's rule, "
                        "the spans in the score's unit")
    p.add_argument("--noise-rule", choices=NOISE_RULES, default="ratio_ci",
                   help="ratio_ci (default): the interval of the paired speed-up decides, undecided candidates get "
                        "more trials; cv: NVIDIA's gate, CV <= 10%% on each side, then Welch and Cohen's d")
    p.add_argument("--min-speedup", type=float, default=MIN_SPEEDUP, metavar="F",
                   help="ratio_ci keeps a candidate only when its speed-up is surely above 1 + F (default 0.02 = 2%%)")
    p.add_argument("--max-trials", type=int, metavar="N",
                   help="ratio_ci: pairs an undecided candidate may get in all, --trials more per look "
                        "(default 4 x --trials)")
    p.add_argument("--device", choices=("auto", *DEVICES), default="auto",
                   help="where the benchmark runs, for the advice when it is noisy (default auto: from the "
                        "controls files' compiler; unknown gets both)")
    p.add_argument("--json", action="store_true", help="print the decisions as JSON")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    p.add_argument("--self-test", action="store_true", help="check the decision rule on synthetic samples and exit")
    return p


def _candidates(args) -> tuple[Candidate, list[Candidate]]:
    regex = compile_regex(args.score_regex)
    if args.trials < 2:
        raise UsageError(f"--trials {args.trials}: a t-test needs at least 2 trials per side (100 recommended)")
    if args.warmup < 0:
        raise UsageError(f"--warmup {args.warmup} must be 0 or more (50 recommended)")
    if args.max_trials is not None and args.max_trials < args.trials:
        raise UsageError(f"--max-trials {args.max_trials} must be at least --trials ({args.trials})")
    if args.min_speedup < 0:
        raise UsageError(f"--min-speedup {args.min_speedup} must be 0 or more (a fraction: 0.02 = 2%)")
    if args.controls and not args.cmd_template:
        raise UsageError("--acf/--controls needs --cmd-template, e.g. --cmd-template "
                         "'ptxas --apply-controls {controls} k.ptx -o k.cubin && ./bench k.cubin'")
    if args.cmd_template and PLACEHOLDER not in args.cmd_template:
        raise UsageError(f"--cmd-template {args.cmd_template!r} has no {PLACEHOLDER} placeholder for the controls path")
    if not args.candidate_cmd and not args.controls:
        raise UsageError("nothing to validate: give --candidate-cmd CMD, or --acf PATH with --cmd-template")
    cands = [Candidate(f"candidate-{i + 1}", CommandMeasure(c, regex, timeout=args.timeout), command=c)
             for i, c in enumerate(args.candidate_cmd)]
    for path in args.controls:
        if not Path(path).is_file():
            raise UsageError(f"controls file {path} does not exist (or is not a file); check the --acf/--controls path")
        cmd = args.cmd_template.replace(PLACEHOLDER, shlex.quote(path))
        cands.append(Candidate(Path(path).name, CommandMeasure(cmd, regex, timeout=args.timeout,
                                                               env={"CIQ_CONTROLS": str(path)}),
                               controls=str(path), command=cmd))
    if args.baseline_cmd:
        base_cmd = args.baseline_cmd
    elif args.cmd_template:
        base_cmd = args.cmd_template.replace(PLACEHOLDER, "")
    else:
        raise UsageError("no baseline: give --baseline-cmd CMD (or --cmd-template, whose baseline run has no controls)")
    base = Candidate("baseline", CommandMeasure(base_cmd, regex, timeout=args.timeout, env={"CIQ_CONTROLS": ""}),
                     command=base_cmd)
    return base, cands


def _progress(quiet: bool):
    if quiet:
        return None

    def show(phase: str, done: int, total: int) -> None:
        if done == total or done % max(1, total // 10) == 0:
            print(f"  {phase} {done}/{total}", file=sys.stderr, flush=True)
    return show


def _finite(obj):
    """inf/NaN (constant samples give d = inf) as null: strict JSON readers reject Infinity."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_finite(v) for v in obj]
    return obj


def _interval(ri):
    if ri is None:
        return None
    return {"median": ri.median, "low": ri.low, "high": ri.high, "confidence": ri.confidence, "pairs": ri.n}


def exit_status(decisions) -> int:
    if any(d.kept for d in decisions):
        return EXIT_KEPT
    return EXIT_REJECTED if all(d.decision.startswith("REJECTED:") for d in decisions) else EXIT_ERROR


def _report(decisions, as_json: bool) -> None:
    if as_json:
        out = [{"candidate": d.name, "decision": d.decision, "reasons": list(d.reasons), "p_value": d.p_value,
                "cohens_d": d.cohens_d, "speedup": d.verdict.speedup, "config_hash": d.config_hash,
                "command": d.command, "controls": d.controls, "baseline": d.verdict.baseline.as_dict(),
                "candidate_stats": d.verdict.candidate.as_dict(), "noise_rule": d.verdict.noise_rule,
                "paired_speedup": _interval(d.verdict.ratio), "device": d.verdict.device,
                "others_cpu_share": d.verdict.load.others_share if d.verdict.load else None,
                "explanations": list(d.verdict.explanations), "advice": list(d.verdict.advice)}
               for d in decisions]
        print(json.dumps(_finite(out), indent=2, default=str))
        return
    for d in decisions:
        print(d.summary_line())
        for text in d.verdict.explanations:
            print(f"    - {text}")
        if d.verdict.advice:
            noisy = {"noisy", "uncertain"} & set(d.verdict.reasons)
            print("    too noisy to decide; fixes, in order:" if noisy else "    what to do:")
            for text in d.verdict.advice:
                print(f"      * {text}")


def main(argv=None, prog: str = "compileiq validate") -> int:
    parser = build_parser(prog)
    args = parser.parse_args(argv)
    if args.self_test:
        from .selftest import run
        return EXIT_ERROR if run() else EXIT_KEPT
    try:
        base, cands = _candidates(args)
        if not args.quiet:
            print(f"validating {len(cands)} candidate(s) against {base.command!r}: {args.warmup} warm-up + "
                  f"{args.trials} trials each, interleaved", file=sys.stderr)
        decisions = validate(base, cands, problem_type=args.problem_type, trials=args.trials, warmup=args.warmup,
                             spread_rule=args.spread_rule, noise_rule=args.noise_rule, min_speedup=args.min_speedup,
                             max_trials=args.max_trials, device=None if args.device == "auto" else args.device,
                             output=args.output, input_shape=args.input_shape, framework=args.framework,
                             progress=_progress(args.quiet))
    except (CompileIQError, ValueError, OSError, ImportError) as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print(f"{prog}: interrupted; nothing was decided", file=sys.stderr)
        return 130
    _report(decisions, args.json)
    if args.output and not args.json:
        print(f"decision log: {args.output}")
    return exit_status(decisions)
