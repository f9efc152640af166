"""Why every candidate of the first generation failed: the text SearchFailedError carries.

It groups the failures the way the compileiq-debug skill's symptom table does (return shape,
exceptions, timeouts, crashes) and ends with the first action for each group seen.
"""

from __future__ import annotations

import re
import tempfile
from collections import Counter

from .utils.validation import Score, format_rule


def _last_line(text: str) -> str:
    lines = [ln for ln in (text or "").strip().splitlines() if ln.strip()]
    for ln in reversed(lines):
        if not ln.startswith("hint:"):
            return ln.strip()
    return lines[-1].strip() if lines else "?"


_TMP = re.compile(re.escape(tempfile.gettempdir()) + r"/[^/\s'\"]+")
_HEX = re.compile(r"\b[0-9a-f]{16,}\b")


def _shape(message: str) -> str:
    """The message with per-candidate temporary paths and hex blobs masked, so equal causes group together."""
    return _HEX.sub("<hex>", _TMP.sub(tempfile.gettempdir() + "/<tmp>", message))


SHOWN = 3  # distinct causes quoted per kind; the rest are counted, so every failure is accounted for


def _top(counter: Counter) -> str:
    """The SHOWN most common entries with their counts, and "and N more (x M)" for the rest."""
    common = counter.most_common()
    text = "; ".join(f"{v} (x{n})" for v, n in common[:SHOWN])
    rest = common[SHOWN:]
    if rest:
        text += f"; and {len(rest)} more (x{sum(n for _, n in rest)})"
    return text


def first_generation_diagnosis(batch: list[Score], k: int, task_timeout, run, space=None) -> str:
    kinds = Counter(s.failure or "invalid" for s in batch)
    parts = [f"every candidate of the first generation ({len(batch)}) scored INVALID_SCORE "
             f"({', '.join(f'{n} {kind}' for kind, n in kinds.most_common())}), so the search cannot learn anything."]
    advice = []
    fmt = [s for s in batch if s.failure == "format"]
    if fmt:
        shapes = Counter(f"{type(s.raw).__name__} {s.raw!r}"[:80] for s in fmt)
        parts.append("Return values not in expected format: " + _top(shapes))
        advice.append(f"fix the return shape: {format_rule(k)}")
    exc = [s for s in batch if s.failure == "exception"]
    if exc:
        msgs = Counter(_shape(_last_line(s.error)) for s in exc)
        parts.append("Exceptions raised by the objective: " + _top(msgs))
        if any("fromhex" in (s.error or "") for s in exc):
            advice.append("replace the legacy bytes.fromhex(config) pattern with "
                          "compileiq.utils.helpers.save_compiler_config(path, config)")
        advice.append("call the objective by hand on Search.sample(1)[0] to see the full traceback")
    for comp in getattr(space, "components", ()):  # a compiler space knows its own failure modes
        diagnose = getattr(comp, "diagnose", None)
        if diagnose is not None:
            advice.extend(diagnose(batch) or ())
    tmo = [s for s in batch if s.failure == "timeout"]
    if tmo:
        parts.append(f"{len(tmo)} evaluation(s) exceeded task_timeout={task_timeout}s")
        advice.append("raise task_timeout above what one clean compile and run takes")
    crash = [s for s in batch if s.failure in ("crash", "heartbeat")]
    if crash:
        parts.append("Worker processes died: " + _top(Counter(_shape(_last_line(s.error)) for s in crash)))
        advice.append("run the objective in the parent (worker_type=SequentialWorker) to see where it crashes")
    inv = [s for s in batch if s.failure in ("invalid", "nonfinite", None)]
    if inv:
        parts.append(f"{len(inv)} candidate(s) returned INVALID_SCORE or NaN/inf themselves: check the objective's "
                     "correctness gate against the reference")
    if run is not None:
        where = run.log_path if run.keep else "the run log (set CIQ_KEEP_CACHE=1 to keep it)"
        parts.append(f"Full tracebacks: {where}.")
    parts.append("Next: " + "; ".join(dict.fromkeys(advice or ["call the objective by hand on Search.sample(1)[0]"])) +
                 ". Pass exit_on_failure=False to keep searching anyway.")
    return "\n".join(parts)
