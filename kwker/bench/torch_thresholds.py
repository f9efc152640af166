#!/usr/bin/env python3
"""Measures, per operator and dtype, the size from which kwker.torch_ops' overrides beat torch.

    python kwker/bench/torch_thresholds.py                 # both implementations, print
    python kwker/bench/torch_thresholds.py --write         # also rewrite thresholds.json
    python kwker/bench/torch_thresholds.py --ops topk,kthvalue --write   # those ops only

For each implementation (the Python-registered and the compiled operators), op and dtype it
times the call users make (torch.sort(x), torch.topk(x, 10), torch.kthvalue(x, n // 2 + 1),
torch.unique(x)) through torch's dispatcher, once with the override forced on and once with it
off (torch's own kernel), on 1-D tensors of 2^k elements. The threshold is the smallest size
from which the override was faster at every larger size tried (up to 2^16, beyond which every
kernel measured here wins by far); an op that never wins gets the "never" value.

Timing: torch.set_num_threads(1) and thread CPU time (time.thread_time) so that other load
on a shared machine barely matters; each point is the median of 5 interleaved samples of at
least 5 ms. Dtypes that torch's own kernel rejects for an op (topk / kthvalue of bool and wide
unsigned types) are skipped: the override leaves them to torch anyway.
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time

import torch

import kwker.torch_ops as ops
from kwker._torch import extension
from kwker._torch import kernels as _kernels
from kwker.torch_ops import _thresholds

SIZES = [2 ** k for k in range(0, 17)]
MIN_TIME, REPEATS = 0.005, 5


def _sample(fn):
    fn()
    loops = 1
    while True:
        t0 = time.thread_time()
        for _ in range(loops):
            fn()
        t = time.thread_time() - t0
        if t >= MIN_TIME:
            return t / loops
        loops *= 2 if t <= 0 else max(2, int(MIN_TIME / t * 1.3))


def _data(dtype, n):
    g = torch.Generator().manual_seed(n)
    if dtype == torch.bool:
        return torch.randint(0, 2, (n,), generator=g).bool()
    if dtype.is_floating_point:
        return torch.randn(n, generator=g).to(dtype)
    if dtype in (torch.uint16, torch.uint32, torch.uint64):
        signed = {torch.uint16: torch.int16, torch.uint32: torch.int32,
                  torch.uint64: torch.int64}[dtype]
        info = torch.iinfo(signed)
        return torch.randint(info.min, info.max, (n,), generator=g).to(signed).view(dtype)
    info = torch.iinfo(dtype)
    return torch.randint(info.min, info.max, (n,), generator=g).to(dtype)


def _call(op, x):
    n = x.numel()
    if op == "sort":
        # 1-D ascending wide unsigned sorts of >= 32768 elements raise in torch: descending.
        return lambda: torch.sort(x, descending=x.dtype in _kernels._NO_RADIX)
    if op == "topk":
        return lambda: torch.topk(x, min(10, n))
    if op == "kthvalue":
        return lambda: torch.kthvalue(x, n // 2 + 1)
    return lambda: torch.unique(x)


def _sizes(op, dtype):
    # torch raises for 1-D ascending sorts (sort: those are timed descending) and for every
    # unique of wide unsigned tensors from 32768 elements on: the override leaves them to it.
    if op == "unique" and dtype in _kernels._NO_RADIX:
        return [n for n in SIZES if n < _kernels.RADIX_MIN]
    return SIZES


def _dtypes(op):
    if op in ("topk", "kthvalue"):
        return [d for d in _kernels.CODES if d in _kernels.SELECT_DTYPES]
    return list(_kernels.CODES)


def measure(kind, log, wanted=None):
    """{op: {dtype name: threshold}} for implementation kind (the ops in wanted, default all)."""
    zero = {op: [0] * _thresholds.KWKER_DTYPE_COUNT for op in ops.OPS}
    real_table = _thresholds.table
    _thresholds.table = lambda k, wanted: {op: zero[op] for op in wanted}
    out = {}
    try:
        for op in wanted or ops.OPS:
            out[op] = {}
            for dtype in _dtypes(op):
                faster = []
                sizes = _sizes(op, dtype)
                for n in sizes:
                    x = _data(dtype, n)
                    fn = _call(op, x)
                    on, off = [], []
                    for _ in range(REPEATS):
                        ops.install(ops=[op], compiled=kind == "compiled")
                        on.append(_sample(fn))
                        ops.uninstall()
                        off.append(_sample(fn))
                    faster.append(statistics.median(on) < statistics.median(off))
                threshold = _thresholds.NEVER
                for i in range(len(sizes) - 1, -1, -1):
                    if not faster[i]:
                        break
                    threshold = sizes[i]
                name = str(dtype).replace("torch.", "")
                out[op][name] = threshold
                log(f"{kind:8} {op:8} {name:8} threshold {threshold}")
    finally:
        _thresholds.table = real_table
        ops.uninstall()
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--write", action="store_true", help="rewrite torch_ops/thresholds.json")
    p.add_argument("--kinds", default="python,compiled")
    p.add_argument("--ops", default=",".join(ops.OPS),
                   help="ops to measure (the others keep their thresholds.json entries)")
    args = p.parse_args(argv)
    wanted = [o for o in args.ops.split(",") if o]
    unknown = [o for o in wanted if o not in ops.OPS]
    if unknown:
        p.error(f"--ops: unknown op(s) {', '.join(unknown)}; choose from {', '.join(ops.OPS)}")
    torch.set_num_threads(1)
    os.environ.setdefault("KWKER_CACHE_DIR", tempfile.mkdtemp(prefix="kwker-thresholds-"))
    result = _thresholds.load()
    for kind in args.kinds.split(","):
        if kind == "compiled" and not extension.availability()[0]:
            print(f"skipping compiled: {extension.availability()[1]}", file=sys.stderr)
            continue
        measured = measure(kind, lambda s: print(s, file=sys.stderr, flush=True), wanted)
        result[kind] = {**result.get(kind, {}), **measured}
    text = json.dumps(result, indent=1, sort_keys=True) + "\n"
    print(text)
    if args.write:
        with open(_thresholds._FILE, "w", encoding="utf-8") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
