"""`python -m kwker support-bundle`: write kwker-support-<UTC time>.tar.gz for a bug report.

The bundle holds only plain-text / JSON files describing Kwker, Python, the CPU and the
process limits, plus (unless --no-probe) timings of sorts of synthetic arrays. None of the
user's data goes in: only KWKER_* and threading environment variables, no file contents from
the user's directories, no command history.

Each bundle file is produced by one function named in FILES
(name -> (description, producer function name)); the producers return text. The archive is written under a temporary name in the destination
directory and moved into place with os.replace only once complete.
"""
import argparse
import datetime
import io
import json
import os
import platform
import re
import sys
import sysconfig
import tarfile
import tempfile
import time

RELEVANT_PACKAGES = ("kwker", "numpy", "torch", "pandas", "polars", "scikit-build-core",
                     "cmake")

THREAD_VARS = ("OMP_NUM_THREADS", "OMP_PROC_BIND", "OMP_WAIT_POLICY", "MKL_NUM_THREADS",
               "OPENBLAS_NUM_THREADS", "OPENBLAS_CORETYPE", "VECLIB_MAXIMUM_THREADS",
               "NUMEXPR_NUM_THREADS", "RAYON_NUM_THREADS", "POLARS_MAX_THREADS", "PYTHON_GIL")

PROBE_N = 100_000
PROBE_SEED = 20240601
PREFIX = "kwker-support-"


class BundleError(Exception):
    """A failure with a message meant for the user."""


def _safe(fn):
    try:
        return fn()
    except Exception as exc:  # a broken probe is a finding, not a crash
        return {"error": f"{type(exc).__name__}: {exc}"}


def _json(obj):
    return json.dumps(obj, indent=2, sort_keys=False, default=str) + "\n"


# ---------------------------------------------------------------- producers (return text)

def doctor_json(opts):
    from kwker import _doctor
    return _json(_doctor.collect())


def packages_txt(opts):
    from importlib import metadata
    lines = []
    if opts.all_packages:
        seen = {}
        for dist in metadata.distributions():
            name = dist.metadata["Name"] or "?"
            seen.setdefault(name.lower(), (name, dist.version))
        for _, (name, version) in sorted(seen.items()):
            lines.append(f"{name} {version}")
    else:
        for name in RELEVANT_PACKAGES:
            try:
                version = metadata.version(name)
            except metadata.PackageNotFoundError:
                version = "not installed"
            lines.append(f"{name} {version}")
    return "\n".join(lines) + "\n"


def _env_selected():
    return {k: v for k, v in sorted(os.environ.items())
            if k.startswith("KWKER_") or k in THREAD_VARS}


def environment_txt(opts):
    lines = ["# only KWKER_* and threading variables are recorded"]
    lines += [f"{k}={v}" for k, v in _env_selected().items()]
    return "\n".join(lines) + "\n"


def _read(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def cpu_txt(opts):
    lines = [f"platform.machine: {platform.machine()}",
             f"platform.processor: {platform.processor()}",
             f"platform.platform: {platform.platform()}",
             f"os.cpu_count: {os.cpu_count()}"]
    try:
        text = _read("/proc/cpuinfo")
    except OSError:
        text = None
    if text:
        block = text.strip().split("\n\n", 1)[0]
        lines += ["", "# /proc/cpuinfo, first processor block", block]
    return "\n".join(lines) + "\n"


def _try_read(path):
    try:
        return _read(path).strip()
    except OSError:
        return None


def limits_txt(opts):
    lines = []
    try:
        aff = sorted(os.sched_getaffinity(0))
        lines.append(f"sched_getaffinity: {len(aff)} cpus {_ranges(aff)}")
    except (AttributeError, OSError) as exc:
        lines.append(f"sched_getaffinity: unavailable ({type(exc).__name__})")
    lines.append(f"os.cpu_count: {os.cpu_count()}")
    files = [
        ("cgroup v2 cpu.max", "/sys/fs/cgroup/cpu.max"),
        ("cgroup v2 cpuset.cpus.effective", "/sys/fs/cgroup/cpuset.cpus.effective"),
        ("cgroup v1 cpu.cfs_quota_us", "/sys/fs/cgroup/cpu/cpu.cfs_quota_us"),
        ("cgroup v1 cpu.cfs_period_us", "/sys/fs/cgroup/cpu/cpu.cfs_period_us"),
        ("cgroup v1 cpu,cpuacct cfs_quota_us", "/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us"),
        ("cgroup v1 cpu,cpuacct cfs_period_us",
         "/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us"),
        ("cgroup v2 memory.max", "/sys/fs/cgroup/memory.max"),
        ("cgroup v1 memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.limit_in_bytes"),
    ]
    for label, path in files:
        value = _try_read(path)
        lines.append(f"{label}: {value if value is not None else 'not readable'}")
    try:
        import resource
        for name in ("RLIMIT_AS", "RLIMIT_DATA", "RLIMIT_NPROC"):
            if hasattr(resource, name):
                soft, hard = resource.getrlimit(getattr(resource, name))
                lines.append(f"{name}: soft={_rl(soft)} hard={_rl(hard)}")
    except ImportError:
        pass
    return "\n".join(lines) + "\n"


def _rl(v):
    try:
        import resource
        if v == resource.RLIM_INFINITY:
            return "unlimited"
    except ImportError:
        pass
    return str(v)


def _ranges(cpus):
    out, start, prev = [], None, None
    for c in cpus:
        if start is None:
            start = prev = c
        elif c == prev + 1:
            prev = c
        else:
            out.append(f"{start}-{prev}" if start != prev else str(start))
            start = prev = c
    if start is not None:
        out.append(f"{start}-{prev}" if start != prev else str(start))
    return ",".join(out)


_COMMENT_RE = re.compile(rb"(GCC: \([^\x00]{1,200}\)[^\x00]{0,60}|clang version [^\x00]{1,120}"
                         rb"|Intel\(R\) [^\x00]{1,120}Compiler[^\x00]{0,80})")


def _compiler_of(path):
    """Compiler strings recorded in a shared library's .comment section (best effort)."""
    if not path:
        return None
    try:
        with open(path, "rb") as f:
            data = f.read(64 * 1024 * 1024)
    except OSError:
        return None
    found = []
    for m in _COMMENT_RE.finditer(data):
        s = m.group(0).decode("utf-8", "replace")
        if s not in found:
            found.append(s)
        if len(found) >= 4:
            break
    return found or None


def build_json(opts):
    import kwker
    from kwker import _backend, _locate

    info = {"kwker_version": getattr(kwker, "__version__", None)}
    rt = _safe(kwker.runtime_info)
    if isinstance(rt, dict) and "error" not in rt:
        info["runtime_version"] = rt.get("version")
        info["abi_version"] = rt.get("abi_version")
    else:
        info["runtime_info"] = rt
    info["backend"] = getattr(_backend, "name", None)
    paths = _safe(_locate.sdk_paths)
    info["library"] = paths.get("library") if isinstance(paths, dict) else paths
    info["sdk_paths"] = paths
    try:
        from kwker import _fast
        info["fast_extension"] = os.path.abspath(_fast.__file__)
    except ImportError as exc:
        info["fast_extension"] = None
        info["fast_extension_error"] = f"{type(exc).__name__}: {exc}"
    info["python"] = {
        "version": sys.version,
        "implementation": platform.python_implementation(),
        "compiler": platform.python_compiler(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "Py_GIL_DISABLED": sysconfig.get_config_var("Py_GIL_DISABLED"),
        "gil_enabled": (sys._is_gil_enabled() if hasattr(sys, "_is_gil_enabled") else True),
    }
    info["compiler"] = {
        "library": _compiler_of(info["library"] if isinstance(info["library"], str) else None),
        "fast_extension": _compiler_of(info["fast_extension"]),
    }
    return _json(info)


def probe_json(opts):
    import numpy as np

    import kwker

    rng = np.random.default_rng(PROBE_SEED)
    arrays = {
        "float32": rng.standard_normal(PROBE_N).astype(np.float32),
        "int64": rng.integers(-(2 ** 62), 2 ** 62, PROBE_N, dtype=np.int64),
    }
    expected = {name: (np.sort(a), np.argsort(a, kind="stable")) for name, a in arrays.items()}
    engines = {}
    for engine in kwker.available_isas():
        results = []
        ok = True
        for name, a in arrays.items():
            entry = {"dtype": name, "n": PROBE_N}
            try:
                with kwker.config(isa=engine):
                    t0 = time.perf_counter()
                    s = kwker.sort(a)
                    t1 = time.perf_counter()
                    i = kwker.argsort(a)
                    t2 = time.perf_counter()
                entry["sort_seconds"] = t1 - t0
                entry["argsort_seconds"] = t2 - t1
                entry["sort_correct"] = bool(np.array_equal(s, expected[name][0]))
                entry["argsort_correct"] = bool(np.array_equal(i, expected[name][1]))
            except Exception as exc:
                entry["error"] = f"{type(exc).__name__}: {exc}"
                entry["sort_correct"] = entry["argsort_correct"] = False
            ok = ok and entry["sort_correct"] and entry["argsort_correct"]
            results.append(entry)
        engines[engine] = {"correct": ok, "results": results}
    return _json({"schema": "kwker.support_bundle.probe", "seed": PROBE_SEED, "n": PROBE_N,
                  "data": "synthetic (numpy default_rng)", "engines": engines})


FILES = {
    "doctor.json": ("doctor report (python -m kwker doctor --json)", "doctor_json"),
    "packages.txt": ("versions of the relevant installed packages", "packages_txt"),
    "environment.txt": ("KWKER_* and threading environment variables only", "environment_txt"),
    "cpu.txt": ("CPU model and flags (first /proc/cpuinfo block) and platform", "cpu_txt"),
    "limits.txt": ("CPU affinity, cgroup CPU and memory limits, rlimits", "limits_txt"),
    "build.json": ("kwker version, ABI, library and extension paths, Python build",
                   "build_json"),
    "probe.json": ("sort/argsort timings and correctness per engine on synthetic data",
                   "probe_json"),
}

ALL_PACKAGES_DESC = "versions of every installed Python distribution"


# ---------------------------------------------------------------- archive

def _add(tar, name, text, mtime):
    data = text.encode("utf-8")
    ti = tarfile.TarInfo(name)
    ti.size = len(data)
    ti.mtime = mtime
    ti.mode = 0o644
    tar.addfile(ti, io.BytesIO(data))
    return len(data)


def _check_dest(dest):
    if os.path.isdir(dest):
        if not os.access(dest, os.W_OK | os.X_OK):
            raise BundleError(f"cannot write to {dest!r}: permission denied; pass -o with a "
                              "directory you can write to")
        return
    if os.path.exists(dest):
        raise BundleError(f"{dest!r} is not a directory; pass -o with a directory "
                          "(it is created if missing)")
    # create missing directories; fails cleanly when a parent is a regular file
    parent = dest
    while parent and not os.path.exists(parent):
        parent = os.path.dirname(parent.rstrip(os.sep)) if parent != os.sep else ""
    if parent and not os.path.isdir(parent):
        raise BundleError(f"cannot create output directory {dest!r}: {parent!r} is a file, not "
                          "a directory; pass -o with a directory path")
    try:
        os.makedirs(dest, exist_ok=True)
    except OSError as exc:
        raise BundleError(f"cannot create output directory {dest!r}: {exc.strerror or exc}; "
                          "pass -o with a directory you can write to") from None


def write_bundle(dest, *, probe=True, all_packages=False, now=None):
    """Write the bundle into directory `dest` and return its path (raises BundleError)."""
    opts = argparse.Namespace(probe=probe, all_packages=all_packages)
    dest = os.path.abspath(dest)
    _check_dest(dest)
    now = now or datetime.datetime.now(datetime.timezone.utc)
    stamp = now.strftime("%Y%m%d-%H%M%S")
    final = os.path.join(dest, f"{PREFIX}{stamp}.tar.gz")
    for k in range(1, 100):  # never overwrite an earlier bundle made in the same second
        if not os.path.exists(final):
            break
        final = os.path.join(dest, f"{PREFIX}{stamp}-{k}.tar.gz")
    mtime = int(now.timestamp())
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{PREFIX}{stamp}.", suffix=".tmp", dir=dest)
    except OSError as exc:
        raise BundleError(f"cannot write to {dest!r}: {exc.strerror or exc}; pass -o with a "
                          "directory you can write to") from None
    try:
        with os.fdopen(fd, "wb") as raw:
            with tarfile.open(fileobj=raw, mode="w:gz") as tar:
                manifest = []
                for name, (desc, producer) in FILES.items():
                    if name == "probe.json" and not probe:
                        continue
                    if name == "packages.txt" and all_packages:
                        desc = ALL_PACKAGES_DESC
                    # looked up at call time so the producers can be replaced (tests)
                    text = globals()[producer](opts)
                    size = _add(tar, name, text, mtime)
                    manifest.append((name, size, desc))
                width = max(len(n) for n, _, _ in manifest)
                lines = [f"# kwker support bundle, created {now.isoformat()}",
                         "# file  size_bytes  description"]
                lines += [f"{n:<{width}}  {s:>8}  {d}" for n, s, d in manifest]
                _add(tar, "MANIFEST.txt", "\n".join(lines) + "\n", mtime)
            raw.flush()
            os.fsync(raw.fileno())
        os.replace(tmp, final)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return final


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        self.print_usage(sys.stderr)
        print(f"kwker support-bundle: error: {message}", file=sys.stderr)
        raise SystemExit(2)


def _parser():
    p = _Parser(prog="python -m kwker support-bundle",
                description="Write kwker-support-<UTC time>.tar.gz for a bug report. It holds "
                            "only text/JSON files about Kwker, Python, the CPU and limits; "
                            "none of your data.")
    p.add_argument("--no-probe", action="store_true",
                   help="skip probe.json (sort/argsort timings on synthetic arrays)")
    p.add_argument("--all-packages", action="store_true",
                   help="list every installed distribution in packages.txt")
    p.add_argument("-o", "--output-dir", default=".", metavar="DIR",
                   help="directory to write the bundle into (default: current directory)")
    return p


# Where bundles go (the troubleshooting page says the same). The first line printed is the
# bundle's path, so scripts can read it; this follows.
SEND_TO = ("Send this file, with a few lines on what you ran and what happened, through the "
           "support form or to mail@kwker.io. It holds none of your data; every file in it is "
           "plain text or JSON that you can read before sending.")


def main(argv):
    try:
        args = _parser().parse_args(list(argv))
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 2
    try:
        path = write_bundle(args.output_dir, probe=not args.no_probe,
                            all_packages=args.all_packages)
    except BundleError as exc:
        print(f"kwker support-bundle: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:
        print(f"kwker support-bundle: failed to write the bundle ({type(exc).__name__}: {exc});"
              " no bundle was written", file=sys.stderr)
        return 1
    print(path)
    print(SEND_TO)
    return 0
