"""The two things every compile helper needs from its neighbours: which binary, and the controls arguments.

Both come from their owners (``discovery`` picks the binary, ``compileiq.controls`` turns a
controls file into arguments), so a helper, a search space and a setup check never disagree.
"""

from __future__ import annotations

import os

from .discovery import Toolchain, find_compiler, toolchain_at


def resolve(name: str, compiler=None) -> Toolchain:
    """``compiler`` as a Toolchain: None = the discovered one, a Toolchain as is, else a path to a binary."""
    if compiler is None:
        return find_compiler(name)
    if isinstance(compiler, Toolchain):
        return compiler
    return toolchain_at(name, os.fspath(compiler))


def controls_for(controls: str | os.PathLike | None, tool: Toolchain) -> list[str]:
    """The arguments that apply the controls file ``controls`` (open or vendor) with ``tool``."""
    if controls is None:
        return []
    from ..controls import controls_args  # imported late: controls imports compilers.discovery too
    return [str(a) for a in controls_args(controls, tool)]
