"""A real two-objective ptxas objective: spill bytes and SASS instruction count of spill_kernel.

The candidate arrives as the hex string of an open ptxas controls file (a PtxasSearchSpace
candidate); ``save_compiler_config`` writes it into a folder of its own for this evaluation and
``compileiq.compilers.ptxas`` compiles the kernel with it. BASELINE_CONFIG ({}) compiles with no
controls at all. Both objectives are minimised:

- spill bytes: spill stores + spill loads reported by ``ptxas -v`` (local-memory traffic the
  register allocator added);
- SASS instructions: how much code the kernel became (``cuobjdump -sass``).

``run_ptxas_demo`` runs the search and prints the Pareto front. With a GPU (cuda-python and a
driver present) it times the kernel instead: (median time in microseconds, spill bytes), with each
candidate's output checked against the baseline build's.
"""

from __future__ import annotations

import os
import tempfile
import time
from importlib import resources
from pathlib import Path

from .. import BASELINE_CONFIG, INVALID_SCORE, Search, SearchConfiguration
from ..compilers import CompileError, CompilerNotFoundError, find_nvcc, find_ptxas, nvcc, ptxas
from ..utils.helpers import save_compiler_config

KERNEL = "spill_kernel"
DEFAULT_ARCH = "sm_90"
TIMEOUT_S = 60  # generous: a few option mixes make ptxas much slower than the ~20 ms default build


def bundled_file(name: str) -> Path:
    return Path(str(resources.files("compileiq.examples") / name))


def bundled_ptx() -> Path:
    """The PTX shipped with the package (made by nvcc 13.0), for machines without nvcc."""
    return bundled_file("spill_kernel.ptx")


def bundled_cu() -> Path:
    return bundled_file("spill_kernel.cu")


def prepare_ptx(folder: str | os.PathLike, arch: str = DEFAULT_ARCH) -> tuple[Path, str]:
    """PTX made by the installed nvcc from the bundled .cu, else the bundled .ptx; and where it came from."""
    try:
        tool = find_nvcc()
        r = nvcc(bundled_cu(), arch=arch, kind="ptx", out=Path(folder) / "spill_kernel.ptx", timeout=120)
        return r.artifact, f"made by nvcc {tool.version_str} from spill_kernel.cu"
    except (CompilerNotFoundError, CompileError) as exc:
        # e.g. the nvidia-cuda-nvcc wheel's nvcc, which has no cicc and cannot compile .cu files
        return bundled_ptx(), f"the bundled spill_kernel.ptx (nvcc unusable: {str(exc).splitlines()[0][:120]})"


def _compile(ptx: str, arch: str, config, folder: str, timeout: float):
    controls = None
    if config != BASELINE_CONFIG:
        controls = save_compiler_config(Path(folder) / "candidate.ctl", config)
    return ptxas(ptx, arch=arch, controls=controls, out=Path(folder) / "candidate.cubin", timeout=timeout)


class PtxasSpillObjective:
    """``objective(config_hex) -> (spill bytes, SASS instructions)`` for spill_kernel (or any PTX)."""

    num_objectives = 2

    def __init__(self, ptx: str | os.PathLike | None = None, arch: str = DEFAULT_ARCH, timeout: float = TIMEOUT_S):
        self.ptx = str(ptx) if ptx is not None else str(bundled_ptx())
        self.arch = arch
        self.timeout = timeout

    def __call__(self, config):
        with tempfile.TemporaryDirectory(prefix="ciq-ptxas-eval-") as d:
            r = _compile(self.ptx, self.arch, config, d, self.timeout)
            return (r.spill_stores + r.spill_loads, r.sass_count)


objective = PtxasSpillObjective()


class PtxasSpillGpuObjective:
    """``objective(config_hex) -> (median microseconds, spill bytes)``, timing spill_kernel on GPU ``device``.

    Candidates whose output differs from the baseline build's score INVALID_SCORE.
    """

    num_objectives = 2

    def __init__(self, ptx: str | os.PathLike | None = None, arch: str | None = None, n: int = 2048,
                 warmup: int = 5, repeats: int = 25, device: int = 0, timeout: float = TIMEOUT_S):
        if n % 128:
            raise ValueError(f"n={n} must be a multiple of 128 (one 16x16-thread block covers a 128x128 tile)")
        self.ptx = str(ptx) if ptx is not None else str(bundled_ptx())
        self.arch = arch
        self.n, self.warmup, self.repeats, self.device, self.timeout = n, warmup, repeats, device, timeout
        self._reference = None  # baseline output, computed once per worker process

    def _run(self, cubin: Path):
        import numpy as np

        from ..compilers.gpu_timing import CubinKernel, DeviceBuffer, time_kernel
        n = self.n
        rng = np.random.default_rng(0)
        a = rng.standard_normal((n, n), dtype=np.float32)
        b = rng.standard_normal((n, n), dtype=np.float32)
        c = np.zeros((n, n), dtype=np.float32)
        grid, block = (n // 128, n // 128), (16, 16)
        with DeviceBuffer.from_array(a, self.device) as da, DeviceBuffer.from_array(b, self.device) as db, \
                DeviceBuffer(c.nbytes, self.device) as dc:
            kernel = CubinKernel(cubin, KERNEL, self.device)
            try:
                kernel.launch(grid, block, [da, db, dc, n])
                dc.download(c)
            finally:
                kernel.unload()
            timing = time_kernel(cubin, KERNEL, grid, block, [da, db, dc, n], warmup=self.warmup,
                                 repeats=self.repeats, device=self.device)
        return c, timing

    def __call__(self, config):
        import numpy as np

        from ..compilers.gpu_timing import device_arch
        arch = self.arch or device_arch(self.device)
        with tempfile.TemporaryDirectory(prefix="ciq-ptxas-gpu-eval-") as d:
            if self._reference is None:
                base = _compile(self.ptx, arch, BASELINE_CONFIG, d, self.timeout)
                self._reference = self._run(base.artifact)[0]
            r = _compile(self.ptx, arch, config, d, self.timeout)
            out, timing = self._run(r.artifact)
        if not np.allclose(out, self._reference, rtol=1e-3, atol=1e-3):
            return INVALID_SCORE  # wrong result: never a winner, however fast
        return (timing.median * 1e6, r.spill_stores + r.spill_loads)


def _options_of(params) -> str:
    from ..controls.format import parse_controls
    if params == BASELINE_CONFIG or not isinstance(params, str):
        return "(no controls)"
    try:
        opts = parse_controls(bytes.fromhex(params)).options
    except Exception:  # a vendor ACF or anything else opaque: show its size only
        return f"({len(params) // 2} B controls file)"
    return " ".join(opts) or "(ptxas defaults)"


def _table(rows: list[tuple], headers: tuple[str, ...]) -> str:
    cells = [tuple(str(c) for c in r) for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)]
    line = lambda r: "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |"  # noqa: E731
    return "\n".join([line(headers), "|" + "|".join("-" * (w + 2) for w in widths) + "|", *map(line, cells)])


def _gpu_present() -> bool:
    try:
        from ..compilers.gpu_timing import gpu_available
        return gpu_available()
    except Exception:
        return False


def run_ptxas_demo(generations: int = 6, pool_size: int = 16, num_workers: int = 2, output: str | os.PathLike | None = None,
                   gpu: bool | None = None, seed: int = 7, disable_progress_bar: bool = False):
    """Tune ptxas options of spill_kernel; print progress, the Pareto front and the result file's path.

    ``gpu``: None = time the kernel when a GPU is usable, else count spills and SASS instructions.
    Returns the SearchResult.
    """
    from ..search_spaces.compilers import PtxasSearchSpace
    from ..worker import MultiProcessWorker

    out = Path(output) if output else Path(tempfile.mkdtemp(prefix="compileiq-ptxas-demo-")) / "results.csv"
    out.parent.mkdir(parents=True, exist_ok=True)
    use_gpu = _gpu_present() if gpu is None else gpu
    tool = find_ptxas()
    ptx, origin = prepare_ptx(out.parent)
    space = PtxasSearchSpace()
    if use_gpu:
        obj = PtxasSpillGpuObjective(ptx)
        labels = ("time us", "spill B")
        names = ("median kernel time (us)", "spill bytes")
        num_workers = 1  # one kernel on the GPU at a time, or the timings disturb each other
    else:
        from ..compilers.sass import find_tool
        find_tool("cuobjdump"), find_tool("nvdisasm")  # fail here, naming the wheels, not in every candidate
        obj = PtxasSpillObjective(ptx)
        labels = ("spill B", "SASS instr")
        names = ("spill bytes (stores + loads)", "SASS instructions")
    print(f"CompileIQ demo: tuning ptxas options of a register-heavy CUDA kernel ({KERNEL}, "
          f"{obj.arch or 'the architecture of GPU 0'})")
    print(f"  ptxas {tool.version_str} at {tool.path}; PTX: {origin}")
    print(f"  objectives: {names[0]} and {names[1]}, both minimised; {generations} generations x {pool_size} "
          f"candidates, {num_workers} worker(s)" + ("; timing on the GPU" if use_gpu else ""))
    base = obj(BASELINE_CONFIG)
    print(f"  baseline (no controls): {base[0]:g} {names[0].split(' (')[0]}, {base[1]:g} {names[1].split(' (')[0]}")
    cfg = SearchConfiguration(generations=generations, pool_size=pool_size, num_objectives=2, seed=seed)
    t0 = time.perf_counter()
    res = Search(obj, space, cfg, worker_type=MultiProcessWorker, dump_results=out,
                 disable_progress_bar=disable_progress_bar).start(num_workers=num_workers, task_timeout=TIMEOUT_S * 2)
    elapsed = time.perf_counter() - t0
    df = res.get_results()
    failed = int(sum(1 for v in df["score_1"] if v == INVALID_SCORE))
    print(f"searched {len(res)} candidates in {elapsed:.1f} s ({failed} failed); results: {out}")
    front = res.pareto_front()
    # many option mixes build the same kernel: one row per point, with its shortest option list
    points: dict[tuple, list[str]] = {}
    for r in front:
        points.setdefault((float(r["score_1"]), float(r["score_2"])), []).append(_options_of(r["params"]))
    rows = [(f"{a:g}", f"{b:g}", len(opts), min(opts, key=len)) for (a, b), opts in sorted(points.items())]
    print(f"Pareto front: {len(points)} point(s) from {len(front)} candidate(s)")
    print(_table(rows, (labels[0], labels[1], "candidates", "shortest ptxas options")))
    if front and not use_gpu:
        best = min(float(r["score_1"]) for r in front)
        if base[0] > 0:
            print(f"spill bytes: baseline {base[0]:g} -> best {best:g} ({(best - base[0]) / base[0] * 100:+.0f}%)")
        else:
            print(f"spill bytes: the baseline build does not spill; best candidate {best:g}")
    elif front:
        best = min(float(r["score_1"]) for r in front)
        print(f"kernel time (search measurement, validate before shipping): baseline {base[0]:.1f} us -> "
              f"best {best:.1f} us ({base[0] / best:.2f}x)")
    return res


__all__ = ["objective", "PtxasSpillObjective", "PtxasSpillGpuObjective", "run_ptxas_demo", "prepare_ptx",
           "bundled_ptx", "bundled_cu", "KERNEL"]
