"""Routing pandas' own sort methods to kwker.frame, so that pandas' own tests run through it.

    with PandasRouter("routed") as router:     # DataFrame.sort_values(...) -> kwker.frame ...
        ...                                    # router.calls: how many went through kwker.frame

The methods routed, and to what:

    DataFrame.sort_values, Series.sort_values  -> kwker.frame.sort_values
    DataFrame.sort_index,  Series.sort_index   -> kwker.frame.sort_index
    Series.argsort                             -> kwker.frame.arg_sort (as a Series of intp)

A call is routed wherever kwker.frame takes it: axis 0, kind left out (or None) or "stable",
and for argsort no `order` or `stable`. Every other call (axis=1, kind="mergesort", a call
pandas refuses to bind) goes to pandas' own method unchanged. inplace=True is emulated as
pandas does it: pandas' own deprecation warning for the keyword, then the result is assigned
into the object (pandas' _update_inplace) and None returned. Calls made while kwker.frame
runs (its probes) go to pandas' own methods. Under KWKER_DISABLE=1 the router, like every
install(), routes nothing: pandas' methods stay as they are.

Mode "stable" routes the same calls to pandas' own method with kind="stable" instead: what a
test sees from a stable sort without Kwker, which tells a test that depends on the tie order
of pandas' unstable default apart from a failure of Kwker's.

nsmallest, nlargest and rank are not routed: kwker.frame has no counterpart for them.
"""
import collections
import contextlib
import functools
import inspect
import threading
import warnings

import numpy as np

MODES = ("routed", "stable")
METHODS = (("DataFrame", "sort_values"), ("Series", "sort_values"),
           ("DataFrame", "sort_index"), ("Series", "sort_index"), ("Series", "argsort"))


class PandasRouter:
    """Installs the routing while in use (a context manager); `calls` counts the calls routed
    (by "Class.method"), `passed` those left to pandas."""

    def __init__(self, mode="routed"):
        if mode not in MODES:
            raise ValueError(f"PandasRouter: mode must be one of {MODES}, got {mode!r}")
        self.mode = mode
        self.calls = collections.Counter()
        self.passed = collections.Counter()
        self._saved = []
        self._local = threading.local()

    def __enter__(self):
        import pandas as pd
        from kwker import _integrations
        # The routing is a drop-in's install(): under KWKER_DISABLE=1 it installs nothing, so a
        # routed run is the plain run, call for call (kwker.frame's own disabled path, pandas'
        # stable sort, would change the tie order of pandas' unstable default).
        if self.mode == "routed" and _integrations.disabled():
            return self
        for cls_name, name in METHODS:
            cls = getattr(pd, cls_name)
            original = cls.__dict__[name]
            self._saved.append((cls, name, original))
            setattr(cls, name, self._wrap(cls_name, name, original))
        return self

    def __exit__(self, *exc):
        while self._saved:
            cls, name, original = self._saved.pop()
            setattr(cls, name, original)

    # ---- one method

    def _wrap(self, cls_name, name, original):
        signature = inspect.signature(original)
        label = f"{cls_name}.{name}"

        @functools.wraps(original)
        def method(obj, *args, **kwargs):
            if getattr(self._local, "inside", False):
                return original(obj, *args, **kwargs)
            try:
                bound = signature.bind(obj, *args, **kwargs)
            except TypeError:
                return original(obj, *args, **kwargs)     # pandas raises its own TypeError
            given = dict(bound.arguments)
            del given[next(iter(signature.parameters))]   # self
            if "inplace" in given:
                # pandas warns about the keyword from its method with stacklevel=3, which
                # names the caller's line: this frame is that method's here. The call below
                # would warn again, one frame deeper: that warning is silenced.
                given["inplace"] = obj._check_inplace_deprecation(given["inplace"], name)
                bound.arguments["inplace"] = given["inplace"]
            with _inplace_warned(given):
                if not _routable(obj, name, given):
                    self.passed[label] += 1
                    return original(*bound.args, **bound.kwargs)
                self.calls[label] += 1
                if self.mode == "stable":
                    bound.arguments["kind"] = "stable"
                    return original(*bound.args, **bound.kwargs)
                return self._route(obj, name, given)

        return method

    def _route(self, obj, name, given):
        import kwker.frame as kf
        inplace = False
        if "inplace" in given:
            from pandas.util._validators import validate_bool_kwarg
            inplace = validate_bool_kwarg(given.pop("inplace"), "inplace")
        for unused in ("axis", "kind", "order", "stable"):
            given.pop(unused, None)
        self._local.inside = True
        try:
            if name == "argsort":
                positions = kf.arg_sort(obj)
                result = obj._constructor(positions, index=obj.index, name=obj.name,
                                          dtype=np.intp, copy=False)
                return result.__finalize__(obj, method="argsort")
            fn = kf.sort_values if name == "sort_values" else kf.sort_index
            by = [given.pop("by")] if "by" in given else []
            result = fn(obj, *by, **given)
        finally:
            self._local.inside = False
        if inplace:
            obj._update_inplace(result)
            return None
        return result


@contextlib.contextmanager
def _inplace_warned(given):
    if "inplace" not in given:
        yield
        return
    from pandas.errors import Pandas4Warning
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The inplace keyword in ",
                                category=Pandas4Warning)
        yield


def _routable(obj, name, given):
    """Whether kwker.frame takes the call: axis 0, kind left out, None or "stable"."""
    if given.get("kind") not in (None, "stable"):
        return False
    axis = given.get("axis", 0)
    if name == "argsort":
        if given.get("order") is not None or given.get("stable") is not None:
            return False
        if axis == -1:
            return True
    try:
        return obj._get_axis_number(axis) == 0
    except (ValueError, TypeError, KeyError):
        return False                                      # pandas raises its own error
