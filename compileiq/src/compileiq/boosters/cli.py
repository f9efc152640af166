"""``compileiq pack``: list, show, verify, build and try booster packs.

    compileiq pack list
    compileiq pack verify helion-booster-pack.zip
    compileiq pack manifest my-pack/ --pack-id my-pack --compiler ptxas --version 13.3.0
    compileiq pack zip my-pack/ my-pack.zip
    compileiq pack try debug-pack-gcc --module mybench:objective --trials 10

Exit status: 0 success (for ``try``: at least one configuration KEPT), 1 a pack that does not
verify (or ``try`` keeping nothing), 2 bad arguments or input.
"""

from __future__ import annotations

import argparse
import sys

from ..errors import CompileIQError
from .build import write_pack_manifest, zip_pack
from .builtin import list_packs
from .objective_ref import ObjectiveRefError, load_objective
from .pack import PackVerifyError, load_pack
from .trial import TRIALS, WARMUP, try_pack

EXIT_OK, EXIT_BAD_PACK, EXIT_ERROR = 0, 1, 2


def build_parser(prog: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description="Booster packs: zips or folders of controls files with a "
                                "booster-pack-manifest.json (NVIDIA's schema).")
    sub = p.add_subparsers(dest="action", metavar="action")
    sub.add_parser("list", help="the built-in packs")
    s = sub.add_parser("show", help="a pack's manifest and configurations (verified first)")
    s.add_argument("pack", help="zip, folder or built-in pack id")
    v = sub.add_parser("verify", help="check every file's size and sha256 against the manifest")
    v.add_argument("pack", help="zip, folder or built-in pack id")
    m = sub.add_parser("manifest", help="write booster-pack-manifest.json for a folder of controls files")
    m.add_argument("folder")
    m.add_argument("--pack-id", required=True)
    m.add_argument("--compiler", required=True, help="controls_stage: ptxas, nvcc, gcc or clang")
    m.add_argument("--version", required=True, help="CUDA version (ptxas/nvcc) or compiler version (gcc/clang)")
    m.add_argument("--type", dest="pack_type", choices=("performance", "diagnostic"), default="performance")
    m.add_argument("--display-name", default="")
    m.add_argument("--description", default="")
    z = sub.add_parser("zip", help="zip a verified pack folder")
    z.add_argument("folder")
    z.add_argument("dest")
    t = sub.add_parser("try", help="evaluate every configuration through an objective and keep those that validate")
    t.add_argument("pack", help="zip, folder or built-in pack id")
    t.add_argument("--module", required=True, metavar="MODULE:FUNC", help="the objective, e.g. mybench:objective")
    t.add_argument("--trials", type=int, default=TRIALS,
                   help=f"measured runs per side (default {TRIALS}: screening; ship decisions need 100)")
    t.add_argument("--warmup", type=int, default=WARMUP, help=f"discarded runs per side (default {WARMUP}; ship: 50)")
    t.add_argument("--problem-type", choices=("min", "max"), default="min")
    t.add_argument("--output", metavar="CSV", help="append one decision row per configuration to this CSV")
    return p


def _run(args) -> int:
    if args.action == "list":
        for pack in list_packs():
            print(pack.summary())
        return EXIT_OK
    if args.action == "show":
        print(load_pack(args.pack).summary())
        return EXIT_OK
    if args.action == "verify":
        pack = load_pack(args.pack)
        print(f"{pack.source}: OK, {len(pack.files)} files match {pack.pack_id}'s manifest (size and sha256)")
        return EXIT_OK
    if args.action == "manifest":
        dest = write_pack_manifest(args.folder, pack_id=args.pack_id, controls_stage=args.compiler,
                                   version=args.version, pack_type=args.pack_type, display_name=args.display_name,
                                   description=args.description)
        print(f"wrote {dest}")
        return EXIT_OK
    if args.action == "zip":
        print(f"wrote {zip_pack(args.folder, args.dest)}")
        return EXIT_OK
    result = try_pack(load_objective(args.module), args.pack, problem_type=args.problem_type, trials=args.trials,
                      warmup=args.warmup, output=args.output)
    print(result.report())
    return EXIT_OK if result.kept else EXIT_BAD_PACK


def main(argv=None, prog: str = "compileiq pack") -> int:
    parser = build_parser(prog)
    args = parser.parse_args(argv)
    if not args.action:
        parser.print_help()
        return EXIT_ERROR
    try:
        return _run(args)
    except PackVerifyError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return EXIT_BAD_PACK
    except (CompileIQError, ObjectiveRefError, OSError, KeyError, ValueError) as exc:
        msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"{prog}: error: {msg}", file=sys.stderr)
        return EXIT_ERROR


if __name__ == "__main__":
    raise SystemExit(main())
