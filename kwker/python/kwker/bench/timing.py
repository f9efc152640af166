"""Interleaved timing: kwker and its competitors alternate within every repeat.

A *timer* is anything with two methods:

    warm()          one untimed-for-results call (warm-up); returns its duration in seconds
    time(number)    `number` back-to-back calls with gc disabled; returns seconds per call

`LocalTimer` wraps a Python callable; the AVX2-only baseline uses a timer that forwards to a
child process (see `avx2.py`). A callable with a `prepare()` method gets it called before each
sample, outside the clock (the PyTorch rows switch kwker.torch_ops on or off there). Every sample runs `gc.collect()` first and keeps the garbage
collector off while the clock runs. The runner calls `gc.freeze()` once after its imports, so
that these collections only scan what the benchmark itself creates: with torch imported a full
`gc.collect()` takes ~90 ms.
"""
import gc
import math
import statistics
import time

perf_counter = time.perf_counter


class LocalTimer:
    def __init__(self, fn):
        self.fn = fn

    def _prepare(self):
        prepare = getattr(self.fn, "prepare", None)
        if prepare is not None:
            prepare()

    def warm(self):
        fn = self.fn
        self._prepare()
        gc.collect()
        t0 = perf_counter()
        fn()
        return perf_counter() - t0

    def time(self, number):
        fn = self.fn
        self._prepare()
        gc.collect()
        enabled = gc.isenabled()
        gc.disable()
        try:
            if number == 1:
                t0 = perf_counter()
                fn()
                t1 = perf_counter()
            else:
                rng = range(number)
                t0 = perf_counter()
                for _ in rng:
                    fn()
                t1 = perf_counter()
        finally:
            if enabled:
                gc.enable()
        return (t1 - t0) / number


def loops_for(seconds_per_call, min_time, cap=1_000_000):
    """How many calls one sample needs so that it lasts at least `min_time` seconds."""
    if min_time <= 0 or seconds_per_call >= min_time:
        return 1
    return max(1, min(cap, math.ceil(min_time / max(seconds_per_call, 1e-9))))


def interleaved(kwker_timer, competitor_timers, repeats, min_time, alternate=None):
    """Warm up every timer once, then run `repeats` rounds of k, c1, c2, ..., k, c1, c2, ...
    `alternate`: two competitor keys that swap places every other round (the two sides of a
    before/after comparison, so that neither always runs right after the other).

    Returns {"kwker": [s, ...], "<competitor key>": [s, ...], "loops": {key: number}}:
    seconds per call for every repeat. The loop count of each timer is fixed from its
    warm-up call (the warm-up result itself is discarded).
    """
    timers = [("kwker", kwker_timer)] + list(competitor_timers.items())
    try:
        loops, warm = {}, {}
        for key, timer in timers:
            warm[key] = timer.warm()
            loops[key] = loops_for(warm[key], min_time)
        # A second, short calibration for fast calls: the first call also pays one-off
        # costs (page faults of fresh buffers, lazy imports, the pool's first wake) and would
        # pick too few loops; also for a first call that took up to 10 sample times, which
        # had left 1-ms calls (row argsorts of 1e6 keys) timed one call per sample.
        for key, timer in timers:
            if loops[key] > 1 or warm[key] < 10 * min_time:
                loops[key] = loops_for(timer.time(loops[key]), min_time)
        times = {key: [] for key, _ in timers}
        swapped = list(timers)
        if alternate and all(k in competitor_timers for k in alternate):
            i, j = (next(p for p, (k, _) in enumerate(timers) if k == a) for a in alternate)
            swapped[i], swapped[j] = swapped[j], swapped[i]
            # The same loop count on both sides: a sample's length changes what it averages
            # (the first call of a sample, after the other timers ran, is the slowest).
            a, b = alternate
            loops[a] = loops[b] = max(loops[a], loops[b])
        for r in range(repeats):
            gc.collect()
            for key, timer in (swapped if r % 2 else timers):
                times[key].append(timer.time(loops[key]))
    finally:
        gc.collect()
    times["loops"] = loops
    return times


def summarize(kwker_times, competitor_times):
    """Per-repeat ratios competitor/kwker (>1: kwker faster) and their median and spread."""
    ratios = [c / k if k > 0 else math.inf for k, c in zip(kwker_times, competitor_times)]
    return {
        "kwker_s": statistics.median(kwker_times),
        "competitor_s": statistics.median(competitor_times),
        "ratio_median": statistics.median(ratios),
        "ratio_min": min(ratios),
        "ratio_max": max(ratios),
        "ratios": ratios,
    }
