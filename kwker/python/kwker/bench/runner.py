"""Command line and driver of the benchmark: python -m kwker bench [options]."""
import argparse
import gc
import importlib
import json
import os
import platform
import sys
import time

import numpy as np

import kwker

from . import avx2, before, cases, contention, cpu_backend, load, report, timing, torch_cases

SCHEMA = "kwker.bench"
SCHEMA_VERSION = 1


def _parser():
    p = argparse.ArgumentParser(
        prog="python -m kwker bench",
        description="Kwker vs NumPy / Polars / torch, timed in the same run with interleaved "
                    "repeats. Ratio = competitor time / kwker time (> 1: kwker faster).")
    size = p.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true",
                      help="reduced sizes (n = 1e6, 1000x1000 matrix), 5 repeats, no AVX2-only "
                           "baseline: about 30 s")
    size.add_argument("--smoke", action="store_true",
                      help="tiny sizes for the test-suite: checks the machinery, measures "
                           "nothing meaningful")
    p.add_argument("--json", action="store_true",
                   help="print one JSON object (schema kwker.bench, version 1) instead of "
                        "Markdown")
    p.add_argument("--repeats", type=int, metavar="N",
                   help="interleaved repeats per row (default: 9, or 5 for the slow rows and "
                        "in --quick)")
    p.add_argument("--only", action="append", metavar="SUBSTRING", default=[],
                   help="run only rows whose name contains SUBSTRING (repeatable; any match)")
    p.add_argument("--no-avx2-baseline", action="store_true",
                   help="skip section 8 (np.sort with AVX-512 dispatch disabled, in a child "
                        "process, vs kwker's avx2 engine)")
    p.add_argument("--before", metavar="LIBKWKER",
                   help="also time every case's kwker call over this build's libkwker and "
                        "over LIBKWKER (a previous build with the same C API), both through "
                        "ctypes in this process, in the same interleaved repeats (10 by "
                        "default, whole pairs), and report before / after per case (the "
                        "AVX2-only and CPU-backend sections excepted)")
    p.add_argument("--isa", choices=("native", "avx2"), default="native",
                   help="avx2: the whole run held to AVX2, in a child process: kwker's avx2 "
                        "engine (KWKER_ISA), NumPy without its AVX-512 dispatch "
                        "(NPY_DISABLE_CPU_FEATURES), torch at ATEN_CPU_CAPABILITY=avx2; Polars "
                        "and pandas run as they are (no run-time switch; the report says so)")
    p.add_argument("--save", metavar="PATH",
                   help="also write the JSON result to PATH (the Markdown still goes to stdout)")
    p.add_argument("--list", action="store_true", help="list the row names and exit")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    return p


def optional_import(name):
    """(module, None) or (None, reason). Tests monkeypatch this to simulate a missing module."""
    try:
        return importlib.import_module(name), None
    except Exception as exc:  # ImportError, or a broken install
        return None, f"{name} is not importable ({type(exc).__name__}: {exc})"


def loaded_libraries():
    """Path, modification time and sha256 prefix of the kwker binaries this process loaded,
    so that a result can be tied to a build (Linux: /proc/self/maps; elsewhere empty)."""
    import datetime
    import hashlib
    import os
    out = {}
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f if "kwker" in line and "/" in line}
    except OSError:
        return out
    for path in sorted(paths):
        name = os.path.basename(path)
        if not (name.startswith("libkwker") or name.startswith("_fast")):
            continue
        try:
            st = os.stat(path)
            with open(path, "rb") as f:
                digest = hashlib.sha256(f.read()).hexdigest()[:12]
        except OSError:
            continue
        out[name] = {"path": path, "sha256_12": digest,
                     "mtime": datetime.datetime.fromtimestamp(
                         st.st_mtime, datetime.timezone.utc).isoformat(timespec="seconds")}
    return out


def environment(mods, sizes, avx2_info=None):
    info = kwker.runtime_info()
    pl = mods.get("polars")
    torch = mods.get("torch")
    env = {
        "kwker_version": kwker.__version__,
        "backend": info.get("backend"),
        "engine": kwker.get_isa(),
        "engines": kwker.available_isas(),
        "threads_budget": kwker.get_max_threads(),
        "cpu_brand": info.get("cpu", {}).get("brand"),
        "cpu_vendor": info.get("cpu", {}).get("vendor"),
        "logical_cpus": info.get("cpu", {}).get("logical_cpus"),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "numpy_simd": avx2.numpy_simd(),
        "torch": getattr(torch, "__version__", None),
        "polars": getattr(pl, "__version__", None),
        "polars_threads": None,
        "optional_modules": {name: ("used" if mods.get(name) is not None else
                                    mods.get(name + ".reason", "not needed by the selected rows"))
                             for name in ("polars", "torch", "pandas", "distributed")},
        "binaries": loaded_libraries(),
        "preset": sizes.preset,
        "reduced_sizes": sizes.preset != "full",
        "sizes": sizes.as_dict(),
    }
    if pl is not None:
        try:
            env["polars_threads"] = pl.thread_pool_size()
        except Exception:
            pass
    if avx2_info is not None:
        env["avx2_baseline"] = avx2_info
    return env


class Runner:
    def __init__(self, args, sizes, log):
        self.args = args
        self.sizes = sizes
        self.log = log
        self.rows = []
        self.skipped = []
        self.mods = {}
        self.avx2_info = None
        self.before = None             # before.Sides when --before is given
        self.before_rows = []
        self.before_skipped = []       # cases whose kwker call did not reach the library
        self.before_missing = []       # (case, C function the before library lacks)

    def repeats(self, case):
        n = self.args.repeats or (self.sizes.slow_repeats if case.slow else self.sizes.repeats)
        if self.before is not None:
            n = before.repeats(n, given=bool(self.args.repeats))
        return n

    def run_case(self, case, comps, prefix="", remote=None, kwker_ctx=None, label=None):
        """Time `case` against `comps` (Competitor list) and append one row per competitor."""
        sizes = self.sizes
        runnable = []
        for comp in comps:
            name = case.row_name(label(comp) if label else comp.key, prefix)
            if comp.requires and self.mods.get(comp.requires) is None:
                reason = self.mods.get(comp.requires + ".reason", f"{comp.requires} missing")
                self.skip(name, reason)
            else:
                runnable.append((comp, name))
        if not runnable:
            return
        t0 = time.perf_counter()
        try:
            setup = case.setup(sizes, self.mods)
            sides = self.before if remote is None else None
            own = sides.wrap if sides is not None else (lambda fn: fn)
            kw_timer = timing.LocalTimer(own(setup.kwker))
            timers = {}
            for comp, _ in runnable:
                if remote is not None:
                    timers[comp.key] = avx2.RemoteTimer(remote, case.id, comp.key, sizes)
                else:
                    timers[comp.key] = timing.LocalTimer(own(setup.competitors[comp.key]))
            lacking = sides.lacks(setup.kwker) if sides is not None else None
            if lacking is not None:
                self.before_missing.append((case.id, lacking))
                sides = None                  # this case runs without the before side
            if sides is not None:
                timers.update(sides.timers(setup.kwker))
                served = sides.before_calls()
            ctxs = [c for c in (setup.ctx, kwker_ctx) if c is not None]
            min_time = sizes.small_min_time if case.small else sizes.min_time
            with _nested(ctxs):
                try:
                    times = timing.interleaved(kw_timer, timers, self.repeats(case), min_time,
                                               alternate=(before.AFTER, before.KEY))
                finally:
                    if sides is not None:   # before the contexts restore their controls
                        sides.restore()
            if sides is not None and sides.before_calls() == served:
                self.before_skipped.append(case.id)   # the call bypassed the backend
                del times[before.KEY]
        except Exception as exc:
            for _, name in runnable:
                self.skip(name, f"error: {type(exc).__name__}: {exc}", error=True)
            return
        finally:
            setup = kw_timer = timers = None
            gc.collect()
        for comp, name in runnable:
            s = timing.summarize(times["kwker"], times[comp.key])
            target = comp.target_for(remote is not None or os.environ.get(ISA_CHILD) == "avx2")
            row = {
                "name": name,
                "section": "8" if remote is not None else case.section,
                "baseline": "avx2-only" if remote is not None else "native",
                "n": case.n(sizes),
                "shape": case.shape(sizes) if case.shape else None,
                "dtype": case.dtype,
                "kwker": case.kwker_desc + (" with kwker.config(isa='avx2')"
                                            if remote is not None else ""),
                "kwker_s": s["kwker_s"],
                "competitor": label(comp) if label else comp.key,
                "competitor_desc": comp.desc + (" in the NumPy AVX2-only child process"
                                                if remote is not None else ""),
                "competitor_s": s["competitor_s"],
                "ratio_median": s["ratio_median"],
                "ratio_min": s["ratio_min"],
                "ratio_max": s["ratio_max"],
                "ratios": s["ratios"],
                "target": target,
                "passed": None if target is None else bool(s["ratio_median"] >= target),
                "repeats": len(times["kwker"]),
                "loops": {"kwker": times["loops"]["kwker"],
                          "competitor": times["loops"][comp.key]},
                "kwker_times_s": times["kwker"],
                "competitor_times_s": times[comp.key],
            }
            self.rows.append(row)
        if before.KEY in times:
            self.before_rows.append(before.row(case, sizes, times[before.AFTER],
                                               times[before.KEY]))
        self.log(f"  {case.id:34s} {time.perf_counter() - t0:6.1f} s   " + ", ".join(
            f"{r['competitor']}: {r['ratio_median']:.2f}x" for r in self.rows[-len(runnable):])
            + (f", before/after: {self.before_rows[-1]['ratio_median']:.2f}x"
               if before.KEY in times else ""))

    def skip(self, name, reason, error=False):
        self.skipped.append({"name": name, "reason": reason, "error": error})
        self.log(f"  skipped {name}: {reason}")


class _nested:
    def __init__(self, ctxs):
        self.ctxs = ctxs
        self.stack = None

    def __enter__(self):
        import contextlib
        self.stack = contextlib.ExitStack()
        for c in self.ctxs:
            self.stack.enter_context(c)
        return self

    def __exit__(self, *exc):
        return self.stack.__exit__(*exc)


def _selected(args, name):
    return not args.only or any(s in name for s in args.only)


def _avx2_label(comp):
    return f"{comp.key}[AVX2-only]"


def _avx2_comps(case):
    return [c for c in case.competitors if c.key.startswith("np.sort")]


def _run_all(runner, plan, avx2_plan, do_avx2, preset, log):
    """Run the native rows, then the AVX2-only baseline rows; sets runner.avx2_info."""
    with kwker.config():               # restore every runtime control afterwards
        log(f"kwker bench ({preset}): {sum(len(c) for _, c in plan)} rows"
            + (f" + {sum(len(c) for _, c in avx2_plan)} AVX2-only baseline rows"
               if do_avx2 and avx2_plan else ""))
        for case, comps in plan:
            runner.run_case(case, comps)
        if not avx2_plan:
            return
        if not do_avx2:
            runner.avx2_info = {"skipped": "--quick" if preset == "quick"
                                else "--no-avx2-baseline"}
            return
        if "avx2" not in kwker.available_isas():
            runner.avx2_info = {"error": "kwker's avx2 engine does not run on this CPU"}
            for case, comps in avx2_plan:
                for c in comps:
                    runner.skip(case.row_name(_avx2_label(c), "avx2/"),
                                runner.avx2_info["error"])
            return
        try:
            child = avx2.Child()
        except Exception as exc:
            runner.avx2_info = {"error": str(exc)}
            for case, comps in avx2_plan:
                for c in comps:
                    runner.skip(case.row_name(_avx2_label(c), "avx2/"), str(exc))
            return
        runner.avx2_info = child.info
        log("AVX2-only baseline: np.sort in a child with NPY_DISABLE_CPU_FEATURES="
            f"'{avx2.DISABLE}' (dispatch found: {', '.join(child.info['dispatch_found'])}) "
            "vs kwker isa='avx2'")
        try:
            for case, comps in avx2_plan:
                runner.run_case(case, comps, prefix="avx2/", remote=child,
                                kwker_ctx=kwker.config(isa="avx2"), label=_avx2_label)
        finally:
            child.close()


# Set in the child that --isa avx2 starts, so that it runs the benchmark instead of starting another.
ISA_CHILD = "KWKER_BENCH_ISA"


def held_env(isa):
    """The environment variables that hold every competitor to `isa` (only "avx2"): torch's
    own kernels through ATEN_CPU_CAPABILITY, and the libraries it calls through theirs (oneDNN
    runs torch's bfloat16 linear layers: without ONEDNN_MAX_CPU_ISA a [256, 576] x [576, 1536]
    bfloat16 product ran AVX-512 BF16 in 1.6 ms on Zen 4, held to AVX2 in 16.7 ms), and a
    TorchInductor cache of the run's own (avx2.inductor_cache_dir: the user's cache must not
    receive graphs compiled for another capability)."""
    return {"KWKER_ISA": "avx2", "NPY_DISABLE_CPU_FEATURES": avx2.DISABLE,
            "ATEN_CPU_CAPABILITY": "avx2", **avx2.TORCH_LIBRARIES_AVX2, ISA_CHILD: isa,
            "TORCHINDUCTOR_CACHE_DIR": avx2.inductor_cache_dir(isa)}


def _run_held(argv, isa):
    """Re-runs this benchmark in a child whose NumPy and torch start held to `isa` (both read
    their switch at import, which this process has done); its output is this run's."""
    import os
    import subprocess
    rest, skip = [], False
    for a in argv:   # drop --isa X / --isa=X: the child runs with the env
        if skip:
            skip = False
            continue
        if a == "--isa":
            skip = True
            continue
        if not a.startswith("--isa="):
            rest.append(a)
    if "--no-avx2-baseline" not in rest:
        rest.append("--no-avx2-baseline")   # section 8 is this mode's NumPy row by row
    env = dict(os.environ)
    env.update(held_env(isa))
    return subprocess.call([sys.executable, "-m", "kwker", "bench"] + rest, env=env)


def held(env_isa, mods):
    """What each competitor ran, for the report of a run held to env_isa."""
    simd = avx2.numpy_simd()
    out, notes = avx2.kwker_torch_held(env_isa, mods.get("torch"))
    out.update({"isa": env_isa, "numpy_avx512": bool(simd.get("X86_V4")),
                "torch_inductor_cache": os.environ.get("TORCHINDUCTOR_CACHE_DIR"),
                "numpy_dispatch_found": simd.get("dispatch_found"),
                "not_held": ["Polars and pandas (no run-time ISA switch; they run as installed)"]
                + notes})
    if out["numpy_avx512"]:
        out["not_held"].append("NumPy still dispatches to AVX-512")
    return out


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:          # --help or a bad option
        return int(exc.code or 0)
    import os
    if args.isa != "native" and os.environ.get(ISA_CHILD) != args.isa and not args.list:
        return _run_held(argv, args.isa)
    if args.repeats is not None and args.repeats < 1:
        print("kwker bench: --repeats must be >= 1", file=sys.stderr)
        return 2
    preset = "quick" if args.quick else "smoke" if args.smoke else "full"
    sizes = cases.PRESETS[preset]
    do_avx2 = not args.no_avx2_baseline and preset != "quick"

    def log(msg):
        if not args.quiet:
            print(msg, file=sys.stderr, flush=True)

    all_cases = cases.all_cases()
    plan = []                          # (case, [competitor]) for the native sections
    for case in all_cases:
        comps = [c for c in case.competitors if _selected(args, case.row_name(c.key))]
        if comps:
            plan.append((case, comps))
    avx2_plan = []
    for case in all_cases:
        if not case.avx2:
            continue
        comps = [c for c in _avx2_comps(case)
                 if _selected(args, case.row_name(_avx2_label(c), "avx2/"))]
        if comps:
            avx2_plan.append((case, comps))

    if args.list:
        for case, comps in plan:
            for c in comps:
                print(case.row_name(c.key))
        for case, comps in avx2_plan:
            for c in comps:
                print(case.row_name(_avx2_label(c), "avx2/")
                      + ("" if do_avx2 else "   (not run: --quick or --no-avx2-baseline)"))
        return 0

    runner = Runner(args, sizes, log)
    if args.before:
        try:
            runner.before = before.Sides(args.before)
        except RuntimeError as exc:
            print(f"kwker bench: {exc}", file=sys.stderr)
            return 2
        info = runner.before.info
        log(f"kwker bench: before/after: this build against {info['library']} (libkwker "
            f"{info['version']}, engine {info['engine']}), both through ctypes in this "
            "process, in the same repeats")
    wall0 = time.perf_counter()
    needed = {c.requires for _, comps in plan for c in comps if c.requires}
    for name in ("polars", "torch", "pandas", "distributed"):
        if name in needed:
            mod, reason = optional_import(name)
            runner.mods[name] = mod
            if mod is None:
                runner.mods[name + ".reason"] = reason
                log(f"kwker bench: {reason}; its rows are skipped")
    if sizes.preset != "full":
        log(f"kwker bench: --{sizes.preset}: sizes are REDUCED (n = {sizes.n:,}, matrix "
            f"{sizes.rows}x{sizes.cols}, {sizes.segments:,} segments); the targets were set "
            f"for n = 10,000,000")

    meter = load.LoadMeter()
    gc.collect()
    gc.freeze()                        # keep per-sample gc.collect() cheap (see timing.py)
    try:
        _run_all(runner, plan, avx2_plan, do_avx2, preset, log)
    finally:
        gc.unfreeze()
        torch_cases.remove_cache()
        if runner.before is not None:
            runner.before.restore()
    cpu_env = None
    if cpu_backend.selected(args.only):
        log("section 14: CPU backend (loads SmolLM2 and a random Llama; several minutes)")
        try:
            cpu_env = cpu_backend.run(runner, log, repeats=args.repeats or 5)
        except Exception as exc:  # a missing package or model: the section says why
            runner.skip("cpu_backend", f"error: {type(exc).__name__}: {exc}", error=True)
    contention_env = None
    if contention.selected(args.only):
        log("section 15: contention (child processes alone, beside a busy process and in pairs;"
            " several minutes)")
        try:
            contention_env = contention.run(runner, log, repeats=args.repeats or 5,
                                            workloads=contention.chosen(args.only),
                                            seconds=0.5 if preset == "smoke" else
                                            contention.MEASURE_S)
        except Exception as exc:  # a child that failed: the section says why
            runner.skip("contention", f"error: {type(exc).__name__}: {exc}", error=True)
    avx2_info = runner.avx2_info

    wall = time.perf_counter() - wall0
    env = environment(runner.mods, sizes, avx2_info)
    if any(case.section == "11" for case, _ in plan):
        from kwker import _overhead
        env["call_overhead"] = _overhead.measure()
    env["other_load"] = meter.report()
    if cpu_env is not None:
        env["cpu_backend"] = cpu_env
    if contention_env is not None:
        env["contention"] = contention_env
    if os.environ.get(ISA_CHILD):
        env["held"] = held(os.environ[ISA_CHILD], runner.mods)
    result = {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "environment": env,
        "rows": runner.rows,
        "skipped": runner.skipped,
        "summary": report.summary(runner.rows),
        "before": None if runner.before is None else {
            "library": runner.before.info["library"],
            "info": runner.before.info,
            "after_library": runner.before.info["after_library"],
            "not_compared": runner.before_skipped,
            "not_compared_missing": [{"case": c, "function": f}
                                     for c, f in runner.before_missing],
            "no_slower": before.NO_SLOWER,
            "rows": runner.before_rows,
            "summary": before.summary(runner.before_rows)},
        "wall_s": wall,
        "argv": argv,
    }
    if args.save:
        with open(args.save, "w") as f:
            json.dump(result, f, indent=1)
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        print(report.markdown(result))
    return 0
