"""The frame integration's own fields for status() and the doctor (the contract adds the common
ones: kwker._integrations); reading them imports no dataframe library."""
from kwker import _integrations

from . import _accessors, _lazy
from ._integration import INTEGRATION, LIBRARIES


def report():
    """{"accessors", "libraries": {name: version or None}, "imported": [libraries this process
    has imported], "sorts_with"}."""
    libs = INTEGRATION.frameworks()
    return {
        "accessors": _accessors.registered(),
        "libraries": libs,
        "imported": [n for n in LIBRARIES if _lazy.loaded(n) is not None],
        "sorts_with": ("the libraries' own sorts (KWKER_DISABLE=1)"
                       if _integrations.disabled_quietly() else "Kwker"),
    }


def status():
    """{"name", "installed", "disabled_by_env", "framework", "missing", "install_command",
    "accessors", "libraries", "imported", "sorts_with", "summary"}."""
    return INTEGRATION.status()
