"""Whether kwker.frame runs Kwker or the library's own sort: KWKER_DISABLE=1 (read by
kwker._integrations, the one place that reads it) makes every entry point call pandas' /
Polars' / Dask's own sort, so `python -m kwker audit` compares Kwker with the library."""
from ._integration import INTEGRATION


def off():
    return INTEGRATION.off("kwker.frame and the df.kwker accessors call the libraries' own sorts")
