"""Command line: python -m kwker doctor | audit | support-bundle | bench | sdk (also the
`kwker` console script)."""
import importlib.util
import json
import sys

USAGE = """usage: python -m kwker <command> [options]

commands:
  doctor [--json]   report version, backend, CPU, engines, threads, scratch and self-check
                    every engine this CPU runs (exit 1 when a self-check fails)
  audit [options] -- script.py [args]
                    run a script with Kwker and again with KWKER_DISABLE=1; report wall time,
                    CPU time, peak memory, exit status and whether the outputs agree
  support-bundle [--no-probe] [--all-packages] [-o DIR]
                    write kwker-support-<time>.tar.gz for a bug report (none of your data)
  bench [...]       run the benchmarks (kwker.bench)
  sdk [--json]      print where the C/C++ SDK lives: include dir, lib dir, CMake dir,
                    kwker-doctor
"""


def _sdk(argv):
    unknown = [a for a in argv if a != "--json"]
    if unknown:
        print(f"kwker sdk: unknown argument(s) {' '.join(unknown)}; usage: "
              "python -m kwker sdk [--json]", file=sys.stderr)
        return 2
    from kwker import _locate
    paths = _locate.sdk_paths()
    if "--json" in argv:
        print(json.dumps(paths, indent=2))
    else:
        print(f"include_dir  {paths['include_dir']}")
        print(f"lib_dir      {paths['lib_dir']}")
        print(f"cmake_dir    {paths['cmake_dir']}")
        print(f"kwker-doctor {paths['doctor']}")
    if paths["root"] is None:
        print("kwker sdk: libkwker was not found next to kwker._fast or under any sys.path "
              "entry; reinstall the wheel", file=sys.stderr)
        return 1
    return 0


def _bench(argv):
    if importlib.util.find_spec("kwker.bench") is None:
        print("kwker bench: the benchmark module kwker.bench is not part of this "
              "installation; install kwker from a build that includes kwker/bench",
              file=sys.stderr)
        return 2
    from kwker import bench
    return bench.main(argv)


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(USAGE)
        return 0 if argv else 2
    cmd, rest = argv[0], argv[1:]
    if cmd == "doctor":
        from kwker import _doctor
        return _doctor.main(rest)
    if cmd == "bench":
        return _bench(rest)
    if cmd == "audit":
        from kwker.tools import audit
        return audit.main(rest)
    if cmd == "support-bundle":
        from kwker.tools import support_bundle
        return support_bundle.main(rest)
    if cmd == "sdk":
        return _sdk(rest)
    print(f"kwker: unknown command {cmd!r}\n\n{USAGE}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
