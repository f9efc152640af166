"""The doctor's checks. Each returns facts for the report and appends Problems (cause + fix).

Every check is independent and never raises: a check that cannot run reports why, so one broken
piece (say, a corrupt CIQ_* value) does not hide the rest of the picture.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import platform
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field

from .. import _env


@dataclass
class Problem:
    check: str
    severity: str  # "error" (a search will fail) or "warning" (it will run, but worse or misleading)
    cause: str
    fix: str


@dataclass
class Report:
    facts: dict = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)

    def problem(self, check, severity, cause, fix):
        self.problems.append(Problem(check, severity, cause, fix))

    def to_dict(self) -> dict:
        return {**self.facts, "warnings": [asdict(p) for p in self.problems]}


def check_versions(r: Report) -> None:
    try:
        ver = importlib.metadata.version("compileiq")
    except importlib.metadata.PackageNotFoundError:
        ver = "not installed (running from a source tree)"
    r.facts["versions"] = {"python": platform.python_version(), "python_executable": sys.executable,
                           "compileiq": ver, "platform": platform.platform()}


def _lists_apply_controls(ptxas: str) -> bool:
    """Ask the binary itself (its --help) rather than trusting a version number."""
    try:
        out = subprocess.run([ptxas, "--help"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "--apply-controls" in (out.stdout + out.stderr)


def check_compilers(r: Report) -> None:
    from ..compilers.discovery import CompilerNotFoundError, find_compiler
    out = {}
    for name in ("ptxas", "nvcc", "gcc", "clang"):
        try:
            tc = find_compiler(name)
            out[name] = {"path": str(tc.path), "version": tc.version_str, "release": tc.release}
        except (CompilerNotFoundError, OSError) as exc:
            out[name] = {"error": str(exc)}
            severity = "warning"
            need = {"ptxas": "CUDA searches (PtxasSearchSpace, NvccSearchSpace)", "nvcc": "NvccSearchSpace and .cu kernels",
                    "gcc": "GccSearchSpace and the demo", "clang": "ClangSearchSpace"}[name]
            r.problem(f"compiler:{name}", severity, f"{name} not found: {need} cannot run", str(exc))
    r.facts["compilers"] = out
    ptxas = out.get("ptxas", {})
    if "version" in ptxas:
        ok = _lists_apply_controls(ptxas["path"])
        r.facts["apply_controls"] = {"ptxas": ptxas["path"], "accepts_vendor_acf": ok}
        if not ok:
            r.problem("apply-controls", "warning",
                      f"ptxas {ptxas['version']} predates --apply-controls (CUDA 13.3): vendor ACF files and "
                      "AcfCatalogSpace cannot be applied; open controls files (the shipped spaces) work",
                      "install CUDA 13.3 or newer, or `pip install nvidia-cuda-nvcc` and point CIQ_PTXAS at its ptxas")


def check_gpus(r: Report) -> None:
    from ..utils.gpu import GpuUnavailableError, has_nvidia_smi, list_gpus
    if not has_nvidia_smi():
        r.facts["gpus"] = {"nvidia_smi": None, "gpus": [],
                           "note": "no nvidia-smi: no GPU timing here; CPU objectives and ptxas compile metrics work"}
        return
    try:
        gpus = list_gpus()
    except GpuUnavailableError as exc:
        r.facts["gpus"] = {"nvidia_smi": True, "gpus": [], "error": str(exc)}
        r.problem("gpu", "warning", f"nvidia-smi is present but reports no GPU: {exc}",
                  "check the driver (nvidia-smi by hand) and CUDA_VISIBLE_DEVICES")
        return
    r.facts["gpus"] = {"nvidia_smi": True, "gpus": [asdict(g) for g in gpus]}
    for g in gpus:
        if g.clocks_locked is False:
            r.problem(f"gpu{g.index}:clocks", "warning",
                      f"GPU {g.index} ({g.name}) clocks are not locked: timings drift with temperature and boost, "
                      "which shows up as high CV% and winners that do not validate",
                      "lock them for the search: nvidia-smi -pm 1; nvidia-smi --lock-gpu-clocks=<MHz>,<MHz> "
                      "--lock-memory-clocks=<MHz>,<MHz> (or compileiq.utils.gpu.gpu_benchmark_mode)")


def check_environment(r: Report) -> None:
    env = _env.ciq_variables()
    r.facts["ciq_environment"] = env
    for name, parse in _env.CHECKED.items():
        if name in env:
            try:
                parse()
            except Exception as exc:  # the parsers' own messages say what is wrong and an example
                r.problem(f"env:{name}", "error", str(exc), f"unset {name} or give it a valid value")


def _probe_objective(x):
    return 1.0


def check_worker(r: Report) -> None:
    """Start one real worker in the configured mode and time its connection and one evaluation."""
    from ..errors import CompileIQError
    from ..worker import MultiProcessWorker
    try:
        mode, limit = _env.process_mode(), _env.socket_timeout()
    except CompileIQError as exc:
        r.facts["worker"] = {"ok": False, "error": str(exc)}
        return
    w = MultiProcessWorker()
    t0 = time.perf_counter()
    try:
        scores = w.run(function=_probe_objective, params_pool=[{}], params_ids=[0], num_function_returns=1,
                       num_workers=1)
        elapsed = time.perf_counter() - t0
        ok = len(scores) == 1 and scores[0].score == 1.0
        r.facts["worker"] = {"ok": ok, "process_mode": mode, "socket_timeout_s": limit,
                             "start_and_first_evaluation_s": round(elapsed, 3)}
        if not ok:
            r.problem("worker", "error", f"a worker started but the probe evaluation failed: {scores!r}",
                      "run python -m compileiq doctor --json and report the output")
        elif elapsed > 0.5 * limit:
            r.problem("worker", "warning",
                      f"a worker needed {elapsed:.1f} s of the {limit:g} s CIQ_SOCKET_TIMEOUT to start "
                      f"({mode}); a slower start (a loaded machine, heavy imports in your script) will time out",
                      "raise CIQ_SOCKET_TIMEOUT=120, or try CIQ_PROCESS_MODE=spawn / fork")
    except Exception as exc:
        r.facts["worker"] = {"ok": False, "process_mode": mode, "socket_timeout_s": limit,
                             "error": f"{type(exc).__name__}: {exc}"}
        r.problem("worker", "error", f"no worker could start in {mode} mode within CIQ_SOCKET_TIMEOUT={limit:g} s: {exc}",
                  "raise CIQ_SOCKET_TIMEOUT=120; if it still fails try CIQ_PROCESS_MODE=spawn, then fork")
    finally:
        w.close()


def check_spaces(r: Report) -> None:
    """Resolve the space of every installed compiler without the network (unless a URL is configured)."""
    from ..search_spaces import compilers as providers
    out = {}
    for name, cls in (("ptxas", providers.PtxasSearchSpace), ("nvcc", providers.NvccSearchSpace),
                      ("gcc", providers.GccSearchSpace), ("clang", providers.ClangSearchSpace)):
        try:
            prov = cls()
            path = prov.retrieve()
            meta = prov.resolution_metadata or {}
            out[name] = {"ok": True, "space_version": meta.get("compiler_version"), "source": meta.get("source"),
                         "path": path}
        except Exception as exc:
            out[name] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
            if "not found" not in str(exc).lower():
                r.problem(f"space:{name}", "warning", f"the {name} search space does not resolve: {exc}",
                          "set CIQ_SEARCH_SPACES_DIR to an offline mirror, or unset CIQ_SEARCH_SPACES_URL to use the "
                          "spaces shipped in the package")
    r.facts["search_spaces"] = out


def check_frameworks(r: Report) -> None:
    from ..frameworks.flashinfer_env import prebuilt_packages
    out = {}
    for dist, module in (("triton", "triton"), ("helion", "helion"), ("flashinfer-python", "flashinfer")):
        try:
            ver = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            ver = None if importlib.util.find_spec(module) is None else "unknown"
        out[module] = {"installed": ver is not None, "version": ver}
    out["triton"]["cache"] = {k: os.environ.get(k) for k in ("TRITON_CACHE_DIR", "TRITON_ALWAYS_COMPILE", "TRITON_PTXAS_PATH")}
    out["helion"]["cache"] = {"HELION_SKIP_CACHE": os.environ.get("HELION_SKIP_CACHE")}
    prebuilt = prebuilt_packages()
    out["flashinfer"]["prebuilt_packages"] = prebuilt
    r.facts["frameworks"] = out
    if out["triton"]["installed"] and os.environ.get("TRITON_ALWAYS_COMPILE") != "1":
        r.problem("triton-cache", "warning",
                  "Triton is installed and TRITON_ALWAYS_COMPILE is not 1: a Triton objective may be served a cached "
                  "binary, and every candidate then scores the same",
                  "wrap each evaluation in compileiq.frameworks.triton_candidate(...) (it sets TRITON_ALWAYS_COMPILE=1 "
                  "and a fresh TRITON_CACHE_DIR)")
    if out["helion"]["installed"] and os.environ.get("HELION_SKIP_CACHE") != "1":
        r.problem("helion-cache", "warning", "Helion is installed and HELION_SKIP_CACHE is not 1: cached kernels hide "
                  "the candidate's controls", "use compileiq.frameworks.helion_candidate(...) or set HELION_SKIP_CACHE=1")
    if prebuilt:
        r.problem("flashinfer-prebuilt", "warning",
                  f"{', '.join(prebuilt)} installed: FlashInfer loads prebuilt kernels and never compiles candidates",
                  "pip uninstall flashinfer-cubin flashinfer-jit-cache while searching")


def check_cache(r: Report) -> None:
    root = _env.cache_root()
    info = {"path": str(root), "exists": root.is_dir(), "keep_cache": _env.keep_cache()}
    try:
        root.mkdir(parents=True, exist_ok=True)
        probe = root / f".doctor-{os.getpid()}"
        probe.write_text("ok")
        probe.unlink()
        info["writable"] = True
    except OSError as exc:
        info["writable"] = False
        r.problem("cache", "error", f"the cache folder {root} is not writable ({exc.strerror})",
                  "pass cache_folder= to Search, or set XDG_CACHE_HOME to a writable folder")
    r.facts["cache"] = info


CHECKS = (check_versions, check_environment, check_compilers, check_gpus, check_cache, check_spaces, check_frameworks,
          check_worker)


def collect(live_worker: bool = True) -> Report:
    r = Report()
    for check in CHECKS:
        if check is check_worker and not live_worker:
            continue
        try:
            check(r)
        except Exception as exc:  # a check that cannot run must not hide the others
            r.problem(check.__name__, "warning", f"{check.__name__} could not run: {type(exc).__name__}: {exc}",
                      "report this with the output of python -m compileiq doctor --json")
    return r
