"""``python -m compileiq.boosters``: the same as ``compileiq pack``."""

from .cli import main

raise SystemExit(main(prog="python -m compileiq.boosters"))
