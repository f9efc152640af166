"""Results of a search: ``SearchResult`` and the atomic results-CSV reader/writer."""

from .csv_io import column_order, norm_columns, read_csv, score_columns, write_csv
from .search_result import SearchResult, calculate_pareto_front

__all__ = ["SearchResult", "calculate_pareto_front", "read_csv", "write_csv", "score_columns", "norm_columns",
           "column_order"]
