"""Section 15: Kwker's threaded kernels when the CPU is shared (python -m kwker bench --only
contention; never part of a plain run: it starts processes of its own and takes minutes).

Each workload runs in a child process of its own. The child cycles through *phases* in slots
of wall-clock time (SLOT_S each, SLOTS for slow workloads): Kwker on the default threads, the competitor, Kwker on one
thread. Every call is timed and kept in the phase its slot names; calls that straddle a slot's
end are dropped. Phases are read off the shared clock, so two copies of a child started
together run the same phase at the same time: the "pair" load really is two Kwker processes
(then two torch processes) side by side.

Loads, each started by this module and stopped when the measurement ends:
  alone  the child alone;
  busy   beside one process spinning a CPU (a pure-Python loop), as another job would;
  pair   two copies of the same child at once.
Slow-down = time under the load / time alone, per side, medians of the repeats (alone and
loaded measured alternately). A row's ratio is the competitor's slow-down x 1.25 / Kwker's
slow-down (target >= 1: Kwker slows down at most 1.25x as much as the competitor), and a second
row per load checks Kwker's default threads against its own one-thread run under the same load
(never slower: >= 0.97).

Workloads: a float32 sort of 10,000,000 keys (kwker.sort vs torch.sort), a stack of 16 linear
layers (hidden 1024, FFN 2816, batch 1) in each CPU-backend mode against torch eager (float32 for
"high", "int8" and "int4"; bfloat16 for "medium"), the same stack on a prompt of PROMPT_ROWS
rows in "high" ("prompt-high": the float prompt kernels, against torch's float32 GEMM, which
uses both threads too), and SmolLM2-135M-Instruct's decode
("decode-smollm2": generate() of DECODE_TOKENS greedy tokens after a 5-token prompt, Kwker "high"
with its fused decode step against torch eager float32, the model of section 14). In one
process, two more: "mixed", the stack with every second layer left to torch (torch's OpenMP
threads between Kwker's calls, as in a decoder), whose Kwker run must be no slower than the
same with Kwker at threads=1; and "wake", the first call after 100 ms asleep against a warm call
(within 1.25x), for the "high" stack and a sort of 1,000,000 keys (and, without a target, one
layer that fits the caches).

The busy process and the copies are this machine's own: nothing leaves it.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

SECTION = "15"
SLOT_S = 0.25
# Workloads whose competitor's call takes longer get longer slots (torch.sort of 1e7 float32 takes
# about 1.3 s on 2 vCPUs): a call that straddles a slot's end is dropped, so a slot must hold a few.
SLOTS = {"sort1e7": 4.0, "decode-smollm2": 3.0, "prompt-high": 1.0}
MEASURE_S = 3.0
SLOWDOWN_FACTOR = 1.25     # Kwker's slow-down at most this times the competitor's
NO_SLOWER = 0.97
WAKE_TARGET = 1.25
# Rows of the wake workload without a target: one layer of 11.5 MB, whose weights other tenants'
# work evicts from the caches during the 100 ms (its first call streams them from memory, its warm
# calls from the L3): that difference is the cache's, not the threads'.
WAKE_INFO = ("linear",)
MODES = ("high", "medium", "int8", "int4")
DECODE_TOKENS = 4
PROMPT_ROWS = 128
WORKLOADS = (("sort1e7",) + tuple(f"stack-{m}" for m in MODES) + ("prompt-high",)
             + ("decode-smollm2",))
LOADS = ("busy", "pair")


def selected(only):
    return any("contention" in s for s in only)


def chosen(only):
    """The workloads --only names: `contention` runs all, `contention/stack-int8` one."""
    named = [s.split("/", 1)[1] for s in only if s.startswith("contention/")]
    if any(s == "contention" for s in only) or not named:
        return list(WORKLOADS) + ["stack-mixed", "wake"]
    return [w for w in list(WORKLOADS) + ["stack-mixed", "wake"] if any(w.startswith(n) for n in named)]


# ---- the child ------------------------------------------------------------------------------

def _stack(torch):
    torch.manual_seed(0)
    layers = []
    for _ in range(8):
        layers += [torch.nn.Linear(1024, 2816), torch.nn.Linear(2816, 1024)]
    return torch.nn.Sequential(*layers).eval()


def _callables(workload, torch):
    """[(phase name, description, fn)] for the workload: kwker, competitor, kwker-1."""
    import kwker
    if workload == "sort1e7":
        import numpy as np
        a = np.random.default_rng(0).random(10_000_000, dtype=np.float32)
        t = torch.from_numpy(a.copy())
        return [("kwker", "kwker.sort(a)", lambda: kwker.sort(a)),
                ("competitor", "torch.sort(t)", lambda: torch.sort(t)),
                ("kwker-1", "kwker.sort(a, threads=1)", lambda: kwker.sort(a, threads=1))]
    import copy

    import kwker.cpu_backend as cb
    if workload == "decode-smollm2":
        from .cpu_backend import PROMPT, smollm2
        model = smollm2(torch)
        fast = cb.optimize(model, "high")
        one = cb.optimize(model, "high", threads=1)
        ids = torch.tensor([PROMPT])

        def gen(m):
            return lambda: m.generate(ids, max_new_tokens=DECODE_TOKENS,
                                      min_new_tokens=DECODE_TOKENS, do_sample=False)
        what = f".generate() of {DECODE_TOKENS} tokens"
        return [("kwker", f"kwker.cpu_backend.optimize(smollm2, 'high'){what}", gen(fast)),
                ("competitor", "torch eager float32", gen(model)),
                ("kwker-1", f"kwker.cpu_backend.optimize(smollm2, 'high', threads=1){what}",
                 gen(one))]
    if workload == "prompt-high":
        model = _stack(torch)
        fast = cb.optimize(model, "high")
        one = cb.optimize(model, "high", threads=1)
        xp = torch.randn(PROMPT_ROWS, 1024)
        what = f" on {PROMPT_ROWS} rows"
        return [("kwker", f"kwker.cpu_backend.optimize(stack, 'high'){what}", lambda: fast(xp)),
                ("competitor", f"torch eager float32{what}", lambda: model(xp)),
                ("kwker-1", f"kwker.cpu_backend.optimize(stack, 'high', threads=1){what}",
                 lambda: one(xp))]
    mode = workload.split("-", 1)[1]
    model = _stack(torch)
    ref = copy.deepcopy(model).to(torch.bfloat16) if mode == "medium" else model
    x = torch.randn(1, 1024)
    if mode == "mixed":
        fast = cb.optimize(model, "high")
        one = cb.optimize(model, "high", threads=1)
        for i in range(1, 16, 2):   # every second layer stays torch's
            fast[i] = model[i]
            one[i] = model[i]
        return [("kwker", "16 layers, odd ones torch's, kwker 'high' on the default threads",
                 lambda: fast(x)),
                ("competitor", "torch eager float32 (all 16 layers)", lambda: model(x)),
                ("kwker-1", "the same with kwker at threads=1", lambda: one(x))]
    fast = cb.optimize(model, mode)
    one = cb.optimize(model, mode, threads=1)
    xr = x.to(torch.bfloat16) if mode == "medium" else x
    cdesc = "torch eager bfloat16" if mode == "medium" else "torch eager float32"
    return [("kwker", f"kwker.cpu_backend.optimize(stack, {mode!r})", lambda: fast(x)),
            ("competitor", cdesc, lambda: ref(xr)),
            ("kwker-1", f"kwker.cpu_backend.optimize(stack, {mode!r}, threads=1)",
             lambda: one(x))]


def _child_phases(workload, seconds, slot_s):
    import torch
    torch.set_num_threads(min(2, os.cpu_count() or 1))
    calls = _callables(workload, torch)
    with torch.no_grad():
        for _, _, fn in calls:       # warm-up: packing, pools, caches
            for _ in range(3):
                fn()
        # Ready; the parent answers with the shared start time (copies start together).
        print("ready", flush=True)
        start_at = float(sys.stdin.readline())
        while time.time() < start_at:
            time.sleep(0.002)
        times = {name: [] for name, _, _ in calls}
        end = start_at + seconds
        while True:
            now = time.time()
            if now >= end:
                break
            slot = int((now - start_at) / slot_s)
            name, _, fn = calls[slot % len(calls)]
            t0 = time.perf_counter()
            fn()
            dt = time.perf_counter() - t0
            if int((time.time() - start_at) / slot_s) == slot:
                times[name].append(dt)
    return {"median_s": {k: statistics.median(v) if v else None for k, v in times.items()},
            "calls": {k: len(v) for k, v in times.items()},
            "desc": {name: desc for name, desc, _ in calls}}


def _child_wake(seconds):
    """First call after 100 ms asleep against the warm call, for a linear layer and a sort."""
    import numpy as np
    import torch

    import kwker
    import kwker.cpu_backend as cb
    torch.set_num_threads(min(2, os.cpu_count() or 1))
    stack = cb.optimize(_stack(torch), "high")
    torch.manual_seed(0)
    layer = cb.optimize(torch.nn.Sequential(torch.nn.Linear(1024, 2816)), "high")
    x = torch.randn(1, 1024)
    a = np.random.default_rng(0).random(1_000_000, dtype=np.float32)
    fns = {"stack-high": lambda: stack(x), "linear": lambda: layer(x),
           "sort1e6": lambda: kwker.sort(a)}
    out = {}
    with torch.no_grad():
        for name, fn in fns.items():
            cold, warm = [], []
            end = time.time() + seconds
            while time.time() < end or len(cold) < 5:
                time.sleep(0.1)
                t0 = time.perf_counter()
                fn()
                cold.append(time.perf_counter() - t0)
                for _ in range(4):
                    t0 = time.perf_counter()
                    fn()
                    w = time.perf_counter() - t0
                warm.append(w)
            out[name] = {"cold_s": statistics.median(cold), "warm_s": statistics.median(warm),
                         "calls": len(cold)}
    return out


def child_main(argv=None):
    p = argparse.ArgumentParser(prog="python -m kwker.bench.contention")
    p.add_argument("workload", choices=list(WORKLOADS) + ["stack-mixed", "wake"])
    p.add_argument("--seconds", type=float, default=MEASURE_S)
    p.add_argument("--slot", type=float, default=SLOT_S)
    a = p.parse_args(argv)
    if a.workload == "wake":
        res = _child_wake(a.seconds)
    else:
        res = _child_phases(a.workload, a.seconds, a.slot)
    print(json.dumps(res))
    return 0


# ---- the parent -----------------------------------------------------------------------------

_SPIN = "import time\nend = time.time() + {s}\nwhile time.time() < end:\n    pass\n"


def _spawn(args):
    return subprocess.Popen([sys.executable, "-m", "kwker.bench.contention"] + args,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _collect(proc, timeout):
    out, err = proc.communicate(timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"contention child {proc.args[3:]} exited {proc.returncode}: "
                           f"{err.strip().splitlines()[-1] if err.strip() else 'no message'}")
    return json.loads(out.strip().splitlines()[-1])


_SETUP_TIMEOUT_S = 300.0


def _close(proc):
    if proc.poll() is None:
        proc.kill()
    for pipe in (proc.stdin, proc.stdout, proc.stderr):
        if pipe is not None and not pipe.closed:
            pipe.close()
    proc.wait()


def _ready(proc):
    line = proc.stdout.readline()
    if line.strip() != "ready":
        proc.kill()
        err = proc.stderr.read().strip()
        _close(proc)
        raise RuntimeError(f"contention child {proc.args[3:]} failed before it measured: "
                           f"{err.splitlines()[-1] if err else 'no message'}")


def measure(workload, load, seconds=MEASURE_S):
    """One measurement: the child's phases under `load` ("alone", "busy", "pair")."""
    slot = SLOTS.get(workload, SLOT_S)
    seconds = max(seconds, 3 * slot)   # every phase at least once
    args = [workload, "--seconds", str(seconds), "--slot", str(slot)]
    procs = [_spawn(args)]
    if load == "pair":
        procs.append(_spawn(args))
    spinner = None
    try:
        for p in procs:   # one after the other: each packs its model before the start
            _ready(p)
        if load == "busy":
            spinner = subprocess.Popen([sys.executable, "-c", _SPIN.format(s=seconds + 2.0)])
        start = f"{time.time() + 0.3!r}\n"
        for p in procs:
            p.stdin.write(start)
            p.stdin.flush()
        results = [_collect(p, seconds + 120) for p in procs]
    finally:
        for p in procs:
            _close(p)
        if spinner is not None:
            spinner.kill()
            spinner.wait()
    med = {}
    for name in results[0]["median_s"]:
        vals = [r["median_s"][name] for r in results if r["median_s"][name] is not None]
        med[name] = statistics.mean(vals) if vals else None
    return {"median_s": med, "desc": results[0]["desc"],
            "calls": [r["calls"] for r in results]}


def _med(xs):
    """Median of the values a phase produced (None where no call fit in its slots)."""
    xs = [v for v in xs if v is not None]
    return statistics.median(xs) if xs else None


def _q(a, b):
    return None if a is None or b is None else a / b


def _row(name, kdesc, cdesc, ratios, target, extra):
    med = statistics.median(ratios)
    row = {"name": name, "section": SECTION, "baseline": "native", "n": 1, "shape": None,
           "dtype": "float32", "kwker": kdesc, "competitor": cdesc, "competitor_desc": cdesc,
           "target": target, "passed": None if target is None else bool(med >= target),
           "repeats": len(ratios), "ratio_median": med, "ratio_min": min(ratios),
           "ratio_max": max(ratios), "kwker_s": extra.pop("kwker_s", None),
           "competitor_s": extra.pop("competitor_s", None)}
    row.update(extra)
    return row


def run(runner, log, repeats=5, workloads=None, seconds=MEASURE_S):
    """Appends section 15's rows to runner.rows; returns the section's environment facts."""
    workloads = list(WORKLOADS) + ["stack-mixed", "wake"] if workloads is None else workloads
    table = []
    for wl in [w for w in workloads if w != "wake"]:
        loads = ("alone",) + (LOADS if wl != "stack-mixed" else ())
        runs = {ld: [] for ld in loads}
        for r in range(repeats):
            for ld in loads:
                res = measure(wl, ld, seconds)
                runs[ld].append(res)
                m = res["median_s"]
                log(f"  {wl} {ld} #{r + 1}: " + ", ".join(
                    f"{k} {'—' if v is None else f'{v * 1e3:.2f} ms'}" for k, v in m.items()))
        desc = runs["alone"][0]["desc"]
        alone = runs["alone"]
        med = {ld: {k: _med(x["median_s"][k] for x in runs[ld])
                    for k in ("kwker", "competitor", "kwker-1")} for ld in loads}
        if wl == "stack-mixed":
            ratios = [q for q in (_q(a["median_s"]["kwker-1"], a["median_s"]["kwker"])
                                  for a in alone) if q is not None]
            if not ratios:
                runner.skip(f"contention/{wl}", "no call completed inside a slot")
                continue
            runner.rows.append(_row(f"contention/{wl}/in-process vs kwker threads=1",
                                    desc["kwker"], desc["kwker-1"], ratios, NO_SLOWER,
                                    {"kwker_s": med["alone"]["kwker"],
                                     "competitor_s": med["alone"]["kwker-1"]}))
            table.append({"workload": wl, "load": "torch between kwker calls",
                          "kwker_alone_s": med["alone"]["kwker"],
                          "kwker1_alone_s": med["alone"]["kwker-1"],
                          "competitor_alone_s": med["alone"]["competitor"]})
            continue
        for ld in LOADS:
            # repeat r's loaded run against repeat r's alone run: the pairs share the host's state
            pairs = [(_q(x["median_s"]["kwker"], a["median_s"]["kwker"]),
                      _q(x["median_s"]["competitor"], a["median_s"]["competitor"]))
                     for x, a in zip(runs[ld], alone)]
            pairs = [(k, c) for k, c in pairs if k is not None and c is not None]
            if not pairs:
                runner.skip(f"contention/{wl}/{ld}", "no call completed inside a slot")
                continue
            ksd = [k for k, _ in pairs]
            csd = [c for _, c in pairs]
            ratios = [c * SLOWDOWN_FACTOR / k for k, c in pairs]
            runner.rows.append(_row(
                f"contention/{wl}/{ld}/slow-down vs {desc['competitor']}", desc["kwker"],
                desc["competitor"], ratios, 1.0,
                {"kwker_s": med[ld]["kwker"], "competitor_s": med[ld]["competitor"],
                 "kwker_slowdown": statistics.median(ksd),
                 "competitor_slowdown": statistics.median(csd)}))
            own = [q for q in (_q(x["median_s"]["kwker-1"], x["median_s"]["kwker"])
                               for x in runs[ld]) if q is not None]
            if own:
                runner.rows.append(_row(
                    f"contention/{wl}/{ld}/default threads vs kwker threads=1", desc["kwker"],
                    desc["kwker-1"], own, NO_SLOWER,
                    {"kwker_s": med[ld]["kwker"], "competitor_s": med[ld]["kwker-1"]}))
            table.append({"workload": wl, "load": ld,
                          "kwker_alone_s": med["alone"]["kwker"], "kwker_s": med[ld]["kwker"],
                          "kwker_slowdown": statistics.median(ksd),
                          "competitor_alone_s": med["alone"]["competitor"],
                          "competitor_s": med[ld]["competitor"],
                          "competitor_slowdown": statistics.median(csd),
                          "kwker1_s": med[ld]["kwker-1"]})
    wake = []
    for r in range(repeats if "wake" in workloads else 0):
        proc = _spawn(["wake", "--seconds", "1.0"])
        wake.append(_collect(proc, _SETUP_TIMEOUT_S))
    for name in (wake[0] if wake else ()):
        ratios = [w[name]["warm_s"] * WAKE_TARGET / w[name]["cold_s"] for w in wake]
        target = None if name in WAKE_INFO else 1.0
        cold = statistics.median(w[name]["cold_s"] for w in wake)
        warm = statistics.median(w[name]["warm_s"] for w in wake)
        log(f"  wake {name}: first call after 100 ms asleep {cold * 1e6:.0f} us, warm "
            f"{warm * 1e6:.0f} us")
        runner.rows.append(_row(f"contention/wake/{name}/after 100 ms asleep vs warm x1.25",
                                f"{name}: first call after time.sleep(0.1)",
                                f"{name}: a warm call, x{WAKE_TARGET}", ratios, target,
                                {"kwker_s": cold, "competitor_s": warm}))
        table.append({"workload": f"wake/{name}", "load": "100 ms asleep", "kwker_s": cold,
                      "kwker_alone_s": warm})
    return {"slot_s": SLOT_S, "measure_s": seconds, "repeats": repeats, "table": table}


def intro(env):
    """Markdown: each workload's times and slow-downs."""
    if not env:
        return ""
    lines = ["Each side alone and under the load, medians of the repeats; slow-down = loaded / "
             "alone. busy: one other process spinning a CPU; pair: two copies of the same "
             "workload at once.", "",
             "| workload | load | kwker alone | kwker loaded | kwker slow-down | kwker threads=1 "
             "loaded | competitor alone | competitor loaded | competitor slow-down |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]

    def ms(v):
        return "—" if v is None else f"{v * 1e3:.2f} ms"
    for r in env["table"]:
        sd = r.get("kwker_slowdown")
        csd = r.get("competitor_slowdown")
        lines.append(f"| {r['workload']} | {r['load']} | {ms(r.get('kwker_alone_s'))} | "
                     f"{ms(r.get('kwker_s'))} | {'—' if sd is None else f'{sd:.2f}x'} | "
                     f"{ms(r.get('kwker1_s', r.get('kwker1_alone_s')))} | "
                     f"{ms(r.get('competitor_alone_s'))} | {ms(r.get('competitor_s'))} | "
                     f"{'—' if csd is None else f'{csd:.2f}x'} |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(child_main())
