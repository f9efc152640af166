"""Imports of the dataframe libraries, done on first use so `import kwker.frame` stays cheap
(the contract's lazy import, kwker._integrations.Integration.require)."""
import sys

from ._integration import INTEGRATION

INSTALL = INTEGRATION.install_command


def require(name, why):
    """The module `name`, or an ImportError that says what needed it and how to install it."""
    mod = sys.modules.get(name)       # already imported: skip the call (~2 us a sort)
    if mod is not None:
        return mod
    return INTEGRATION.require(name, why)


def loaded(name):
    """The module if the caller's program already imported it, else None (never imports)."""
    return sys.modules.get(name)
