"""``python -m compileiq.profile``: the same as ``compileiq profile``."""

from .cli import main

raise SystemExit(main(prog="python -m compileiq.profile"))
