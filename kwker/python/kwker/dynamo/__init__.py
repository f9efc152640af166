"""The torch.compile backend "kwker": torch.compile(model, backend="kwker").

Registered through the `torch_dynamo_backends` entry point, so it works right after
installation. For an inference graph it builds the candidates (Inductor; eager, the graph as it
is; "kwker", the graph with its sort-family calls rewritten to Kwker's operators; and
"kwker-inductor", that rewritten graph compiled by Inductor), times each once on the example
inputs, keeps the fastest, and caches the choice on disk keyed by the graph, the input shapes,
dtypes and strides, the torch and Kwker versions, the CPU, engine and thread counts: later runs
and later processes build only the chosen candidate, with no timing. A graph without
sort-family calls has no Kwker candidates. A graph that needs gradients goes to Inductor. With
KWKER_DISABLE=1 the backend returns the graph unchanged (eager).

Options (torch.compile(..., options={...})):
    mode        "auto" (default: time and choose) or a candidate name to use it without timing
    candidates  the candidates "auto" chooses from (default: all that apply)
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

CANDIDATES = ("inductor", "eager", "kwker", "kwker-inductor")
_KWKER_ONLY = ("kwker", "kwker-inductor")
_OPTIONS = ("mode", "candidates", "cache_dir", "repeats")

_stats = {"graphs": 0, "timed": 0, "cache_hits": 0, "training": 0, "disabled": 0,
          "last": None}


def stats():
    """Counters of this process: graphs seen, graphs timed, choices read from the cache,
    training graphs (sent to Inductor), graphs left unchanged by KWKER_DISABLE=1, and the last
    decision ({"choice", "source", "times_ms", "key"})."""
    return dict(_stats)


def reset_stats():
    for k in _stats:
        _stats[k] = None if k == "last" else 0


def _parse(options, mode):
    opts = dict(options or {})
    unknown = sorted(set(opts) - set(_OPTIONS))
    if unknown:
        raise ValueError(f"kwker backend: unknown option(s) {', '.join(unknown)}; valid "
                         f"options: {', '.join(_OPTIONS)}")
    choice_mode = opts.get("mode", "auto")
    if choice_mode != "auto" and choice_mode not in CANDIDATES:
        raise ValueError(f"kwker backend: mode={choice_mode!r} is not valid; use 'auto' or one "
                         f"of {', '.join(CANDIDATES)}")
    cands = opts.get("candidates", CANDIDATES)
    if isinstance(cands, str):
        cands = [cands]
    bad = [c for c in cands if c not in CANDIDATES]
    if bad or not cands:
        raise ValueError(f"kwker backend: candidates={list(cands)!r} is not valid; choose from "
                         f"{', '.join(CANDIDATES)}")
    repeats = opts.get("repeats", 5)
    if not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"kwker backend: repeats must be an int >= 1, got {repeats!r}")
    return {"mode": choice_mode, "candidates": [c for c in CANDIDATES if c in cands],
            "cache_dir": opts.get("cache_dir"), "repeats": repeats, "inductor_mode": mode}


def _needs_grad(example_inputs):
    import torch
    return torch.is_grad_enabled() and any(
        isinstance(x, torch.Tensor) and x.requires_grad for x in example_inputs)


def _inductor(gm, example_inputs, inductor_mode):
    import torch
    from torch._inductor.compile_fx import compile_fx
    patches = torch._inductor.list_mode_options(inductor_mode) if inductor_mode else {}
    return compile_fx(gm, example_inputs, config_patches=patches)


def _build(name, gm, example_inputs, opts):
    import torch.fx
    if name == "eager":
        return gm.forward
    if name == "inductor":
        return _inductor(torch.fx.GraphModule(gm, gm.graph), example_inputs,
                         opts["inductor_mode"])
    from ._rewrite import rewrite
    rewritten, _ = rewrite(gm)
    if name == "kwker":
        return rewritten.forward
    return _inductor(rewritten, example_inputs, opts["inductor_mode"])


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
    if _integrations.disabled():
        _stats["disabled"] += 1
        return gm.forward
    opts = _parse(options, mode)
    if _needs_grad(example_inputs):
        _stats["training"] += 1
        return _inductor(gm, example_inputs, opts["inductor_mode"])
    from ._rewrite import sort_nodes
    has_sort = bool(sort_nodes(gm))
    cands = [c for c in opts["candidates"] if has_sort or c not in _KWKER_ONLY]
    if opts["mode"] != "auto":
        return _build(opts["mode"], gm, example_inputs, opts)
    if len(cands) == 1:
        return _build(cands[0], gm, example_inputs, opts)
    inputs = _concrete(example_inputs)
    if inputs is None:  # nothing concrete to time with: Inductor, as torch.compile would
        return _build("inductor" if "inductor" in cands else cands[0], gm, example_inputs, opts)
    key = _choice.key(gm, inputs, cands, opts["inductor_mode"])
    store = _choice.Store(opts["cache_dir"])
    cached = store.get(key)
    if cached in cands:
        _stats["cache_hits"] += 1
        _stats["last"] = {"choice": cached, "source": "cache", "times_ms": None,
                          "key": _choice.digest(key)}
        return _build(cached, gm, example_inputs, opts)
    print(f"kwker backend: timing {', '.join(cands)} once on the example inputs of graph "
          f"{_choice.digest(key)[:12]} (first run; the choice is cached in {store.folder})",
          file=sys.stderr, flush=True)
    fns = {name: _build(name, gm, example_inputs, opts) for name in cands}
    times = _time(fns, inputs, opts["repeats"])
    best = min(times, key=times.get)
    _stats["timed"] += 1
    times_ms = {name: round(t * 1e3, 4) for name, t in times.items()}
    _stats["last"] = {"choice": best, "source": "timed", "times_ms": times_ms,
                      "key": _choice.digest(key)}
    store.put(key, best, times_ms)
    print(f"kwker backend: chose {best} ({', '.join(f'{n} {t:.3g} ms' for n, t in times_ms.items())})",
          file=sys.stderr, flush=True)
    return fns[best]
