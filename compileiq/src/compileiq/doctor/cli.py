"""``python -m compileiq doctor [--json] [--no-worker]``: exit 1 when a problem would make a search fail."""

from __future__ import annotations

import argparse
import json

from .checks import Report, collect


def _fmt(report: Report) -> str:
    f = report.facts
    lines = ["CompileIQ doctor", ""]
    v = f.get("versions", {})
    lines.append(f"python {v.get('python')} ({v.get('python_executable')}), compileiq {v.get('compileiq')}")
    lines.append("")
    lines.append("compilers:")
    for name, c in f.get("compilers", {}).items():
        lines.append(f"  {name:6} {c.get('version', '-'):8} {c.get('path', 'not found')}")
    ac = f.get("apply_controls")
    if ac:
        lines.append(f"  ptxas accepts --apply-controls (vendor ACFs): {'yes' if ac['accepts_vendor_acf'] else 'no (needs CUDA >= 13.3)'}")
    g = f.get("gpus", {})
    lines.append("")
    if not g.get("gpus"):
        lines.append(f"GPUs: none ({g.get('note') or g.get('error', '')})")
    else:
        lines.append("GPUs:")
        for gpu in g["gpus"]:
            locked = {True: "locked", False: "NOT locked", None: "unknown"}[gpu["clocks_locked"]]
            lines.append(f"  {gpu['index']}: {gpu['name']} driver {gpu['driver']}, SM {gpu['sm_clock_mhz']} MHz, clocks {locked}")
    env = f.get("ciq_environment", {})
    lines.append("")
    lines.append("CIQ_* variables: " + (", ".join(f"{k}={v}" for k, v in env.items()) or "none set"))
    w = f.get("worker")
    if w:
        if w.get("ok"):
            lines.append(f"worker: started and answered in {w['start_and_first_evaluation_s']} s "
                         f"({w['process_mode']}, CIQ_SOCKET_TIMEOUT={w['socket_timeout_s']:g} s)")
        else:
            lines.append(f"worker: FAILED ({w.get('error')})")
    lines.append("")
    lines.append("search spaces (offline):")
    for name, s in f.get("search_spaces", {}).items():
        lines.append(f"  {name:6} " + (f"{s['space_version']} from {s['source']}" if s.get("ok") else f"-  {s['error'][:120]}"))
    fw = f.get("frameworks", {})
    lines.append("")
    lines.append("frameworks: " + ", ".join(f"{k} {v['version'] or 'absent'}" for k, v in fw.items()))
    c = f.get("cache", {})
    lines.append(f"cache folder: {c.get('path')} ({'writable' if c.get('writable') else 'NOT writable'}; "
                 f"CIQ_KEEP_CACHE {'on' if c.get('keep_cache') else 'off'})")
    lines.append("")
    if report.problems:
        lines.append(f"warnings ({len(report.problems)}):")
        for p in report.problems:
            lines.append(f"  [{p.severity}] {p.check}: {p.cause}")
            lines.append(f"      fix: {p.fix}")
    else:
        lines.append("warnings: none")
    return "\n".join(lines)


def main(argv=None, prog: str = "compileiq doctor") -> int:
    p = argparse.ArgumentParser(prog=prog, description="What this machine gives CompileIQ, and the fix of each problem.")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--no-worker", action="store_true", help="skip the live worker start-up check")
    args = p.parse_args(argv)
    report = collect(live_worker=not args.no_worker)
    print(json.dumps(report.to_dict(), indent=2, default=str) if args.json else _fmt(report))
    return 1 if any(pr.severity == "error" for pr in report.problems) else 0
