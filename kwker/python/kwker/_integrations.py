"""The one switch for every integration: KWKER_DISABLE.

Every integration (torch operators, the torch.compile backend, dataframe accelerators, and any
future one) registers here, and its install() goes through Integration.install, the only place
that reads KWKER_DISABLE. With KWKER_DISABLE=1 every install() does nothing, so a program can
rule Kwker's integrations out without a code change.
"""
import os
import threading

ENV = "KWKER_DISABLE"
_VALID = {"": False, "0": False, "1": True}


def disabled():
    """True when KWKER_DISABLE=1. Read on every install() so a test may change it at run time."""
    value = os.environ.get(ENV, "")
    if value not in _VALID:
        raise ValueError(f"{ENV}={value!r} is not valid: set {ENV}=1 to make every Kwker "
                         f"install() a no-op, or {ENV}=0 (or unset it) to allow them")
    return _VALID[value]


class Integration:
    """A named integration with install/uninstall callables; state changes go through here.

    install(**options) passes its options to the integration's install callable (e.g.
    kwker.torch_ops.install(ops=...)). Installing again with the same options changes nothing;
    with other options the integration is uninstalled and installed again with the new ones,
    so a second call always leaves exactly what it asked for.
    """

    def __init__(self, name, install, uninstall):
        self.name = name
        self._install = install
        self._uninstall = uninstall
        self.installed = False
        self.options = None  # the options of the install in force
        self._lock = threading.Lock()

    def install(self, **options):
        """Installs unless KWKER_DISABLE=1; returns whether the integration is now installed."""
        with self._lock:
            if disabled():
                return False
            if self.installed and options == self.options:
                return True
            if self.installed:
                self._uninstall()
                self.installed, self.options = False, None
            self._install(**options)
            self.installed, self.options = True, dict(options)
            return True

    def uninstall(self):
        with self._lock:
            if self.installed:
                self._uninstall()
                self.installed, self.options = False, None

    def status(self):
        return {"installed": self.installed, "disabled_by_env": _disabled_quietly()}


def _disabled_quietly():
    try:
        return disabled()
    except ValueError:
        return None  # reported by install() and by doctor, never by a status query


_REGISTRY = {}
_REGISTRY_LOCK = threading.Lock()


def register(name, install, uninstall):
    """Registers (or returns the already registered) integration called `name`."""
    with _REGISTRY_LOCK:
        if name not in _REGISTRY:
            _REGISTRY[name] = Integration(name, install, uninstall)
        return _REGISTRY[name]


def status():
    """{name: {"installed": bool, "disabled_by_env": bool | None}} for every integration."""
    with _REGISTRY_LOCK:
        return {name: integ.status() for name, integ in sorted(_REGISTRY.items())}
