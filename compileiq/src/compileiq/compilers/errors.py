"""CompileError: a compiler run that failed, with a one-line summary and the full output kept apart.

The worker puts ``log_text`` into the run log only and shows ``str(exc)`` on the console, so a
search with hundreds of rejected candidates prints one line per failure, never pages of ptxas
diagnostics.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Sequence

from ..errors import CompileIQError

_ERROR_LINE = re.compile(r"\b(error|fatal)\b", re.IGNORECASE)
_MAX_SUMMARY = 240


def first_error_line(*texts: str) -> str:
    """The first line that says error/fatal, else the first non-empty line, whitespace collapsed."""
    lines = [ln.strip() for t in texts if t for ln in t.splitlines() if ln.strip()]
    pick = next((ln for ln in lines if _ERROR_LINE.search(ln)), lines[0] if lines else "")
    pick = " ".join(pick.split())
    return pick if len(pick) <= _MAX_SUMMARY else pick[: _MAX_SUMMARY - 3] + "..."


def format_log(command: Sequence[str], returncode: int | None, stdout: str, stderr: str, note: str = "") -> str:
    """The text a run log keeps for one compiler invocation."""
    parts = [f"command: {' '.join(map(str, command))}",
             f"exit code: {returncode if returncode is not None else 'none (killed)'}"]
    if note:
        parts.append(note)
    parts.append("--- stderr ---\n" + (stderr.rstrip() or "(empty)"))
    parts.append("--- stdout ---\n" + (stdout.rstrip() or "(empty)"))
    return "\n".join(parts)


class CompileError(CompileIQError, RuntimeError):
    """A compile that failed: ``str()`` is one line; ``log_text`` holds the compiler's full output.

    Attributes: ``compiler`` (ptxas, nvcc, gcc, clang), ``returncode`` (None when the compile was
    killed by the timeout), ``command`` (list of arguments), ``stdout``, ``stderr``, ``timed_out``.
    """

    def __init__(self, compiler: str, command: Sequence[str], returncode: int | None, stdout: str = "",
                 stderr: str = "", source: str | Path | None = None, timed_out: bool = False,
                 timeout: float | None = None):
        self.compiler = compiler
        self.command = [str(c) for c in command]
        self.returncode = returncode
        self.stdout = stdout or ""
        self.stderr = stderr or ""
        self.source = str(source) if source is not None else None
        self.timed_out = timed_out
        self.timeout = timeout
        where = f" compiling {Path(self.source).name}" if self.source else ""
        if timed_out:
            head = f"{compiler} timed out after {timeout:g} s{where}"
            note = f"killed after {timeout:g} s (raise the timeout= argument if the candidate is only slow)"
        else:
            head = f"{compiler} failed (exit {returncode}){where}"
            note = ""
        first = first_error_line(self.stderr, self.stdout)
        summary = f"{head}: {first}" if first else head
        self.log_text = format_log(self.command, returncode, self.stdout, self.stderr, note)
        super().__init__(f"{summary} (full compiler output in the run log)")

    def __reduce__(self):
        # the default pickling would call __init__ with the message only; workers may send it home
        return (_rebuild, (self.compiler, self.command, self.returncode, self.stdout, self.stderr, self.source,
                           self.timed_out, self.timeout))


def _rebuild(*args) -> CompileError:
    return CompileError(*args)


__all__ = ["CompileError", "first_error_line", "format_log"]
