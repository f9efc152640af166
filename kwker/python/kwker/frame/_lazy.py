"""Imports of the dataframe libraries, done on first use so `import kwker.frame` stays cheap."""
import importlib
import sys

INSTALL = 'pip install "kwker[frame]"'
_PACKAGES = {"pandas": "pandas", "polars": "polars", "pyarrow": "pyarrow",
             "dask.dataframe": "dask[dataframe]", "distributed": "dask[distributed]"}


def require(name, why):
    """The module `name`, or an ImportError that says what needed it and how to install it."""
    mod = sys.modules.get(name)       # already imported: skip import_module's lock (~2 us)
    if mod is not None:
        return mod
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        pkg = _PACKAGES.get(name, name)
        raise ImportError(f"kwker.frame: {why} needs {pkg}, which is not importable ({exc}). "
                          f"Install it with: {INSTALL} (or pip install \"{pkg}\")") from exc


def loaded(name):
    """The module if the caller's program already imported it, else None (never imports)."""
    return sys.modules.get(name)
