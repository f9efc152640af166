"""kwker.frame.install(): a `kwker` accessor on pandas DataFrame/Series and a `kwker`
namespace on Polars DataFrame/LazyFrame/Series. pandas' and Polars' own methods are untouched.

install() goes through the integration contract (_integration.py). With KWKER_DISABLE=1 it
returns False and installs nothing of Kwker's: the accessor names are still registered (so that
code written against them runs, as the contract's rule for KWKER_DISABLE asks), and they call
the library's own sort, as every kwker.frame function then does.
"""
import threading

from kwker import _integrations

from . import _lazy
from ._integration import INTEGRATION

NAME = "kwker"
_lock = threading.Lock()
_registered = {}          # (library, class name) -> class the accessor was added to


class _PandasAccessor:
    def __init__(self, obj):
        self._obj = obj

    def sort_values(self, *args, **kw):
        from ._pandas import sort_values
        return sort_values(self._obj, *args, **kw)

    def arg_sort(self, *args, **kw):
        from ._pandas import arg_sort
        return arg_sort(self._obj, *args, **kw)

    def sort_index(self, **kw):
        from ._pandas import sort_index
        return sort_index(self._obj, **kw)


class _PolarsNamespace:
    def __init__(self, obj):
        self._obj = obj

    def sort(self, by=None, **kw):
        from ._polars import sort
        return sort(self._obj, by, **kw)


def register_names():
    """Adds the accessor names to whichever of pandas / Polars is importable (idempotent)."""
    with _lock:
        pd = _try("pandas")
        if pd is not None:
            for cls, reg in ((pd.DataFrame, pd.api.extensions.register_dataframe_accessor),
                             (pd.Series, pd.api.extensions.register_series_accessor)):
                if ("pandas", cls.__name__) not in _registered:
                    _guard(cls, "pandas")
                    reg(NAME)(_PandasAccessor)
                    _registered[("pandas", cls.__name__)] = cls
        pl = _try("polars")
        if pl is not None:
            for cls, reg in ((pl.DataFrame, pl.api.register_dataframe_namespace),
                             (pl.LazyFrame, pl.api.register_lazyframe_namespace),
                             (pl.Series, pl.api.register_series_namespace)):
                if ("polars", cls.__name__) not in _registered:
                    _guard(cls, "polars")
                    reg(NAME)(_PolarsNamespace)
                    _registered[("polars", cls.__name__)] = cls
        if not _registered:
            _lazy.require("pandas", "kwker.frame.install()")   # neither: say how to install


def _guard(cls, lib):
    if NAME in vars(cls):
        raise RuntimeError(f"kwker.frame.install: {lib}.{cls.__name__} already has an attribute "
                           f"{NAME!r} that Kwker did not add; uninstall whatever added it first")


def _try(name):
    try:
        return _lazy.require(name, "kwker.frame.install()")
    except ImportError:
        return None


def remove_names():
    with _lock:
        for (lib, _), cls in list(_registered.items()):
            if NAME in vars(cls):
                delattr(cls, NAME)
            accessors = getattr(cls, "_accessors", None)
            if isinstance(accessors, set):
                accessors.discard(NAME)
        _registered.clear()


def install():
    """Registers df.kwker.* on pandas and Polars; returns True when Kwker sorts through them
    (False with KWKER_DISABLE=1, where they call the library's own sort)."""
    _integrations.disabled()             # an invalid KWKER_DISABLE fails before any change
    with INTEGRATION.locked():           # no other thread's install / uninstall in between
        if not INTEGRATION.install():
            register_names()             # names only: they run the library's own sort
            return False
        return True


def uninstall():
    """Removes the accessors (pandas' and Polars' own methods were never changed)."""
    with INTEGRATION.locked():
        INTEGRATION.uninstall()
        remove_names()


def registered():
    with _lock:
        return sorted(f"{lib}.{name}.{NAME}" for lib, name in _registered)
