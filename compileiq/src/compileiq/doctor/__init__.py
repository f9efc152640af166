"""``compileiq doctor``: what this machine gives CompileIQ, and the cause and fix of every problem found."""

from .checks import collect
from .cli import main

__all__ = ["collect", "main"]
