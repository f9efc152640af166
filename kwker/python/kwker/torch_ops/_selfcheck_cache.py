"""Where the self-check's results live (KWKER_CACHE_DIR/torch_ops/), read without torch.

One file of the kwker._cache store per (torch version, Kwker version, CPU, engine, thread
budget, implementation); the doctor reads it from any process to say which overrides stay off
on this machine.
"""
import os

from kwker import _cache

ENV = "KWKER_SELF_CHECK"
# Test-only (see _kernels): part of the key, so a corrupted run never reuses a clean result.
CORRUPT_ENV = "KWKER_TEST_CORRUPT_TORCH_OP"
SCHEMA = "kwker.torch_ops.self_check"
SCHEMA_VERSION = 1


def force():
    """Whether KWKER_SELF_CHECK asks for a fresh run; any value but "force" or "" is an error."""
    value = os.environ.get(ENV, "")
    if value not in ("", "force"):
        raise ValueError(f"{ENV}={value!r} is not valid: set {ENV}=force to re-run the PyTorch "
                         f"operators' self-check, or unset it to use the cached result")
    return value == "force"


def key(kind):
    import kwker
    from kwker._torch.extension import running_torch
    return {"torch": running_torch(), "kwker": kwker.__version__, "implementation": kind,
            "corrupt": os.environ.get(CORRUPT_ENV, ""), **_cache.machine()}


STORE = _cache.Store("torch_ops", SCHEMA, SCHEMA_VERSION, prefix="self-check-")


def path(kind):
    return STORE.path(key(kind))


def read(kind):
    """(results, None), (None, None) when never run here, or (None, why the file is unusable)."""
    data, problem = STORE.get(key(kind))
    if data is not None and not isinstance(data.get("results"), dict):
        return None, "no results in it"
    return (data["results"] if data is not None else None), problem


def write(kind, results):
    return STORE.put(key(kind), {"results": results})


def failures():
    """(failed ops, {op: detail}) of the last self-check of the implementation install() would
    use here; nothing when it never ran on this machine."""
    from kwker._torch.extension import availability
    kind = "compiled" if availability()[0] else "python"
    results, _ = read(kind)
    if results is None:
        return [], {}
    bad = {op: r.get("detail", "") for op, r in results.items()
           if isinstance(r, dict) and not r.get("ok", True)}
    return sorted(bad), bad
