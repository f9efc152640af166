"""What Search checks while it runs, beyond the scores themselves.

* Compiler drift (compilers/drift.py): the compilers of the search space, plus any named with
  ``Search(watch_compilers=...)``, are hashed when the run starts and their file status checked
  after every batch; ``on_compiler_change="stop"`` (default) ends the run with CompilerChangedError,
  ``"warn"`` warns once and goes on. Every result row records the compilers it was measured with.
* Identical scores: once the first generation is scored, every valid candidate having the same
  score means the candidates are not reaching the build; say so then, not only in ``diagnose``.
"""

from __future__ import annotations

import warnings

from .errors import CompilerChangedError, CompilerChangedWarning, ConfigurationError, IdenticalScoresWarning

POLICIES = ("stop", "warn")

IDENTICAL_ADVICE = (
    "the candidates are probably not reaching the build: a framework cache serving a stale binary "
    "(Triton: TRITON_ALWAYS_COMPILE=1 and a fresh TRITON_CACHE_DIR per evaluation; Helion: HELION_SKIP_CACHE=1; "
    "FlashInfer: no flashinfer_cubin / flashinfer_jit_cache packages; raw builds: a clean build folder per "
    "candidate), or an objective that ignores its config. Check with the O0/O3 canary: "
    "compileiq.boosters.canary(objective) or `python -m compileiq canary --help`")


class RunChecks:
    def __init__(self, search_space, watch_compilers=(), on_compiler_change: str = "stop"):
        if on_compiler_change not in POLICIES:
            raise ConfigurationError(f"on_compiler_change={on_compiler_change!r} must be 'stop' (end the run when the "
                                     "compiler binary changes) or 'warn' (go on, with a warning)")
        self.policy = on_compiler_change
        self._space = search_space
        self._extra = tuple(watch_compilers or ())
        self.watch = None
        self._warned = False
        self.identical_checked = False

    def start(self) -> None:
        """Hash the compilers (once per run)."""
        if self.watch is None:
            from .compilers.drift import CompilerWatch, toolchains_of
            self.watch = CompilerWatch(toolchains_of(self._space, self._extra))

    def metadata(self) -> dict:
        return self.watch.metadata() if self.watch else {}

    def after_batch(self, on_stop=None) -> None:
        """Stat the compilers; on a change, stop (after ``on_stop()``, e.g. writing the CSV) or warn once."""
        if not self.watch:
            return
        changes = self.watch.check()
        if not changes:
            return
        text = ("the compiler changed during the search, so the scores before and after the change are not "
                "comparable: " + "; ".join(changes))
        if self.policy == "stop":
            if on_stop is not None:
                on_stop()
            raise CompilerChangedError(text + ". Start a new search (or a new results file) with the compiler you "
                                       "want to tune for; pass on_compiler_change='warn' to go on regardless")
        if not self._warned:
            self._warned = True
            warnings.warn(text + " (on_compiler_change='warn': the search goes on; `compileiq diagnose` reports "
                          "the change from the CSV)", CompilerChangedWarning, stacklevel=3)

    def first_generation(self, scores) -> None:
        """Warn when every valid candidate of the first generation scored exactly the same."""
        if self.identical_checked:
            return
        self.identical_checked = True
        from .diagnostics.rules import MIN_ROWS_IDENTICAL
        valid = [s.values() for s in scores if not s.invalid and not s.is_baseline]
        if len(valid) >= MIN_ROWS_IDENTICAL and all(v == valid[0] for v in valid):
            shown = valid[0][0] if len(valid[0]) == 1 else valid[0]
            warnings.warn(f"all {len(valid)} valid candidates of the first generation scored {shown}: " + IDENTICAL_ADVICE,
                          IdenticalScoresWarning, stacklevel=3)
