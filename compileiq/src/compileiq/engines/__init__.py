"""Search engines behind one interface (``Engine.ask`` / ``Engine.tell``): GA, NSGA-II, random, Optuna."""

from .base import ENGINE_NAMES, Engine, EngineSettings, dominates, make_engine

__all__ = ["Engine", "EngineSettings", "make_engine", "dominates", "ENGINE_NAMES"]
