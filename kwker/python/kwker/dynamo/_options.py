"""The compile backend's options=, checked before anything is compiled or packed (see the
package docstring for what each one means)."""

CANDIDATES = ("inductor", "eager", "kwker", "kwker-inductor")
_KWKER_ONLY = ("kwker", "kwker-inductor")
CPU_MODES = ("high", "medium", "int8", "int4")
LOSSY_MODES = ("medium", "int8", "int4")
_OPTIONS = ("mode", "candidates", "cache_dir", "repeats", "group_size", "scheme", "threads")
_CPU_OPTIONS = ("group_size", "scheme", "threads")


def parse(options, mode):
    """The options as the backend uses them: {"mode", "spec" (a _linear.Spec in a CPU-backend
    mode, else None), "candidates", "cache_dir", "repeats", "inductor_mode"}."""
    opts = dict(options or {})
    unknown = sorted(set(opts) - set(_OPTIONS))
    if unknown:
        raise ValueError(f"kwker backend: unknown option(s) {', '.join(unknown)}; valid "
                         f"options: {', '.join(_OPTIONS)}")
    choice_mode = opts.get("mode", "auto")
    valid = ("auto",) + CANDIDATES + CPU_MODES
    if not isinstance(choice_mode, str) or choice_mode not in valid:
        raise ValueError(f"kwker backend: mode={choice_mode!r} is not valid; use 'auto', a "
                         f"candidate ({', '.join(CANDIDATES)}) or a CPU-backend mode "
                         f"({', '.join(CPU_MODES)})")
    spec = _cpu_spec(choice_mode, opts)
    lossy = choice_mode in LOSSY_MODES
    cands = opts.get("candidates", _KWKER_ONLY[:1] if lossy else CANDIDATES)
    if isinstance(cands, str):
        cands = [cands]
    bad = [c for c in cands if c not in CANDIDATES]
    if bad or not cands:
        raise ValueError(f"kwker backend: candidates={list(cands)!r} is not valid; choose from "
                         f"{', '.join(CANDIDATES)}")
    if lossy and any(c not in _KWKER_ONLY for c in cands):
        raise ValueError(f"kwker backend: mode={choice_mode!r} runs the graph on Kwker's "
                         f"{choice_mode} kernels, so its candidates are 'kwker' and "
                         f"'kwker-inductor' (got {list(cands)!r}: Inductor and eager compute "
                         "in float32)")
    repeats = opts.get("repeats", 5)
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"kwker backend: repeats must be an int >= 1, got {repeats!r}")
    return {"mode": choice_mode, "spec": spec, "candidates": [c for c in CANDIDATES if c in cands],
            "cache_dir": opts.get("cache_dir"), "repeats": repeats, "inductor_mode": mode}


def _cpu_spec(choice_mode, opts):
    """The _linear.Spec of a CPU-backend mode (checked as kwker.cpu_backend checks it)."""
    given = [k for k in _CPU_OPTIONS if k in opts]
    if choice_mode not in CPU_MODES:
        if given:
            raise ValueError(f"kwker backend: option(s) {', '.join(given)} apply to the "
                             f"CPU-backend modes ({', '.join(CPU_MODES)}), not mode="
                             f"{choice_mode!r}")
        return None
    if "group_size" in opts and choice_mode != "int4":
        raise ValueError(f"kwker backend: group_size is int4's group size; mode={choice_mode!r} "
                         "has none (int8 and the float modes use blocks of 32)")
    from kwker._torch.linear import check_options
    try:
        group, scheme = check_options(choice_mode, opts.get("group_size", 32), opts.get("scheme"),
                                      opts.get("threads"), where="compile")
    except ValueError as e:  # the CPU backend's own check, reworded for options=
        raise ValueError("kwker backend: " + str(e).split(": ", 1)[1].replace(
            "int4 group_size=", "options group_size=")) from None
    from ._linear import Spec
    return Spec(choice_mode, group, scheme, opts.get("threads") or 0)
