"""Where measurements come from: a Python callable or a shell command whose output a regex reads.

A source is called once per trial and returns one float. A trial that yields no number raises
NoScore, carrying what the user needs to see (the command, its exit status, a piece of its output),
so that the runner can refuse with a useful message when most trials fail.
"""

from __future__ import annotations

import math
import os
import re
import subprocess
from dataclasses import dataclass
from typing import Any, Callable
from ..utils.proc import run as run_tree

# A number as benchmarks print it: 12, -3.5, .25, 1e-3, 4.2E+06
NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_NUMBER_RE = re.compile(NUMBER)
SAMPLE_CHARS = 600  # how much of a failing command's output an error message shows


class NoScore(Exception):
    """One trial produced no number; ``kind`` is why: exception, bad-value, exit-status, no-match, timeout."""

    def __init__(self, kind: str, message: str, output: str = ""):
        super().__init__(message)
        self.kind = kind
        self.output = output


def as_score(value: Any, where: str) -> float:
    """Turn what a measurement returned into a finite float, or raise NoScore saying what came back."""
    if isinstance(value, bool) or value is None:
        raise NoScore("bad-value", f"{where} returned {value!r}, not a number")
    if isinstance(value, str) and value.strip() == "*":
        raise NoScore("bad-value", f"{where} returned INVALID_SCORE ('*')")
    if isinstance(value, (tuple, list)) and len(value) == 1:
        value = value[0]  # a 1-tuple is a common slip; the number inside is still the measurement
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise NoScore("bad-value", f"{where} returned {value!r} ({type(value).__name__}); "
                      "return one number per call (e.g. the time in ms)") from None
    if not math.isfinite(x):
        raise NoScore("bad-value", f"{where} returned {x}, not a finite number")
    return x


def parse_score(text: str, score_regex: str | re.Pattern | None) -> float | None:
    """The score in a command's output: the first match's first group (or the whole match) of
    ``score_regex``; without a regex, the last number printed (benchmarks print the result last)."""
    if score_regex is None:
        found = _NUMBER_RE.findall(text)
        return float(found[-1]) if found else None
    rx = re.compile(score_regex) if isinstance(score_regex, str) else score_regex
    m = rx.search(text)
    if m is None:
        return None
    raw = m.group(1) if rx.groups else m.group(0)
    if raw is None:
        return None
    num = _NUMBER_RE.search(raw.replace(",", ""))
    return float(num.group(0)) if num else None


def compile_regex(score_regex: str | None) -> re.Pattern | None:
    if score_regex is None:
        return None
    try:
        return re.compile(score_regex)
    except re.error as e:
        raise ValueError(f"score regex {score_regex!r} is not a valid Python regular expression ({e}); "
                         "example: --score-regex 'time: ([0-9.]+) ms' (the first group is the score)") from None


@dataclass
class CommandMeasure:
    """Run ``command`` in a shell and read the score from its output with ``score_regex``.

    stdout is searched first, then stderr (ptxas and many tools report on stderr). A non-zero exit
    status counts as no score: a crashed benchmark's output is not a measurement."""

    command: str
    score_regex: str | re.Pattern | None = None
    timeout: float | None = None
    env: dict[str, str] | None = None
    cwd: str | os.PathLike | None = None

    def __post_init__(self):
        if isinstance(self.score_regex, str):
            self.score_regex = compile_regex(self.score_regex)

    def __call__(self) -> float:
        env = None if self.env is None else {**os.environ, **self.env}
        try:
            proc = run_tree(self.command, shell=True, text=True, errors="replace", timeout=self.timeout, env=env,
                            cwd=self.cwd)
        except subprocess.TimeoutExpired as e:
            out = _text(e.stdout) + _text(e.stderr)
            raise NoScore("timeout", f"`{self.command}` ran longer than {self.timeout:g} s", out) from None
        out = proc.stdout.rstrip("\n") + ("\n" + proc.stderr if proc.stderr else "")
        if proc.returncode != 0:
            raise NoScore("exit-status", f"`{self.command}` exited with status {proc.returncode}", out)
        for stream in (proc.stdout, proc.stderr):
            score = parse_score(stream, self.score_regex)
            if score is not None and math.isfinite(score):
                return score
        pattern = self.score_regex.pattern if self.score_regex is not None else "<last number printed>"
        raise NoScore("no-match", f"the score regex {pattern!r} matched no number in the output of `{self.command}`",
                      out)


def _text(b: bytes | str | None) -> str:
    if b is None:
        return ""
    return b if isinstance(b, str) else b.decode(errors="replace")


@dataclass
class CallableMeasure:
    """Call ``fn()`` (or ``fn(params)`` when params is set) and check it returned one number."""

    fn: Callable[..., Any]
    params: Any = None
    pass_params: bool = False

    def __call__(self) -> float:
        where = getattr(self.fn, "__qualname__", None) or repr(self.fn)
        try:
            value = self.fn(self.params) if self.pass_params else self.fn()
        except Exception as e:  # the user's benchmark failing is data for the refusal rule, not a crash
            raise NoScore("exception", f"{where}() raised {type(e).__name__}: {e}") from e
        return as_score(value, f"{where}()")
