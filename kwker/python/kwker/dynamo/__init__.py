"""The torch.compile backend "kwker": torch.compile(model, backend="kwker").

Registered through the `torch_dynamo_backends` entry point, so it works right after
installation. For an inference graph it builds the candidates (Inductor; eager, the graph as it
is; "kwker", the graph with its sort-family calls rewritten to Kwker's operators; and
"kwker-inductor", that rewritten graph compiled by Inductor), times each once on the example
inputs, keeps the fastest, and caches the choice on disk keyed by the graph, the input shapes,
dtypes and strides, the mode, the torch and Kwker versions, the CPU, engine and thread counts:
later runs and later processes build only the chosen candidate, with no timing. A graph without
sort-family calls has no Kwker candidates. A graph that needs gradients goes to Inductor. With
KWKER_DISABLE=1 the backend returns the graph unchanged (eager), with one DisabledWarning per
process.

The CPU backend's modes ("high", "medium", "int8", "int4", as kwker.cpu_backend.optimize) also
rewrite the graph's linear calls on the model's weights to Kwker's linear kernels, with the
weights packed once at compile time (_linear.py). "high" (float32) keeps every candidate and
times them; the lossy modes run the rewritten graph ("kwker"; "kwker-inductor" on request),
since Inductor and eager would not compute in the precision the user asked for.

Options (torch.compile(..., options={...})):
    mode        "auto" (default: time and choose), a candidate name to use it without timing,
                or a CPU-backend mode: "high", "medium", "int8", "int4"
    candidates  the candidates "auto" / a CPU-backend mode chooses from (default: all that
                apply; in "medium", "int8" and "int4": "kwker")
    group_size  int4's group size (default 32; a multiple of 32)
    scheme      int8: "q8_0" (default) or "per_channel"; int4: "q4_1" (default) or "q4_0"
    threads     the most threads each linear uses (default: Kwker's thread budget)
    cache_dir   folder of the choice cache (default: KWKER_CACHE_DIR/dynamo)
    repeats     timed samples per candidate (default 5; the median decides)
torch.compile's own mode (e.g. "max-autotune") is passed on to Inductor.

See docs/torch.md.
"""
import sys
import time
import warnings

from kwker import _integrations

from . import _choice
from ._options import CANDIDATES, CPU_MODES, LOSSY_MODES  # noqa: F401  (the public names)
from ._options import _CPU_OPTIONS, _KWKER_ONLY
from ._options import parse as _parse

_stats = {"graphs": 0, "timed": 0, "cache_hits": 0, "training": 0, "disabled": 0,
          "packed": 0, "repacked": 0, "fallbacks": 0, "last": None}
_notices = set()


def stats():
    """Counters of this process: graphs seen, graphs timed, choices read from the cache,
    training graphs (sent to Inductor), graphs left unchanged by KWKER_DISABLE=1, weights
    packed at compile time by a CPU-backend mode and re-packed because the model changed them,
    graphs whose CPU-backend mode fell back to float32 (no compiled operators for this torch),
    and the last decision ({"choice", "source", "times_ms", "key", "mode"})."""
    return dict(_stats)


def reset_stats():
    for k in _stats:
        _stats[k] = None if k == "last" else 0


def _report():
    """The backend's own fields for status() and the doctor: whether torch finds it through its
    entry point, and this process's counters (stats())."""
    import importlib.metadata as md
    try:
        found = any(ep.name == "kwker" for ep in md.entry_points(group="torch_dynamo_backends"))
    except Exception:  # the doctor must never fail on a status query
        found = None
    return {"entry_point": found, "stats": stats()}


def _summary(s):
    st = s.get("stats") or {}
    where = ("torch.compile(backend='kwker') finds it" if s.get("entry_point")
             else "no torch_dynamo_backends entry point (reinstall kwker)")
    return (f"{where}; {st.get('graphs', 0)} graph(s), {st.get('timed', 0)} timed, "
            f"{st.get('cache_hits', 0)} from the choice cache, {st.get('disabled', 0)} left "
            "unchanged by KWKER_DISABLE")


def operators():
    """Registers Kwker's torch operators in this process and returns torch.ops.kwker_torch: the
    graph operators (sort, argsort, topk, kthvalue), the compiled ones (linear...) when they
    load into this torch, and the deprecated kwker:: aliases. Call it before loading a saved
    graph or an exported program that calls them (torch.export.load, torch.load of a
    GraphModule)."""
    from kwker._torch import extension, ops
    if extension.availability()[0]:
        ops.compiled(who="kwker.dynamo.operators", otherwise="or save the graph without the "
                     "CPU backend's linear operator")
    return ops.ops


def migrate(graph):
    """Renames, in place, the calls of the deprecated torch.ops.kwker.* operators (sort,
    argsort, topk, kthvalue, linear) in a torch.fx.GraphModule or a torch.export
    ExportedProgram to their torch.ops.kwker_torch.* names (same schemas, same results); save
    it again afterwards. Returns how many calls it renamed."""
    from kwker._torch import ops
    return ops.migrate(graph)


def status():
    """The backend's state (what the doctor shows): the contract's common fields, then
    _report()'s. Imports no torch."""
    return INTEGRATION.status()


# Installed by the backend itself when it compiles its first graph (torch finds the backend
# through the entry point; there is nothing to switch on beforehand or to undo afterwards).
INTEGRATION = _integrations.register("dynamo", None, None, framework=("torch",), extra="torch",
                                     report=_report, summary=_summary)


def _cpu_backend_available(opts):
    """False (after a one-line notice per process and mode) when a CPU-backend mode cannot run
    because the compiled operators do not load into this torch: the graph then compiles as
    mode "auto" (float32), as kwker.cpu_backend.optimize returns the model unchanged."""
    from kwker._torch import extension, ops
    available, why = extension.availability()
    if available:
        ops.compiled()  # loads the operators once
        return True
    _stats["fallbacks"] += 1
    if opts["mode"] not in _notices:
        _notices.add(opts["mode"])
        print(f"kwker.cpu_backend: {why}; the CPU backend is off and torch.compile(backend="
              f"'kwker', options={{'mode': {opts['mode']!r}}}) compiles in float32 as mode "
              "'auto' (see python -m kwker doctor)", file=sys.stderr, flush=True)
    return False


def _needs_grad(example_inputs):
    import torch
    return torch.is_grad_enabled() and any(
        isinstance(x, torch.Tensor) and x.requires_grad for x in example_inputs)


def _inductor(gm, example_inputs, inductor_mode):
    import torch
    from torch._inductor.compile_fx import compile_fx
    patches = torch._inductor.list_mode_options(inductor_mode) if inductor_mode else {}
    return compile_fx(gm, example_inputs, config_patches=patches)


def _build(name, gm, example_inputs, opts, rewritten=None):
    """The candidate `name` as a callable. rewritten: a dict shared by the candidates of one
    graph, so that the Kwker candidates rewrite (and pack the weights) once."""
    import torch.fx
    if name == "eager":
        return gm.forward
    if name == "inductor":
        return _inductor(torch.fx.GraphModule(gm, gm.graph), example_inputs,
                         opts["inductor_mode"])
    from ._rewrite import rewrite
    rewritten = {} if rewritten is None else rewritten
    if "gm" not in rewritten:
        rewritten["gm"], _ = rewrite(gm, example_inputs, opts["spec"])
    rgm = rewritten["gm"]
    packs = rgm._kwker_packs
    if packs is not None and "counted" not in rewritten:
        rewritten["counted"] = True
        _stats["packed"] += packs.new
    if name == "kwker":
        fn = rgm.forward
    else:
        fn = _inductor(rgm, example_inputs, opts["inductor_mode"])
    if packs is None or not packs.weights:
        return fn

    def run(*args):
        # Cheap (a version and pointer per weight): re-packs only a weight changed in place.
        n = packs.repacks
        packs.refresh(args)
        if packs.repacks != n:
            _stats["repacked"] += packs.repacks - n
        return fn(*args)
    run.packs = packs
    return run


def _concrete(example_inputs):
    """Inputs to time with: SymInts replaced by their hints; None when one has none."""
    import torch
    out = []
    for x in example_inputs:
        if isinstance(x, torch.SymInt):
            hint = getattr(x.node, "hint", None)
            if hint is None:
                return None
            x = int(hint)
        out.append(x)
    return out


def _time(fns, inputs, repeats):
    """Median seconds per call of each candidate, interleaved; a candidate that raises is
    dropped (with a warning)."""
    import statistics
    times = {name: [] for name in fns}
    for name in list(fns):
        try:
            fns[name](*inputs)  # warm-up: first-call costs (allocation, lazy loading)
        except Exception as e:
            warnings.warn(f"kwker backend: candidate {name} failed on the example inputs "
                          f"({type(e).__name__}: {e}); it is not used", RuntimeWarning)
            del fns[name], times[name]
    loops = {}
    for name, fn in fns.items():
        t0 = time.perf_counter()
        fn(*inputs)
        dt = time.perf_counter() - t0
        loops[name] = max(1, min(1000, int(0.01 / max(dt, 1e-7))))
    for _ in range(repeats):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            for _ in range(loops[name]):
                fn(*inputs)
            times[name].append((time.perf_counter() - t0) / loops[name])
    return {name: statistics.median(ts) for name, ts in times.items()}


def backend(gm, example_inputs, mode=None, options=None):
    """The torch.compile backend (see the module docstring)."""
    _stats["graphs"] += 1
    opts = _parse(options, mode)
    if INTEGRATION.off("torch.compile(backend='kwker') returns graphs unchanged"):
        _stats["disabled"] += 1
        return gm.forward
    INTEGRATION.install()
    if _needs_grad(example_inputs):
        _stats["training"] += 1
        if opts["spec"] is not None and ("grad", opts["mode"]) not in _notices:
            _notices.add(("grad", opts["mode"]))  # else a forgotten no_grad() goes unnoticed
            print(f"kwker backend: mode={opts['mode']!r} applies to inference graphs; this graph "
                  "needs gradients, so Inductor compiles it with torch's own float32 linears "
                  "(call the model under torch.no_grad() or torch.inference_mode())",
                  file=sys.stderr, flush=True)
        return _inductor(gm, example_inputs, opts["inductor_mode"])
    if opts["spec"] is not None and not _cpu_backend_available(opts):
        opts = _parse({k: v for k, v in (options or {}).items()
                       if k not in _CPU_OPTIONS + ("mode",)}, mode)
    from ._rewrite import sort_nodes
    has_kwker = bool(sort_nodes(gm))
    if opts["spec"] is not None and not has_kwker:
        from ._linear import linear_nodes
        has_kwker = bool(linear_nodes(gm, example_inputs)) or opts["mode"] in LOSSY_MODES
    # With nothing for Kwker to rewrite, a Kwker candidate is the graph itself: when the user
    # asked for Kwker candidates only, the first of them runs (unchanged).
    cands = [c for c in opts["candidates"] if has_kwker or c not in _KWKER_ONLY] or \
        opts["candidates"][:1]
    rewritten = {}
    if opts["mode"] in CANDIDATES:
        return _build(opts["mode"], gm, example_inputs, opts, rewritten)
    if len(cands) == 1:
        return _build(cands[0], gm, example_inputs, opts, rewritten)
    inputs = _concrete(example_inputs)
    if inputs is None:  # nothing concrete to time with: Inductor, as torch.compile would
        return _build("inductor" if "inductor" in cands else cands[0], gm, example_inputs, opts,
                      rewritten)
    spec = opts["spec"]
    key = _choice.key(gm, inputs, cands, opts["inductor_mode"],
                      spec.key() if spec else {"mode": opts["mode"]})
    store = _choice.Store(opts["cache_dir"])
    cached = store.get(key)
    if cached in cands:
        _stats["cache_hits"] += 1
        _stats["last"] = {"choice": cached, "source": "cache", "times_ms": None,
                          "key": _choice.digest(key), "mode": opts["mode"]}
        return _build(cached, gm, example_inputs, opts, rewritten)
    print(f"kwker backend: timing {', '.join(cands)} once on the example inputs of graph "
          f"{_choice.digest(key)[:12]} (first run; the choice is cached in {store.folder})",
          file=sys.stderr, flush=True)
    fns = {name: _build(name, gm, example_inputs, opts, rewritten) for name in cands}
    times = _time(fns, inputs, opts["repeats"])
    best = min(times, key=times.get)
    _stats["timed"] += 1
    times_ms = {name: round(t * 1e3, 4) for name, t in times.items()}
    _stats["last"] = {"choice": best, "source": "timed", "times_ms": times_ms,
                      "key": _choice.digest(key), "mode": opts["mode"]}
    store.put(key, best, times_ms)
    print(f"kwker backend: chose {best} ({', '.join(f'{n} {t:.3g} ms' for n, t in times_ms.items())})",
          file=sys.stderr, flush=True)
    return fns[best]
