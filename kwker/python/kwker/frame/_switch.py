"""Whether kwker.frame runs Kwker or the library's own sort: KWKER_DISABLE=1 (read by
kwker._integrations, the one place that reads it) makes every entry point call pandas' /
Polars' / Dask's own sort, so `python -m kwker audit` compares Kwker with the library."""
from kwker import _integrations


def off():
    return _integrations.disabled()
