"""``python -m compileiq.skills``: the same as ``compileiq skills``."""

from .cli import main

raise SystemExit(main(prog="python -m compileiq.skills"))
