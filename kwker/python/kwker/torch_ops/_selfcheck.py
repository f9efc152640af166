"""The install-time self-check: every override against torch's own kernel, bit for bit.

Before an override is switched on, its kernel runs on a battery (every dtype, 1-D and N-D,
every dim, ties, NaN, +-0.0, +-inf, descending, sizes across every algorithm threshold of the
core, non-contiguous and zero-size tensors) and its values and indices are compared byte for
byte with torch's own result with stable=True (topk / kthvalue: the first k / the k-th of that
stable order; unique: runs of that stable order, each represented by its first element).
torch's unstable default may order ties differently: the stable answer is one of the answers it
allows, and the one Kwker always gives.

The result is kept in KWKER_CACHE_DIR/torch_ops/, one file per (torch version, Kwker version,
CPU, engine, implementation), so a later process skips the check; KWKER_SELF_CHECK=force runs it
again. A cache file that cannot be read is rebuilt, with a warning.
"""
import time
import warnings

import torch

from kwker._torch import kernels as _kernels

from . import _selfcheck_cache as C

DTYPES = tuple(_kernels.CODES)
# Lengths across the core's thresholds: tiny scalar networks (8), register networks and their
# two-network merge (up to 2 x 512 keys on AVX-512), presorted detection (256), the 16-bit
# packing limit (65536) and counting argsort (60000), the selection top-k (2048 columns), the
# thread threshold (100000).
LENGTHS_1D = (0, 1, 2, 3, 7, 8, 9, 16, 17, 33, 64, 65, 128, 129, 255, 256, 257, 511, 513,
              1000, 1025, 2048, 4099, 20001, 65537, 120001)
ND_CASES = ((3, 5, 7), (0, 4), (4, 0), (257, 3), (4, 2500), (2, 3, 1, 4))


# ---- inputs ----

_SIGNED = {torch.uint16: torch.int16, torch.uint32: torch.int32, torch.uint64: torch.int64}


def _values(dtype, n, gen, dist):
    """n values of dtype: a mix of ties, extremes and (floats) NaN, +-0.0, +-inf; then
    rearranged by dist ("mixed", "few", "sorted", "reversed")."""
    if dtype in _SIGNED:
        # torch has few kernels for wide unsigned types: build the bits as the signed type of
        # the same width, whose order is the unsigned order with the top bit flipped.
        s = _values(_SIGNED[dtype], n, gen, "mixed")
        low = torch.iinfo(s.dtype).min
        if dist != "mixed":
            s = _values_arranged((s ^ low), gen, dist) ^ low
        return s.view(dtype)
    if n == 0:
        return torch.empty(0, dtype=dtype)
    if dtype == torch.bool:
        x = torch.randint(0, 2, (n,), generator=gen).bool()
    elif dtype.is_floating_point:
        x = (torch.randn(n, generator=gen, dtype=torch.float64) * 100).to(dtype)
        pick = torch.randint(0, 16, (n,), generator=gen)
        x[pick == 0] = float("nan")
        x[pick == 1] = -0.0
        x[pick == 2] = 0.0
        x[pick == 3] = float("inf")
        x[pick == 4] = float("-inf")
        x[pick == 5] = -float("nan")
        x[pick == 6] = x[0]
    else:
        info = torch.iinfo(dtype)
        x = torch.randint(info.min, info.max, (n,), generator=gen).to(dtype)
        pick = torch.randint(0, 12, (n,), generator=gen)
        x[pick == 0] = 0
        x[pick == 1] = -1 if dtype.is_signed else info.max
        x[pick == 2] = x[0]
        x[pick == 3] = info.min
        x[pick == 4] = info.max
    return _values_arranged(x, gen, dist)


def _values_arranged(x, gen, dist):
    n = x.numel()
    if n == 0 or dist == "mixed":
        return x
    if dist == "few":
        return x[torch.randint(0, min(n, 3), (n,), generator=gen)]
    desc = torch.sort(x, descending=True).values
    return desc.flip(0) if dist == "sorted" else desc


def cases(dtype):
    """(label, tensor, dim) for one dtype: 1-D lengths, patterns, N-D every dim, views."""
    gen = torch.Generator().manual_seed(1234 + _kernels.CODES[dtype])
    for n in LENGTHS_1D:
        yield f"n={n}", _values(dtype, n, gen, "mixed"), 0
    for dist in ("few", "sorted", "reversed"):
        for n in (300, 70000):
            yield f"{dist} n={n}", _values(dtype, n, gen, dist), -1
    for shape in ND_CASES:
        n = 1
        for s in shape:
            n *= s
        x = _values(dtype, n, gen, "mixed").reshape(shape)
        for d in range(len(shape)):
            yield f"shape={shape} dim={d}", x, d
    x = _values(dtype, 40 * 30, gen, "mixed").reshape(40, 30)
    yield "transposed dim=0", x.t(), 0
    yield "transposed dim=1", x.t(), 1
    yield "strided dim=1", x[:, ::3], 1
    yield "expanded dim=0", x[:1].expand(5, 30), 0


# ---- references: torch's own stable results ----

def _same(got, want):
    """Byte-for-byte equal tensors (dtype, shape and every bit of every element)."""
    if got.dtype != want.dtype or got.shape != want.shape:
        return False
    if got.numel() == 0:
        return True
    width = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[want.element_size()]
    g = got.contiguous().view(torch.uint8 if got.dtype == torch.bool else got.dtype)
    w = want.contiguous().view(torch.uint8 if want.dtype == torch.bool else want.dtype)
    return torch.equal(g.view(width), w.view(width))


def _stable(x, dim, descending):
    if x.dim() == 1:  # as a row of a 2-D tensor: torch's 1-D radix path rejects wide unsigned
        v, i = torch.sort(x.unsqueeze(0), dim=1, descending=descending, stable=True)
        return v.squeeze(0), i.squeeze(0)
    return torch.sort(x, dim=dim, descending=descending, stable=True)


def _unique_reference(x, return_inverse, return_counts):
    v, i = _stable(x.reshape(-1), 0, False)
    v = v.view(_SIGNED.get(v.dtype, v.dtype))  # equality is bitwise for integers
    n = v.numel()
    if n == 0:
        empty = torch.empty(0, dtype=torch.int64)
        return v.view(x.dtype), (torch.empty(x.shape, dtype=torch.int64) if return_inverse else empty), empty
    starts = torch.ones(n, dtype=torch.bool)
    starts[1:] = v[1:] != v[:-1]
    first = starts.nonzero().view(-1)
    ends = torch.cat([first[1:], torch.tensor([n])])
    inverse = torch.empty(n, dtype=torch.int64)
    inverse[i] = torch.cumsum(starts.long(), 0) - 1
    return (v[first].view(x.dtype), inverse.view(x.shape) if return_inverse else torch.empty(0, dtype=torch.int64),
            ends - first if return_counts else torch.empty(0, dtype=torch.int64))


class _Refs:
    """torch's stable results for one case, computed once and shared by every op."""

    def __init__(self, x, d):
        self.x, self.d, self._sorted = x, d, {}

    def stable(self, descending):
        if descending not in self._sorted:
            self._sorted[descending] = _stable(self.x, self.d, descending)
        return self._sorted[descending]


def _check_op(op, kernels, refs):
    """None when the kernel matches torch on every variant of the case, else what differed."""
    x, d = refs.x, refs.d
    if op == "sort":
        for desc in (False, True):
            if not _kernels.accepts_sort(x, d, desc):
                continue
            want, got = refs.stable(desc), kernels.sort(x, d, desc, 0)
            if not (_same(got[0], want[0]) and _same(got[1], want[1])):
                return f"descending={desc}"
    elif op == "topk":
        size = x.shape[d]
        if not _kernels.accepts_select(x, 0, d, 0):
            return None  # a dtype torch's topk rejects: the override leaves it to torch
        for k in sorted({0, min(1, size), min(5, size), size // 3, size}):
            for largest in (True, False):
                want = [t.narrow(d, 0, k).contiguous() for t in refs.stable(largest)]
                got = kernels.topk(x, k, d, largest, 0)
                if not (_same(got[0], want[0]) and _same(got[1], want[1])):
                    return f"k={k} largest={largest}"
    elif op == "kthvalue":
        size = x.shape[d]
        if not size or not _kernels.accepts_select(x, 1, d, 1):
            return None  # a dtype torch's kthvalue rejects, or nothing to select
        for k in sorted({1, min(2, size), (size + 1) // 2, size}):
            for keepdim in (False, True):
                want = [t.narrow(d, k - 1, 1) for t in refs.stable(False)]
                if not keepdim:
                    want = [t.squeeze(d) for t in want]
                got = kernels.kthvalue(x, k, d, keepdim, 0)
                if not (_same(got[0], want[0].contiguous()) and _same(got[1], want[1].contiguous())):
                    return f"k={k} keepdim={keepdim}"
    elif op == "unique":
        if x.dim() != 1 or not _kernels.accepts_unique(x):
            return None  # unique flattens: the 1-D cases cover it
        want = _unique_reference(x, True, True)
        got = kernels.unique(x, True, True, 0)
        if not all(_same(g, w) for g, w in zip(got, want)):
            return "values, inverse or counts"
    return None


def run(kernels, ops):
    """{op: {"ok": bool, "detail": str, "cases": int, "seconds": float}} for `ops`: every case
    of the battery, each op checked until its first difference."""
    detail = {op: "" for op in ops}
    count = {op: 0 for op in ops}
    start = time.perf_counter()
    # torch's references on one thread: the battery's many small calls spend more on waking
    # OpenMP threads than they save (20x slower on a busy 2-core machine). Kwker's kernels run
    # on their own thread budget (threads=0), so its parallel paths are still checked.
    saved = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        _run_cases(kernels, ops, detail, count)
    finally:
        torch.set_num_threads(saved)
    seconds = round(time.perf_counter() - start, 3)
    return {op: {"ok": not detail[op], "detail": detail[op], "cases": count[op],
                 "seconds": seconds} for op in ops}


def _run_cases(kernels, ops, detail, count):
    for dtype in DTYPES:
        for label, x, d in cases(dtype):
            refs = _Refs(x, d)
            for op in ops:
                if detail[op]:
                    continue
                count[op] += 1
                try:
                    bad = _check_op(op, kernels, refs)
                except Exception as e:  # a kernel that raises differs from torch too
                    bad = f"raised {type(e).__name__}: {e}"
                if bad:
                    detail[op] = f"{str(dtype).replace('torch.', '')} {label}: {bad}"


# ---- the cache ----

def results(kind, kernels, ops):
    """Results for `ops`: from the cache where it has them (unless KWKER_SELF_CHECK=force),
    else run now and stored. Returns (results, how) with how "cache", "run" or "mixed"."""
    again = C.force()
    path = C.path(kind)
    stored, problem = C.read(kind)
    if problem:
        warnings.warn(f"kwker.torch_ops: the self-check cache {path} was unreadable "
                      f"({problem}); the self-check runs again and rewrites it",
                      RuntimeWarning, stacklevel=5)
    stored = dict(stored or {})
    todo = list(ops) if again else [op for op in ops if op not in stored]
    if todo:
        stored.update(run(kernels, todo))
        C.write(kind, stored)
    how = "run" if len(todo) == len(ops) else "cache" if not todo else "mixed"
    return {op: stored[op] for op in ops}, how
