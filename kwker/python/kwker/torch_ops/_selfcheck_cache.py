"""Where the self-check's results live (KWKER_CACHE_DIR/torch_ops/), read without torch.

One JSON file per (torch version, Kwker version, CPU, engine, thread budget, implementation);
the doctor reads it from any process to say which overrides stay off on this machine.
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
    from ._compiled import running_torch
    return {"torch": running_torch(), "kwker": kwker.__version__, "implementation": kind,
            "corrupt": os.environ.get(CORRUPT_ENV, ""), **_cache.machine()}


def path(kind):
    return os.path.join(_cache.root(), "torch_ops", f"self-check-{_cache.digest(key(kind))}.json")


def valid(data, kind):
    return (isinstance(data, dict) and data.get("schema") == SCHEMA and
            data.get("schema_version") == SCHEMA_VERSION and data.get("key") == key(kind) and
            isinstance(data.get("results"), dict))


def failures():
    """(failed ops, {op: detail}) of the last self-check of the implementation install() would
    use here; nothing when it never ran on this machine."""
    from ._compiled import availability
    kind = "compiled" if availability()[0] else "python"
    data, _ = _cache.read_json(path(kind))
    if not valid(data, kind):
        return [], {}
    bad = {op: r.get("detail", "") for op, r in data["results"].items()
           if isinstance(r, dict) and not r.get("ok", True)}
    return sorted(bad), bad
