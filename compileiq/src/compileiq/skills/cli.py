"""``compileiq skills list|show|path|install``: the agent skills shipped with CompileIQ.

    python -m compileiq skills list
    python -m compileiq skills install ~/.claude/skills          # or any agent's skills folder
    python -m compileiq skills show compileiq-debug

Exit status: 0 success, 1 some skills were left alone (they differ; use --force), 2 bad input.
"""

from __future__ import annotations

import argparse
import os
import sys

from . import SkillError, front_matter, install, skill_names, skill_path, skill_text

EXIT_OK, EXIT_KEPT, EXIT_ERROR = 0, 1, 2


def build_parser(prog: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description="The agent skills shipped with CompileIQ (one SKILL.md each).",
                                epilog="Exit status: 0 = done, 1 = some skills left alone (use --force), 2 = bad input.")
    sub = p.add_subparsers(dest="action", metavar="action")
    sub.add_parser("list", help="every skill with its description")
    s = sub.add_parser("show", help="print a skill's SKILL.md")
    s.add_argument("name")
    w = sub.add_parser("path", help="print the folder of a skill inside the installed package")
    w.add_argument("name")
    i = sub.add_parser("install", help="copy the skills into DEST/<name>/SKILL.md")
    i.add_argument("dest", help="the agent's skills folder, e.g. ~/.claude/skills (created if missing)")
    i.add_argument("names", nargs="*", metavar="NAME", help="only these skills (default: all)")
    i.add_argument("--force", action="store_true", help="replace SKILL.md files that differ from the shipped ones")
    return p


def main(argv=None, prog: str = "compileiq skills") -> int:
    parser = build_parser(prog)
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["install"]:  # `install --force DEST NAME` too: argparse wants options after the names
        argv = [a for a in argv if a != "--force"] + ["--force"] * ("--force" in argv)
    args = parser.parse_args(argv)
    if not args.action:
        parser.print_help()
        return EXIT_ERROR
    try:
        if args.action == "list":
            for name in skill_names():
                print(f"{name}\n    {front_matter(name).description.split(' Triggers on ')[0]}")
        elif args.action == "show":
            sys.stdout.write(skill_text(args.name))
        elif args.action == "path":
            print(skill_path(args.name))
        else:
            for path in install(args.dest, args.names or None, overwrite=args.force):
                print(f"installed {path}")
    except BrokenPipeError:  # e.g. `compileiq skills list | head`
        sys.stdout = open(os.devnull, "w")
        return EXIT_OK
    except SkillError as exc:
        for path in exc.written:
            print(f"installed {path}")
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return EXIT_KEPT if exc.kept else EXIT_ERROR
    return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(main())
