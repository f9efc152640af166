"""The integration contract, and the one switch for every integration: KWKER_DISABLE.

Each integration (kwker.frame, kwker.torch_ops, kwker.dynamo, kwker.cpu_backend; tests add
their own) declares itself once with register(): its name, the framework modules it needs, the
pip extra that installs them, its install / uninstall callables and a report callable with what
it says about itself. The base supplies the rest, the same way for all of them:

    require(module, why)   the lazy import: the module, or ImportError naming what needed it
                           and the install command (pip install "kwker[<extra>]")
    install(**options)     the integration's install, through the KWKER_DISABLE gate (the only
                           place that reads it); installing again with other options first
                           uninstalls, so exactly what was asked for last is in force
    off(what)              the gate for entry points that are not install(): True under
                           KWKER_DISABLE=1, after the one notice
    notice                 under KWKER_DISABLE=1, one DisabledWarning per process and
                           integration, the first time it is used (nothing is printed)
    status()               {"name", "framework", "extra", "installed", "disabled_by_env", ...
                           the report}; also what `python -m kwker doctor` shows, one line each

Cache files go through kwker._cache.Store (one schema-checked envelope); each integration makes
the Store of its own files (folder, file prefix, schema name).

With KWKER_DISABLE=1 every entry point keeps working as if Kwker were absent: install() changes
nothing and returns False, the compile backend returns graphs unchanged, optimize() returns the
model unchanged, kwker.frame calls the library's own sort (and its accessors, registered as
names only, do too).
"""
import importlib
import importlib.metadata as md
import os
import sys
import threading
import warnings

ENV = "KWKER_DISABLE"
_VALID = {"": False, "0": False, "1": True}


class DisabledWarning(UserWarning):
    """KWKER_DISABLE=1 kept one of Kwker's integrations out of the way (once per process and
    integration). Silence it with warnings.filterwarnings("ignore", category=...)."""


def disabled():
    """True when KWKER_DISABLE=1. Read on every call so a test may change it at run time."""
    value = os.environ.get(ENV, "")
    if value not in _VALID:
        raise ValueError(f"{ENV}={value!r} is not valid: set {ENV}=1 to make every Kwker "
                         f"install() a no-op, or {ENV}=0 (or unset it) to allow them")
    return _VALID[value]


def disabled_quietly():
    """disabled(), or None when KWKER_DISABLE holds an invalid value (reported by install() and
    by the doctor, never by a status query)."""
    try:
        return disabled()
    except ValueError:
        return None


_noticed = set()   # integrations that gave their KWKER_DISABLE notice in this process


class Integration:
    """One integration's declaration and state; see the module docstring."""

    def __init__(self, name, install=None, uninstall=None, *, framework=(), extra=None,
                 extras=None, packages=None, report=None, summary=None):
        self.name = name
        self.framework = tuple(framework)      # module names, e.g. ("torch",)
        self.extra = extra                     # "kwker[<extra>]" installs the framework
        self.extras = dict(extras or {})       # module -> the extra that installs it, where
        #                                        it is not `extra` (torch: kwker[torch], pinned)
        self.packages = dict(packages or {})   # module -> pip name where they differ
        self._install = install
        self._uninstall = uninstall
        self._report = report
        self._summary = summary
        self.installed = False
        self.options = None  # the options of the install in force
        self._lock = threading.RLock()

    # -- lazy imports -------------------------------------------------------------------------

    @property
    def install_command(self):
        """The command that installs every framework module (None without an extra)."""
        return self._command(self.framework)

    def _command(self, modules):
        names = sorted({self.extras.get(m, self.extra) for m in modules} - {None})
        return f'pip install "kwker[{",".join(names)}]"' if names else None

    def require(self, module, why):
        """`module` imported (on first use), or ImportError saying what needed it and how to
        install it."""
        mod = sys.modules.get(module)     # already imported: skip import_module's lock
        if mod is not None:
            return mod
        try:
            return importlib.import_module(module)
        except ImportError as exc:
            pkg = self.packages.get(module, module.split(".")[0])
            cmd = self._command([module])
            how = f"{cmd} (or pip install \"{pkg}\")" if cmd else f'pip install "{pkg}"'
            raise ImportError(f"kwker.{self.name}: {why} needs {pkg}, which is not importable "
                              f"({exc}). Install it with: {how}") from exc

    # -- the KWKER_DISABLE gate ---------------------------------------------------------------

    def off(self, what):
        """True under KWKER_DISABLE=1 (after the once-per-process notice saying `what` happens
        instead); False otherwise. An invalid value raises ValueError with the fix."""
        if not disabled():
            return False
        self.notice(what)
        return True

    def notice(self, what):
        if self.name in _noticed:
            return
        # Marked once issued: under -W error every call raises, as that filter asks.
        warnings.warn(f"kwker.{self.name}: {ENV}=1 is set; {what}", DisabledWarning,
                      stacklevel=4)
        _noticed.add(self.name)

    # -- install / uninstall ------------------------------------------------------------------

    def install(self, **options):
        """Installs unless KWKER_DISABLE=1; returns whether the integration is now installed.
        When installing with new options fails, the install in force before is put back (and
        the error raised), so a failed call changes nothing."""
        with self._lock:
            if self.off("install() changes nothing"):
                return False
            if self.installed and options == self.options:
                return True
            previous = self.options if self.installed else None
            if self.installed:
                self.uninstall()
            try:
                if self._install is not None:
                    self._install(**options)
            except BaseException:
                if previous is not None and self._install is not None:
                    try:
                        self._install(**previous)
                        self.installed, self.options = True, previous
                    except Exception:
                        pass    # the first error is the one to report
                raise
            self.installed, self.options = True, dict(options)
            return True

    def locked(self):
        """The lock install() and uninstall() hold, for an integration's own changes that must
        not interleave with them."""
        return self._lock

    def uninstall(self):
        """Undoes install(). An integration without an uninstall callable has nothing
        process-wide to undo (a loaded library stays loaded): it is then only marked off."""
        with self._lock:
            if self.installed:
                if self._uninstall is not None:
                    self._uninstall()
                self.installed, self.options = False, None

    # -- what it reports ----------------------------------------------------------------------

    def frameworks(self):
        """{module: installed version or None}, read from package metadata (imports nothing)."""
        out = {}
        for module in self.framework:
            try:
                out[module] = md.version(module.split(".")[0])
            except md.PackageNotFoundError:
                out[module] = None
        return out

    def status(self):
        """The common fields, then the integration's own report (which imports no framework)."""
        fw = self.frameworks()
        missing = [m for m, v in fw.items() if v is None]
        out = {"name": self.name, "framework": fw, "extra": self.extra,
               "missing": missing,
               "install_command": self._command(missing) if missing else None,
               "installed": self.installed, "disabled_by_env": disabled_quietly()}
        # The doctor must never fail, and a broken report must not hide the common fields.
        try:
            if self._report is not None:
                out.update(self._report())
            out["summary"] = self._summary(out) if self._summary is not None else None
        except Exception as exc:
            out["report_error"] = f"{type(exc).__name__}: {exc}"
            out["summary"] = f"its report failed ({out['report_error']}); please report it"
        return out

    def doctor_line(self, state=None):
        """The doctor's one line: the same fields in the same order for every integration."""
        s = self.status() if state is None else state
        if "disabled_by_env" not in s:
            return f"status unavailable ({s.get('error') or 'its status query failed'})"
        dis = s["disabled_by_env"]
        parts = [f"install(): {'installed' if s.get('installed') else 'not installed'}",
                 "disabled by KWKER_DISABLE=1" if dis else
                 ("KWKER_DISABLE has an invalid value" if dis is None else "enabled")]
        fw = s.get("framework") or {}
        if fw:
            parts.append(", ".join(f"{m} {v}" if v else f"{m} missing" for m, v in fw.items()))
        if s.get("missing") and s.get("install_command"):
            parts.append(f"install with {s['install_command']}")
        if s.get("summary"):
            parts.append(s["summary"])
        return "; ".join(parts)


_REGISTRY = {}
_REGISTRY_LOCK = threading.Lock()


def register(name, install=None, uninstall=None, **declaration):
    """Registers (or returns the already registered) integration called `name`, and makes its
    status() the doctor's (kwker._warnings.register_status)."""
    with _REGISTRY_LOCK:
        if name not in _REGISTRY:
            integ = _REGISTRY[name] = Integration(name, install, uninstall, **declaration)
            from kwker import _warnings
            _warnings.register_status(name, integ.status)
        return _REGISTRY[name]


def get(name):
    """The registered integration `name` (KeyError when none is)."""
    return _REGISTRY[name]


def status():
    """{name: status dict} for every registered integration."""
    with _REGISTRY_LOCK:
        items = sorted(_REGISTRY.items())
    return {name: integ.status() for name, integ in items}
