"""`python -m kwker doctor`: collect a report dict (probes never raise), then render it.

Later checks plug in as more probes in PROBES; the renderers print whatever sections exist.
"""
import json
import os
import platform
import sys


def _probe(fn):
    try:
        return fn()
    except Exception as exc:  # a broken probe is a finding, not a crash
        return {"error": f"{type(exc).__name__}: {exc}"}


def _package():
    import numpy as np

    import kwker
    from kwker import _backend
    return {
        "version": kwker.__version__,
        "backend": _backend.name,
        "backend_fallback": _backend.fallback_reason,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "numpy": np.__version__,
    }


def _runtime():
    import kwker
    return kwker.runtime_info()


def _environment():
    return {k: v for k, v in sorted(os.environ.items()) if k.startswith("KWKER_")}


def _self_checks():
    import kwker
    out = {}
    for engine in kwker.available_isas():
        out[engine] = _probe(lambda e=engine: kwker.self_check(e))
    return out


def _sdk():
    from kwker import _locate
    return _locate.sdk_paths()


FRAMEWORKS = ("numpy", "torch", "pandas", "polars")
THREAD_VARS = ("OMP_NUM_THREADS", "OMP_PROC_BIND", "OMP_WAIT_POLICY", "MKL_NUM_THREADS",
               "OPENBLAS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS",
               "RAYON_NUM_THREADS", "POLARS_MAX_THREADS", "PYTHON_GIL")


def _frameworks():
    import importlib.metadata as md
    out = {}
    for name in FRAMEWORKS:
        try:
            out[name] = md.version(name)
        except md.PackageNotFoundError:
            out[name] = "not installed"
    return out


def _threading():
    out = {"variables": {k: os.environ[k] for k in THREAD_VARS if k in os.environ}}
    try:
        import torch
        out["torch_threads"] = torch.get_num_threads()
    except ImportError:
        out["torch_threads"] = "torch not installed"
    return out


# The integrations, each declared in kwker._integrations; importing them imports no framework.
STATUS_MODULES = ("kwker.frame", "kwker.torch_ops", "kwker.dynamo", "kwker.cpu_backend")


def _integration_states():
    import importlib

    from kwker import _warnings as w
    for mod in STATUS_MODULES:
        try:
            importlib.import_module(mod)
        except ImportError:
            pass
    return w._statuses()


def _integration_line(name, state):
    """One line per integration in the contract's format (kwker._integrations.doctor_line)."""
    from kwker import _integrations
    try:
        return _integrations.get(name).doctor_line(state)
    except KeyError:
        return ", ".join(f"{k}={v}" for k, v in state.items())


def _warnings(self_check=None):
    from kwker import _backend, _warnings as w
    import kwker
    return w.evaluate(w.facts(kwker.runtime_info(), _backend.name, self_check))


PROBES = {
    "package": _package,
    "runtime": _runtime,
    "environment": _environment,
    "self_check": _self_checks,
    "sdk": _sdk,
    "frameworks": _frameworks,
    "threading": _threading,
    "integrations": _integration_states,
}


def collect():
    report = {"schema": "kwker.doctor", "schema_version": 1}
    for key, fn in PROBES.items():
        report[key] = _probe(fn)
    # Last: the warnings read the self-check's outcome.
    report["warnings"] = _probe(lambda: _warnings(report.get("self_check")))
    report["ok"] = _ok(report)
    return report


def _ok(report):
    checks = report.get("self_check", {})
    if "error" in checks:
        return False
    return all(isinstance(r, dict) and r.get("ok") is True for r in checks.values())


def _line(out, label, value):
    out.append(f"  {label:<18} {value}")


def render_text(report):
    out = []
    pkg = report["package"]
    out.append("kwker doctor")
    if "error" in pkg:
        _line(out, "package", pkg["error"])
    else:
        _line(out, "version", pkg["version"])
        _line(out, "backend", pkg["backend"])
        if pkg.get("backend_fallback"):
            _line(out, "backend note", pkg["backend_fallback"])
        _line(out, "python / numpy", f"{pkg['python']} / {pkg['numpy']}")
    rt = report["runtime"]
    if "error" in rt:
        _line(out, "runtime info", rt["error"])
    else:
        cpu = rt.get("cpu", {})
        feats = [f for f, on in cpu.get("features", {}).items() if on]
        out.append("CPU")
        _line(out, "brand", f"{cpu.get('brand')} ({cpu.get('vendor')})")
        _line(out, "logical cpus", cpu.get("logical_cpus"))
        _line(out, "features", ", ".join(feats) or "none")
        eng = rt.get("engines", {})
        out.append("Engines")
        _line(out, "compiled", ", ".join(eng.get("compiled", [])))
        _line(out, "supported", ", ".join(eng.get("supported", [])))
        _line(out, "default", eng.get("default"))
        _line(out, "selected", f"{eng.get('selected')} ({eng.get('reason')})")
        cap = rt.get("isa_cap", {})
        if cap.get("value") or cap.get("source"):
            _line(out, "isa cap", f"{cap.get('value')} from {cap.get('source')}")
        if cap.get("warning"):
            _line(out, "isa warning", cap["warning"])
        algo = rt.get("algorithms", {})
        _line(out, "algorithms", ", ".join(algo.get("enabled", []))
              + f" (available: {', '.join(algo.get('available', []))})")
        th = rt.get("threads", {})
        out.append("Threads")
        for key in ("max_threads", "budget", "hardware", "affinity", "cgroup_limit",
                    "pool_workers", "placed_wakes", "late_calls", "solo_spells", "cpu_share",
                    "shared_calls", "shared_with"):
            _line(out, key, th.get(key))
        sc = rt.get("scratch", {})
        out.append("Scratch")
        for key in ("cache_limit_bytes", "cached_bytes", "limit_bytes", "in_use_bytes"):
            _line(out, key, sc.get(key))
    fw = report.get("frameworks", {})
    out.append("Frameworks")
    for k, v in (fw.items() if "error" not in fw else [("error", fw["error"])]):
        _line(out, k, v)
    sdk = report.get("sdk", {})
    if isinstance(sdk, dict) and sdk.get("library"):
        _line(out, "library", sdk["library"])
    thr = report.get("threading", {})
    if "error" not in thr:
        for k, v in thr.get("variables", {}).items():
            _line(out, k, v)
        _line(out, "torch threads", thr.get("torch_threads"))
    states = report.get("integrations", {})
    if states:
        out.append("Integrations")
        for name, state in states.items():
            _line(out, name, _integration_line(name, state) if isinstance(state, dict) else state)
    env = report["environment"]
    out.append("Environment")
    if not env:
        _line(out, "KWKER_*", "none set")
    for k, v in env.items():
        _line(out, k, v)
    out.append("Self-check")
    checks = report["self_check"]
    if "error" in checks:
        _line(out, "error", checks["error"])
    else:
        for engine, r in checks.items():
            if "error" in r:
                _line(out, engine, f"ERROR {r['error']}")
            else:
                status = "ok" if r.get("ok") else "FAILED"
                _line(out, engine, f"{status} ({r.get('cases')} cases)")
                for f in r.get("failures", [])[:10]:
                    _line(out, "", f"{f.get('op')} {f.get('dtype')} n={f.get('n')} "
                                   f"{f.get('case')}")
    warns = report.get("warnings", [])
    out.append("Warnings")
    if isinstance(warns, dict):
        _line(out, "error", warns.get("error"))
    elif not warns:
        _line(out, "", "none: nothing known keeps Kwker below its best here")
    for w in warns if isinstance(warns, list) else []:
        out.append(f"  - {w['message']}")
        out.append(f"    fix: {w['fix']}")
    out.append("Result: " + ("ok" if report["ok"] else "PROBLEMS FOUND"))
    return "\n".join(out)


def main(argv):
    as_json = "--json" in argv
    unknown = [a for a in argv if a != "--json"]
    if unknown:
        print(f"kwker doctor: unknown argument(s) {' '.join(unknown)}; usage: "
              "python -m kwker doctor [--json]", file=sys.stderr)
        return 2
    report = collect()
    if as_json:
        print(json.dumps(report, indent=2, default=str))
    else:
        print(render_text(report))
    return 0 if report["ok"] else 1
