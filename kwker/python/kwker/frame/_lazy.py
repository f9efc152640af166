"""Imports of the dataframe libraries, done on first use so `import kwker.frame` stays cheap
(the contract's lazy import, kwker._integrations.Integration.require)."""
import sys

from ._integration import INTEGRATION

INSTALL = INTEGRATION.install_command

# The module `name`, or an ImportError that says what needed it and how to install it (an
# already imported module comes straight from sys.modules, without import_module's lock).
require = INTEGRATION.require


def loaded(name):
    """The module if the caller's program already imported it, else None (never imports)."""
    return sys.modules.get(name)
