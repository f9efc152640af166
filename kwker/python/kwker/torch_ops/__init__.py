"""Kwker's kernels inside PyTorch: torch.sort and friends get faster without code changes.

    import kwker.torch_ops
    kwker.torch_ops.install()            # every op; install(ops=["sort", "topk"]) for some
    torch.sort(x)                        # now Kwker's kernel for CPU tensors it handles
    kwker.torch_ops.status()
    kwker.torch_ops.uninstall()          # torch's own kernels again, exactly

Overridden (CPU tensors of bool, int8-64, uint8-64, float16, bfloat16, float32, float64, any
dim, descending, stable or not): "sort" (torch.sort, Tensor.sort, argsort, msort, out=),
"topk" (and out=), "kthvalue", "unique" (torch.unique with sorted=True and no dim). Everything
else, and every size below the measured threshold, runs torch's own kernel. Results are
torch's stable results bit for bit: before an op is switched on, the self-check compares it
with torch on a battery and keeps it off if anything differs. See docs/torch.md.

Importing this module imports no torch (the doctor reads status() from any process); install()
does.
"""
import warnings

from kwker import _integrations

OPS = ("sort", "topk", "kthvalue", "unique")
NAME = "torch_ops"

_state = {"impl": None, "kind": None, "on": [], "failed": {}, "self_check": None,
          "requested": []}


def _check_ops(ops):
    if ops is None:
        return list(OPS)
    if isinstance(ops, str):
        ops = [ops]
    try:
        ops = list(ops)
    except TypeError:
        raise TypeError(f"kwker.torch_ops.install: ops must be None or a list of op names "
                        f"(from {', '.join(OPS)}), got {type(ops).__name__}") from None
    unknown = [o for o in ops if o not in OPS]
    if unknown:
        raise ValueError(f"kwker.torch_ops.install: unknown op(s) {', '.join(map(repr, unknown))};"
                         f" valid ops: {', '.join(OPS)} (argsort, msort and Tensor.sort go "
                         "through 'sort')")
    return [o for o in OPS if o in ops]


def _choose(compiled):
    from kwker._torch import extension

    from . import _compiled, _python_ops
    if compiled is None:
        compiled = extension.availability()[0]
        if compiled:
            try:
                extension.load()
            except RuntimeError as e:  # built for this torch, yet it did not load
                warnings.warn(f"{e}; using the Python-registered operators", RuntimeWarning,
                              stacklevel=5)
                compiled = False
    if compiled:
        return "compiled", _compiled.CompiledOps, _compiled.CompiledKernels()
    return "python", _python_ops.PythonOps, _python_ops.PythonKernels()


def _install(ops=None, compiled=None):
    _INTEGRATION.require("torch", "install()")
    from . import _selfcheck, _thresholds
    ops = _check_ops(ops)
    kind, registrar, kernels = _choose(compiled)
    results, how = _selfcheck.results(kind, kernels, ops)
    on = [op for op in ops if results[op]["ok"]]
    failed = {op: results[op]["detail"] for op in ops if not results[op]["ok"]}
    impl = registrar(on, _thresholds.table(kind, on)) if on else None
    _state.update(impl=impl, kind=kind, on=on, failed=failed, requested=ops,
                  self_check={"source": how, "file": _selfcheck.C.path(kind)})
    if failed:
        warnings.warn("kwker.torch_ops: these PyTorch overrides differ from this torch's own "
                      f"kernels and stay off: {', '.join(sorted(failed))} (torch's own kernels "
                      "run instead, so results are unaffected; please report it with python -m "
                      "kwker support-bundle)", RuntimeWarning, stacklevel=4)


def _uninstall():
    impl = _state["impl"]
    _state.update(impl=None, kind=None, on=[], failed={}, self_check=None, requested=[])
    if impl is not None:
        impl.close()


def install(ops=None, *, compiled=None):
    """Switches Kwker's kernels on for `ops` (None: all of OPS) and returns whether the
    integration is installed (False when KWKER_DISABLE=1, which makes this a no-op).

    compiled: None uses the compiled operators when they were built for this torch (else the
    Python-registered ones); True requires them (RuntimeError saying why when they cannot
    load); False uses the Python-registered ones. Calling install again with other options
    replaces the set: exactly the ops asked for last are on.
    """
    _check_ops(ops)
    if compiled not in (None, True, False):
        raise TypeError(f"kwker.torch_ops.install: compiled must be None, True or False, got "
                        f"{compiled!r}")
    return _INTEGRATION.install(ops=None if ops is None else _check_ops(ops), compiled=compiled)


def uninstall():
    """Removes every Kwker override: torch's dispatcher is exactly as before install()."""
    _INTEGRATION.uninstall()


def _report():
    """This integration's own fields: the implementation in use, which ops are on, which stayed
    off because the self-check found a difference, and which torch the compiled operators were
    built for. Imports no torch."""
    from kwker._torch import extension
    info = extension.build_info() or {}
    available, why = extension.availability()
    out = {
        "torch": extension.running_torch(),
        "built_for_torch": info.get("torch"),
        "compiled_available": available,
        "compiled_reason": why or None,
        "implementation": _state["kind"],
        "ops_on": list(_state["on"]),
        "self_check_failed": sorted(_state["failed"]),
        "self_check_detail": dict(_state["failed"]),
        "self_check": _state["self_check"],
    }
    if not _INTEGRATION.installed and out["torch"]:
        # Not installed in this process: the last self-check on this machine says which
        # overrides would stay off (what the doctor warns about).
        out["self_check_failed"], out["self_check_detail"] = _cached_failures()
    return out


def _summary(s):
    if s.get("installed"):
        text = f"{s['implementation']} operators on for {', '.join(s['ops_on']) or 'no op'}"
    else:
        text = ("compiled operators available" if s.get("compiled_available") else
                f"Python-registered operators only ({s.get('compiled_reason')})")
    if s.get("self_check_failed"):
        text += f"; kept off by the self-check: {', '.join(s['self_check_failed'])}"
    return text


def status():
    """This integration's state (also what the doctor reports): the contract's common fields
    (installed, disabled_by_env, framework...), then _report()'s."""
    return _INTEGRATION.status()


def _cached_failures():
    try:
        from . import _selfcheck_cache
        return _selfcheck_cache.failures()
    except Exception:
        return [], {}


_INTEGRATION = _integrations.register(NAME, _install, _uninstall, framework=("torch",), extra="torch",
                                      report=_report, summary=_summary)
