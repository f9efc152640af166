"""The frame integration's state for `python -m kwker doctor` (registered with
kwker._warnings.register_status); reading it imports no dataframe library."""
import importlib.metadata as md

from kwker import _integrations, _warnings

from . import _accessors, _lazy

_LIBS = ("pandas", "polars", "pyarrow", "dask", "distributed")


def status():
    """{"installed", "disabled_by_env", "accessors", "libraries": {name: version or None},
    "imported": [libraries this process has imported]}."""
    out = dict(_integrations.status().get("frame", {"installed": False}))
    out["disabled_by_env"] = _integrations._disabled_quietly()
    out["accessors"] = _accessors.registered()
    libs = {}
    for name in _LIBS:
        try:
            libs[name] = md.version(name)
        except md.PackageNotFoundError:
            libs[name] = None
    out["libraries"] = libs
    out["missing"] = [n for n in _LIBS if libs[n] is None]
    out["install_command"] = _lazy.INSTALL if out["missing"] else None
    out["imported"] = [n for n in _LIBS if _lazy.loaded(n) is not None]
    out["sorts_with"] = ("the libraries' own sorts (KWKER_DISABLE=1)" if out["disabled_by_env"]
                         else "Kwker")
    return out


_warnings.register_status("frame", status)
