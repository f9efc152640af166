"""``compileiq profile``: why is the candidate faster? Compare two builds of a kernel.

    compileiq profile --baseline base.cubin --candidate cand.cubin
    compileiq profile --ptx kernel.ptx --candidate-controls best.ctl [--baseline-controls a.ctl]
    compileiq profile --ptx kernel.ptx --candidate-controls best.ctl --run 'python bench.py --cubin {cubin}'

Exit status: 0 compared, 1 a tool failed (compiler, cuobjdump, ncu), 2 bad input.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from ..compilers import CompileError, CompilerNotFoundError
from ..compilers.sass import SassToolError
from ..errors import CompileIQError
from .builds import ProfileInputError, make_build
from .ncu import NcuError, expand, find_ncu, run_ncu
from .report import compare, format_text
from .sass_mix import functions

EXIT_OK, EXIT_TOOL, EXIT_INPUT = 0, 1, 2
NCU_WHERE = "CIQ_NCU, PATH, $CUDA_HOME/bin, /usr/local/cuda/bin, /opt/nvidia/nsight-compute/*"


def build_parser(prog: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=prog, description="Compare two builds of a kernel: registers, stack, spills, shared memory, the SASS "
        "instruction mix, and Nsight Compute metrics when ncu is installed and --run is given.",
        epilog="Exit status: 0 = compared, 1 = a tool failed, 2 = bad input.")
    p.add_argument("--baseline", metavar="FILE", help="baseline build: a cubin, a fatbin, PTX or a .cu file")
    p.add_argument("--candidate", metavar="FILE", help="candidate build: a cubin, a fatbin, PTX or a .cu file")
    p.add_argument("--ptx", metavar="FILE", help="one PTX (or .cu) file compiled twice, with each side's controls")
    p.add_argument("--baseline-controls", metavar="CTL", help="controls file (open or ACF) for the baseline compile")
    p.add_argument("--candidate-controls", metavar="CTL", help="controls file (open or ACF) for the candidate compile")
    p.add_argument("--arch", default="sm_90", help="target of the compiles (default sm_90)")
    p.add_argument("--kernel", metavar="NAME", help="compare one kernel (default: every function of the build)")
    p.add_argument("--top", type=int, default=12, help="opcodes to list (default 12; 0 lists every change)")
    p.add_argument("--full-opcodes", action="store_true", help="keep opcode modifiers (LDG.E.128, not LDG)")
    p.add_argument("--run", metavar="CMD", help="command that launches the kernel, with {cubin} (and {controls}) "
                   "where the build goes; run under ncu for each build")
    p.add_argument("--baseline-run", metavar="CMD", help="run command for the baseline only (default --run)")
    p.add_argument("--candidate-run", metavar="CMD", help="run command for the candidate only (default --run)")
    p.add_argument("--ncu", metavar="PATH", help=f"ncu binary (default: {NCU_WHERE})")
    p.add_argument("--timeout", type=float, default=600, help="seconds per compile or ncu run (default 600)")
    p.add_argument("--out-dir", metavar="DIR", help="keep the compiled cubins here (default: a temporary folder)")
    p.add_argument("--json", action="store_true", help="print the comparison as JSON")
    return p


def _inputs(args) -> tuple[str, str]:
    if args.ptx:
        if args.baseline or args.candidate:
            raise ProfileInputError("give either --ptx (one source compiled with two controls files) or "
                                    "--baseline and --candidate (two builds), not both")
        return args.ptx, args.ptx
    if not (args.baseline and args.candidate):
        raise ProfileInputError("nothing to compare: give --baseline FILE --candidate FILE (cubins, PTX or .cu), "
                                "or --ptx FILE with --candidate-controls CTL")
    return args.baseline, args.candidate


def _runs(args) -> dict[str, str | None]:
    runs = {"baseline": args.baseline_run or args.run, "candidate": args.candidate_run or args.run}
    if any(runs.values()) and not all(runs.values()):
        missing = [k for k, v in runs.items() if not v][0]
        raise ProfileInputError(f"no run command for the {missing}: give --run, or both --baseline-run and "
                                "--candidate-run")
    for text in filter(None, runs.values()):
        expand(text, Path("x.cubin"), None)  # a quoting mistake is reported before anything is compiled
    return runs


def _ncu(args, comp, base, cand) -> int:
    runs = _runs(args)
    ncu = find_ncu(args.ncu)
    if not any(runs.values()):
        comp.ncu_note = ("not run: give --run 'CMD {cubin}' (the command that launches the kernel) to compare "
                         "runtime metrics" + ("" if ncu else f"; ncu is not installed here either ({NCU_WHERE})"))
        return EXIT_OK
    if ncu is None:
        comp.ncu_note = (f"skipped: ncu not found ({NCU_WHERE}{', --ncu ' + args.ncu if args.ncu else ''}); install "
                         "Nsight Compute (it ships with the CUDA toolkit) to add runtime metrics. Static comparison "
                         "only.")
        return EXIT_OK
    try:
        for side, build in (("baseline", base), ("candidate", cand)):
            run_args = expand(runs[side], build.cubin.resolve(), build.controls)
            comp.ncu[side] = run_ncu(ncu, run_args, kernel=args.kernel, timeout=args.timeout,
                                     env={"CIQ_PROFILE_CUBIN": str(build.cubin.resolve()), "CIQ_PROFILE_SIDE": side})
    except NcuError as exc:
        comp.ncu = {}
        comp.ncu_note = f"failed: {exc}"
        return EXIT_TOOL
    return EXIT_OK


def _profile(args, out_dir: Path) -> int:
    base_in, cand_in = _inputs(args)
    _runs(args)
    opts = dict(arch=args.arch, out_dir=out_dir, kernel=args.kernel, timeout=args.timeout)
    base = make_build("baseline", base_in, args.baseline_controls, **opts)
    cand = make_build("candidate", cand_in, args.candidate_controls, **opts)
    if args.kernel:
        for b in (base, cand):
            names = functions(b.sass) if b.sass is not None else None
            if names is not None and args.kernel not in names:
                raise ProfileInputError(f"--kernel {args.kernel}: {b.path} has no such function "
                                        f"(it has {', '.join(names) or 'none'})")
    comp = compare(base, cand, kernel=args.kernel, top=args.top, full=args.full_opcodes)
    rc = _ncu(args, comp, base, cand)
    print(json.dumps(comp.as_dict(), indent=2) if args.json else format_text(comp), end="" if not args.json else "\n")
    return rc


def main(argv=None, prog: str = "compileiq profile") -> int:
    args = build_parser(prog).parse_args(argv)
    try:
        if args.out_dir:
            out = Path(args.out_dir)
            out.mkdir(parents=True, exist_ok=True)
            return _profile(args, out)
        with tempfile.TemporaryDirectory(prefix="ciq-profile-") as d:
            return _profile(args, Path(d))
    except (ProfileInputError, FileNotFoundError, ValueError) as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except (CompileError, CompilerNotFoundError, SassToolError, CompileIQError, OSError,
            subprocess.TimeoutExpired) as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return EXIT_TOOL


if __name__ == "__main__":
    raise SystemExit(main())
