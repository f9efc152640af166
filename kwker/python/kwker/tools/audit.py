"""python -m kwker audit [--json] [--timeout S] -- script.py [args]

Runs the script twice in fresh subprocesses of this Python: once with Kwker (KWKER_DISABLE
removed from its environment) and once with KWKER_DISABLE=1, which makes every integration's
install() a no-op. Reports wall time, CPU time, peak memory and exit status of each run, and
whether the outputs agree: stdout byte for byte, and every value recorded with
kwker.audit.record(). Exit status: 0 both runs succeeded and agree, 1 they differ or a run
failed or timed out, 2 usage error. See docs/tools.md.
"""
import hashlib
import json
import math
import os
import pickle
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time

from kwker import _integrations
from kwker import audit as _record

SCHEMA = "kwker.audit"
SCHEMA_VERSION = 1
TAIL_LINES = 20

USAGE = """usage: python -m kwker audit [--json] [--timeout S] -- script.py [args]

Runs script.py twice with this Python, with Kwker and with KWKER_DISABLE=1, and reports
wall time, CPU time, peak memory, exit status and whether stdout and the values recorded
with kwker.audit.record(name, value) agree.

options:
  --json        print one JSON object (schema kwker.audit, version 1)
  --timeout S   stop a run after S seconds (counts as a failed run); default: no limit
  -h, --help    show this help

exit status: 0 outputs agree, 1 outputs differ or a run failed, 2 usage error"""

RUNS = (("kwker", "with Kwker"), ("disabled", "KWKER_DISABLE=1"))


class _Usage(Exception):
    pass


def _parse(argv):
    if "--" not in argv:
        if any(a in ("-h", "--help") for a in argv):
            return None
        known = ("--json", "--timeout")
        bad = [a for a in argv if a.startswith("-") and a.split("=", 1)[0] not in known]
        if bad:
            raise _Usage(f"unknown option {bad[0]!r}")
        raise _Usage("expected `--` before the script: python -m kwker audit [options] -- "
                     "script.py [args]")
    cut = argv.index("--")
    opts, cmd = argv[:cut], argv[cut + 1:]
    as_json, timeout = False, None
    i = 0
    while i < len(opts):
        a = opts[i]
        if a in ("-h", "--help"):
            return None
        if a == "--json":
            as_json = True
        elif a == "--timeout" or a.startswith("--timeout="):
            if a == "--timeout":
                i += 1
                if i >= len(opts):
                    raise _Usage("--timeout needs a number of seconds")
                text = opts[i]
            else:
                text = a.split("=", 1)[1]
            try:
                timeout = float(text)
            except ValueError:
                raise _Usage(f"--timeout: {text!r} is not a number of seconds") from None
            if not (timeout > 0 and math.isfinite(timeout)):
                raise _Usage(f"--timeout: {text!r} must be a positive number of seconds")
        elif a.startswith("-"):
            raise _Usage(f"unknown option {a!r}")
        else:
            raise _Usage(f"unexpected argument {a!r} before `--`; the script and its "
                         f"arguments go after `--`")
        i += 1
    if not cmd:
        raise _Usage("no script given after `--`")
    return as_json, timeout, cmd[0], cmd[1:]


def main(argv):
    try:
        parsed = _parse(list(argv))
    except _Usage as e:
        print(f"kwker audit: {e}\n\n{USAGE}", file=sys.stderr)
        return 2
    if parsed is None:
        print(USAGE)
        return 0
    as_json, timeout, script, args = parsed
    if not os.path.exists(script):
        print(f"kwker audit: script not found: {script!r} (no run attempted)", file=sys.stderr)
        return 2
    if not os.path.isfile(script):
        print(f"kwker audit: not a file: {script!r} (no run attempted)", file=sys.stderr)
        return 2

    report = audit(script, args, timeout=timeout)
    if as_json:
        print(json.dumps(report, indent=2))
    else:
        print(_text(report))
    return report["exit_status"]


# ---- running ----

def audit(script, args=(), timeout=None):
    """Runs both runs and returns the report dict (the --json object)."""
    cmd = [sys.executable, script, *args]
    runs, values = {}, {}
    with tempfile.TemporaryDirectory(prefix="kwker-audit-") as tmp:
        for key, label in RUNS:
            out = os.path.join(tmp, key)
            os.mkdir(out)
            env = dict(os.environ)
            env.pop(_integrations.ENV, None)
            if key == "disabled":
                env[_integrations.ENV] = "1"
            env[_record.ENV] = out
            run = _run(cmd, env, timeout)
            run["label"] = label
            run["env"] = {_integrations.ENV: env.get(_integrations.ENV)}
            values[key] = _load(out)
            run["recorded"] = list(values[key])
            runs[key] = run
    verdict = _verdict(runs, values, timeout)
    for run in runs.values():
        del run["_stdout"]
    return {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "script": script,
        "args": list(args),
        "python": sys.executable,
        "timeout_s": timeout,
        "runs": runs,
        "verdict": verdict,
        "exit_status": 0 if verdict["agree"] else 1,
    }


def _run(cmd, env, timeout):
    proc = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=(os.name == "posix"))
    t0 = time.perf_counter()
    chunks = {"out": b"", "err": b""}

    def drain(key, pipe):
        with pipe:
            chunks[key] = pipe.read()

    readers = [threading.Thread(target=drain, args=("out", proc.stdout), daemon=True),
               threading.Thread(target=drain, args=("err", proc.stderr), daemon=True)]
    for r in readers:
        r.start()
    done = {}

    def reap():
        if hasattr(os, "wait4"):
            _, status, usage = os.wait4(proc.pid, 0)
            done["wall"] = time.perf_counter() - t0
            done["code"] = os.waitstatus_to_exitcode(status)
            done["usage"] = usage
        else:  # no per-child rusage here: CPU time and peak memory are reported as null
            done["code"] = proc.wait()
            done["wall"] = time.perf_counter() - t0

    waiter = threading.Thread(target=reap, daemon=True)
    waiter.start()
    timed_out = False
    try:
        waiter.join(timeout)
        if waiter.is_alive():
            timed_out = True
            _kill(proc)
            waiter.join()
    except BaseException:
        _kill(proc)
        waiter.join()
        raise
    finally:
        for r in readers:
            r.join()
    proc.returncode = done["code"]  # reaped by wait4; tell Popen so it does not wait again

    code, usage = done["code"], done.get("usage")
    run = {
        "exit_code": code if code >= 0 else None,
        "signal": -code if code < 0 else None,
        "timed_out": timed_out,
        "ok": code == 0 and not timed_out,
        "wall_s": round(done["wall"], 6),
        "cpu_s": None, "user_s": None, "sys_s": None, "peak_mib": None,
    }
    if usage is not None:
        run["user_s"] = round(usage.ru_utime, 6)
        run["sys_s"] = round(usage.ru_stime, 6)
        run["cpu_s"] = round(usage.ru_utime + usage.ru_stime, 6)
        # ru_maxrss is KiB on Linux and bytes on macOS
        scale = 1 if sys.platform == "darwin" else 1024
        run["peak_mib"] = round(usage.ru_maxrss * scale / 2**20, 3)
    out, err = chunks["out"], chunks["err"]
    run["stdout_bytes"] = len(out)
    run["stdout_sha256"] = hashlib.sha256(out).hexdigest()
    run["stderr_tail"] = _decode(err).splitlines()[-TAIL_LINES:]
    run["_stdout"] = out
    return run


def _kill(proc):
    try:
        if os.name == "posix":
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.kill()
    except (ProcessLookupError, PermissionError):
        pass


def _decode(b):
    return b.decode("utf-8", errors="replace")


# ---- recorded values ----

class _Raw:
    """A pickle the parent cannot load (e.g. a class defined in the script): compared as bytes."""

    def __init__(self, data, error):
        self.data, self.error = data, error

    def __repr__(self):
        return f"<unloadable pickle, {len(self.data)} bytes: {self.error}>"


def _load(out):
    """{name: [value, ...]} in the order recorded; files not in the index are ignored."""
    values = {}
    index = os.path.join(out, _record.INDEX)
    if not os.path.exists(index):
        return values
    with open(index, encoding="utf-8") as f:
        lines = f.read().splitlines()
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue  # a torn line from a killed run
        path = os.path.join(out, entry["file"])
        if entry["format"] == "npy":
            import numpy as np
            value = np.load(path, allow_pickle=False)
        else:
            with open(path, "rb") as f:
                data = f.read()
            try:
                value = pickle.loads(data)
            except Exception as e:
                value = _Raw(data, f"{type(e).__name__}: {e}")
        values.setdefault(entry["name"], []).append(value)
    return values


def _same(a, b):
    """Exact comparison: arrays by dtype, shape and bytes; floats bit for bit; containers
    element by element; other values by type and ==."""
    import numpy as np
    if isinstance(a, _Raw) or isinstance(b, _Raw):
        return isinstance(a, _Raw) and isinstance(b, _Raw) and a.data == b.data
    if type(a) is not type(b):
        return False
    from kwker.frame import _equality  # pandas / Polars objects: their own equality, not bytes
    if _equality.is_frame_like(a):
        return _equality.same(a, b)
    if isinstance(a, np.ndarray):
        if a.dtype != b.dtype or a.shape != b.shape:
            return False
        if isinstance(a, np.ma.MaskedArray):
            if not _same(np.ma.getmaskarray(a).view(np.ndarray),
                         np.ma.getmaskarray(b).view(np.ndarray)):
                return False
            a, b = a.view(np.ndarray), b.view(np.ndarray)
        if a.dtype.hasobject:
            return all(_same(x, y) for x, y in zip(a.reshape(-1).tolist(),
                                                   b.reshape(-1).tolist()))
        return np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()
    if isinstance(a, np.generic):
        return a.dtype == b.dtype and a.tobytes() == b.tobytes()
    if isinstance(a, float):
        return struct.pack("<d", a) == struct.pack("<d", b)
    if isinstance(a, complex):
        return _same(a.real, b.real) and _same(a.imag, b.imag)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return (list(a) == list(b)
                and all(_same(a[k], b[k]) for k in a))
    try:
        return bool(a == b)
    except Exception:  # e.g. == returned an array-like: fall back to the pickled bytes
        try:
            return pickle.dumps(a) == pickle.dumps(b)
        except Exception:
            return False


def _describe(v):
    import numpy as np
    if isinstance(v, np.ndarray):
        return f"ndarray dtype={v.dtype} shape={v.shape}"
    if isinstance(v, dict) and v.get(_record.TENSOR_MARK):
        return f"tensor dtype={v['dtype']} shape={tuple(v['shape'])} device={v['device']}"
    text = repr(v)
    return text if len(text) <= 80 else text[:77] + "..."


def _first_index(a, b):
    """First flat index where two same-dtype, same-shape plain arrays (or recorded tensors)
    differ in bytes."""
    import numpy as np
    if isinstance(a, dict) and isinstance(b, dict) and a.get(_record.TENSOR_MARK) and \
            b.get(_record.TENSOR_MARK) and (a["dtype"], a["shape"]) == (b["dtype"], b["shape"]):
        n = int(np.prod(a["shape"])) if a["shape"] else 1
        if not n or len(a["data"]) != len(b["data"]):
            return None
        a = np.frombuffer(a["data"], np.uint8).reshape(n, -1)
        b = np.frombuffer(b["data"], np.uint8).reshape(n, -1)
        diff = np.flatnonzero((a != b).any(axis=1))
        return int(diff[0]) if diff.size else None
    if not (type(a) is type(b) is np.ndarray) or a.dtype != b.dtype or a.shape != b.shape:
        return None
    if a.dtype.hasobject or a.dtype.itemsize == 0 or a.size == 0:
        return None
    ra = np.ascontiguousarray(a).reshape(-1).view(np.uint8).reshape(a.size, -1)
    rb = np.ascontiguousarray(b).reshape(-1).view(np.uint8).reshape(b.size, -1)
    diff = np.flatnonzero((ra != rb).any(axis=1))
    return int(diff[0]) if diff.size else None


def _compare_values(va, vb):
    """Differences between two {name: [values]}, names in the order first recorded."""
    diffs = []
    names = list(va) + [n for n in vb if n not in va]
    for name in names:
        if name not in vb:
            diffs.append({"name": name, "kind": "missing", "recorded_only_with": "kwker",
                          "detail": "recorded only with Kwker, not with KWKER_DISABLE=1"})
            continue
        if name not in va:
            diffs.append({"name": name, "kind": "missing", "recorded_only_with": "disabled",
                          "detail": "recorded only with KWKER_DISABLE=1, not with Kwker"})
            continue
        a, b = va[name], vb[name]
        if len(a) != len(b):
            diffs.append({"name": name, "kind": "count",
                          "detail": f"recorded {len(a)} time(s) with Kwker, {len(b)} with "
                                    f"KWKER_DISABLE=1"})
            continue
        for i, (x, y) in enumerate(zip(a, b)):
            if not _same(x, y):
                d = {"name": name, "kind": "value", "occurrence": i,
                     "kwker": _describe(x), "disabled": _describe(y)}
                at = _first_index(x, y)
                detail = f"with Kwker {d['kwker']}, with KWKER_DISABLE=1 {d['disabled']}"
                if at is not None and isinstance(x, dict):
                    d["first_index"] = at
                    detail = (f"tensor {x['dtype']} {tuple(x['shape'])} first differs at flat "
                              f"index {at}")
                elif at is not None:
                    d["first_index"] = at
                    ex, ey = x.reshape(-1)[at], y.reshape(-1)[at]
                    sx, sy = repr(ex), repr(ey)
                    if sx == sy:  # e.g. NaNs with different payloads: show the bytes
                        sx, sy = f"{sx} (bytes {ex.tobytes().hex()})", \
                            f"{sy} (bytes {ey.tobytes().hex()})"
                    detail = (f"{x.dtype} {x.shape} first differs at flat index {at}: "
                              f"{sx} with Kwker, {sy} with KWKER_DISABLE=1")
                if len(a) > 1:
                    detail = f"value #{i + 1} of {len(a)}: {detail}"
                d["detail"] = detail
                diffs.append(d)
                break
    return diffs


# ---- verdict ----

def _stdout_diff(a, b):
    la, lb = a.splitlines(keepends=True), b.splitlines(keepends=True)
    for i in range(max(len(la), len(lb))):
        x = la[i] if i < len(la) else None
        y = lb[i] if i < len(lb) else None
        if x != y:
            return {"kind": "stdout", "line": i + 1,
                    "kwker": None if x is None else _decode(x).rstrip("\n"),
                    "disabled": None if y is None else _decode(y).rstrip("\n")}
    return {"kind": "stdout", "line": None, "kwker": None, "disabled": None}


def _status_word(run):
    if run["timed_out"]:
        return "timed out"
    if run["signal"] is not None:
        return f"was killed by signal {run['signal']}"
    return f"exited {run['exit_code']}"


def _verdict(runs, values, timeout):
    a, b = runs["kwker"], runs["disabled"]
    failed = [k for k in ("kwker", "disabled") if not runs[k]["ok"]]
    v = {"agree": False, "failed": failed, "stdout_differs": None, "differences": []}
    if failed:
        how = f"; with Kwker it {_status_word(a)}, with KWKER_DISABLE=1 it {_status_word(b)}"
        if len(failed) == 2:
            v["summary"] = "the script failed in both runs" + how
        elif failed == ["kwker"]:
            v["summary"] = "the script failed with Kwker but not with KWKER_DISABLE=1" + how
        else:
            v["summary"] = "the script failed with KWKER_DISABLE=1 but not with Kwker" + how
        return v
    diffs = []
    if a["_stdout"] != b["_stdout"]:
        diffs.append(_stdout_diff(a["_stdout"], b["_stdout"]))
    v["stdout_differs"] = bool(diffs)
    value_diffs = _compare_values(values["kwker"], values["disabled"])
    diffs += [dict(d, kind="recorded_" + d["kind"]) for d in value_diffs]
    v["differences"] = diffs
    if not diffs:
        v["agree"] = True
        v["summary"] = "outputs agree"
        return v
    parts = ["stdout"] if v["stdout_differs"] else []
    if value_diffs:
        d = value_diffs[0]
        part = f"recorded value {d['name']!r}"
        if d["kind"] == "missing":
            part += (" (recorded only with Kwker)" if d["recorded_only_with"] == "kwker"
                     else " (recorded only with KWKER_DISABLE=1)")
        parts.append(part)
    v["summary"] = "outputs differ: " + ", ".join(parts)
    return v


# ---- text ----

def _fmt(x, spec):
    return "-" if x is None else format(x, spec)


def _exit_cell(run):
    if run["timed_out"]:
        return "timeout"
    if run["signal"] is not None:
        return f"sig {run['signal']}"
    return str(run["exit_code"])


def _text(rep):
    lines = [f"kwker audit: {' '.join([rep['script'], *rep['args']])}", ""]
    lines.append(f"{'run':<16} {'exit':>7} {'wall s':>9} {'cpu s':>9} {'peak MiB':>9}")
    for key, _ in RUNS:
        r = rep["runs"][key]
        lines.append(f"{r['label']:<16} {_exit_cell(r):>7} {_fmt(r['wall_s'], '.3f'):>9} "
                     f"{_fmt(r['cpu_s'], '.3f'):>9} {_fmt(r['peak_mib'], '.1f'):>9}")
    v = rep["verdict"]
    a, b = rep["runs"]["kwker"], rep["runs"]["disabled"]
    if not v["failed"]:
        n = len(set(a["recorded"]) | set(b["recorded"]))
        lines.append("")
        lines.append(f"compared: stdout ({a['stdout_bytes']} bytes with Kwker, "
                     f"{b['stdout_bytes']} with KWKER_DISABLE=1) and {n} recorded name(s)")
    for d in v["differences"]:
        if d["kind"] == "stdout":
            if d["line"] is not None:
                lines.append(f"  stdout first differs at line {d['line']}:")
                lines.append(f"    with Kwker:       {d['kwker']!r}")
                lines.append(f"    KWKER_DISABLE=1:  {d['disabled']!r}")
            else:
                lines.append("  stdout differs (line endings)")
        else:
            lines.append(f"  recorded value {d['name']!r}: {d['detail']}")
    if v["failed"]:
        for key, _ in RUNS:
            r = rep["runs"][key]
            lines.append("")
            lines.append(f"stderr tail, {r['label']} ({_status_word(r)}):")
            lines += [f"  | {s}" for s in r["stderr_tail"]] or ["  (empty)"]
    lines.append("")
    lines.append(v["summary"])
    return "\n".join(lines)
