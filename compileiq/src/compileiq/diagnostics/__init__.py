"""Diagnostics of a finished (or running) search from its results CSV: per-generation tables,
pathology flags with advice, and plots (``compileiq.diagnostics.plot``, needs matplotlib)."""

from .load import ResultsFileError, read_results
from .report import CODES, HEALTHY, Flag, ObjectiveTable, Report, diagnose
from .table import generation_table

__all__ = ["diagnose", "Report", "Flag", "ObjectiveTable", "ResultsFileError", "read_results", "generation_table",
           "CODES", "HEALTHY"]
