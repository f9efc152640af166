"""kwker.frame's declaration in the integration contract (kwker._integrations): the dataframe
libraries it needs (imported on first use), the pip extra that installs them, install() (the
df.kwker accessors), the KWKER_DISABLE gate its functions ask on every call, and what it
reports. Importing this module imports no dataframe library."""
from kwker import _integrations

LIBRARIES = ("pandas", "polars", "pyarrow", "dask", "distributed")


def _install():
    from . import _accessors
    _accessors.register_names()


def _uninstall():
    from . import _accessors
    _accessors.remove_names()


def _report():
    from . import _status
    return _status.report()


def _summary(s):
    return (f"sorts with {s['sorts_with']}; accessors: "
            f"{', '.join(s.get('accessors') or []) or 'none'}")


INTEGRATION = _integrations.register(
    "frame", _install, _uninstall, framework=LIBRARIES, extra="frame",
    packages={"dask.dataframe": "dask[dataframe]", "distributed": "dask[distributed]"},
    report=_report, summary=_summary)
