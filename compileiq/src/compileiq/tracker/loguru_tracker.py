"""LoguruTracker: the search as loguru records, in our own sinks only.

NVIDIA's tracker calls ``logger.remove()``, which also removes every sink the user's program had
added, and then logs through the global logger. Ours logs through a logger of its own (its own
handler set, built like loguru's ``bind`` builds loggers), so the tracker's records never reach the
user's sinks (loguru's default stderr sink would print a line per candidate) and the user's
records never reach the tracker's files. If that ever fails with a future loguru, the tracker falls
back to the global logger with sinks filtered to its own records.
"""

from __future__ import annotations

import itertools
import sys

from .base import BaseTracker

_runs = itertools.count()


def _loguru():
    try:
        from loguru import logger
    except ImportError as exc:  # pragma: no cover - loguru is a dependency of the tracker extra
        raise ImportError("LoguruTrackerConfig needs loguru: pip install loguru") from exc
    try:
        from loguru._logger import Core, Logger
        return Logger(Core(), *logger._options)  # no handlers: only the ones this tracker adds
    except Exception:  # pragma: no cover - a loguru whose internals changed
        return logger


def _is_console(sink) -> bool:
    return sink is None or sink in (sys.stdout, sys.stderr) or getattr(sink, "isatty", lambda: False)()


class LoguruTracker(BaseTracker):
    def setup(self, **kwargs) -> None:
        self._logger = _loguru()
        self._run = f"ciq-{next(_runs)}"
        self._ids: list[int] = []
        cfg = self.tracker_config
        extra = {k: v for k, v in (cfg.model_extra or {}).items()}
        sinks = cfg.sink if isinstance(cfg.sink, list) else [cfg.sink]  # e.g. a config made by model_construct
        for sink in sinks:
            console = _is_console(sink)
            show = cfg.log_candidates if cfg.log_candidates is not None else not console
            self._ids.append(self._logger.add(
                sys.stderr if sink is None else sink, level=cfg.level, format=cfg.format, enqueue=cfg.enqueue,
                filter=self._filter(show), **extra))
        self.log = self._logger.bind(ciq_run=self._run, task_id="search")

    def _filter(self, candidates: bool):
        run = self._run

        def keep(record) -> bool:
            x = record["extra"]
            return x.get("ciq_run") == run and (candidates or not x.get("ciq_candidate"))
        return keep

    def cleanup(self, **kwargs) -> None:
        for i in self._ids:
            try:
                self._logger.remove(i)  # flushes an enqueued sink
            except ValueError:
                pass
        self._ids = []

    def search_starts(self, **kwargs) -> None:
        cfg = kwargs.get("search_config") or {}
        self.log.info("search started: {} generations x {} candidates, {} objective(s), {}", cfg.get("generations"),
                      cfg.get("pool_size"), cfg.get("num_objectives"), cfg.get("problem_type"))

    def search_ends(self, **kwargs) -> None:
        self.log.success("search ended: {} candidates evaluated, {} failed", kwargs.get("evaluated"), kwargs.get("failed"))

    def generation_starts(self, generation_number: int, **kwargs) -> None:
        self.log.debug("generation {} started", generation_number)

    def generation_ends(self, generation_number: int, **kwargs) -> None:
        scores = kwargs.get("scores") or []
        ok = [s for s in scores if not s.invalid]
        best = ""
        if ok and kwargs.get("num_objectives", 1) == 1:
            vals = [s.score for s in ok]
            best = f"; scores {min(vals):.6g} .. {max(vals):.6g}"
        self.log.info("generation {}: {} candidates, {} valid{}", generation_number, len(scores), len(ok), best)

    def pre_objective(self, config, **kwargs) -> None:
        self._params = config  # logged with its score in post_objective: one line per candidate

    def post_objective(self, scores, **kwargs) -> None:
        tag = "baseline" if kwargs.get("baseline") else f"candidate {kwargs.get('param_id')}"
        self.log.bind(ciq_candidate=True, task_id=kwargs.get("param_id")).info(
            "{} (generation {}): {!r} -> score {}{}", tag, kwargs.get("generation"), getattr(self, "_params", None),
            scores, " FAILED" if kwargs.get("failed") else "")


__all__ = ["LoguruTracker"]
