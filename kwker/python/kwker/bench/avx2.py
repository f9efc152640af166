"""The AVX2-only NumPy baseline: np.sort timed in a child process started with
NPY_DISABLE_CPU_FEATURES="X86_V4 AVX512_ICL", so NumPy dispatches its sorts to the X86_V3
(AVX2) build of x86-simd-sort, as on the AVX2-only machine the targets were written for.

The parent keeps the kwker side (under kwker.config(isa="avx2")) and drives the child one
sample at a time over a JSON-lines pipe, so kwker and the child's np.sort still alternate
(k, c, k, c, ...). The child rebuilds the same inputs from the same seeds; its own
perf_counter measures its calls, so pipe latency is not counted.
"""
import gc
import json
import os
import subprocess
import sys
import tempfile

DISABLE = "X86_V4 AVX512_ICL"


def _numpy_simd():
    import numpy as np
    try:
        from numpy._core import _multiarray_umath as mu
    except ImportError:  # NumPy 1.x
        from numpy.core import _multiarray_umath as mu
    feats = dict(getattr(mu, "__cpu_features__", {}))
    dispatch = list(getattr(mu, "__cpu_dispatch__", []))
    return {
        "numpy": np.__version__,
        "baseline": list(getattr(mu, "__cpu_baseline__", [])),
        "dispatch_found": [d for d in dispatch if feats.get(d)],
        "dispatch_not_found": [d for d in dispatch if not feats.get(d)],
        "X86_V4": bool(feats.get("X86_V4")),
        "AVX512_SKX": bool(feats.get("AVX512_SKX")),
        "AVX512F_cpu_flag": bool(feats.get("AVX512F")),
        "AVX2": bool(feats.get("AVX2")),
    }


def numpy_simd():
    """What NumPy's sort dispatch can use in this process (parent side)."""
    try:
        return _numpy_simd()
    except Exception as exc:  # never fail the bench over a diagnostic
        return {"error": f"{type(exc).__name__}: {exc}"}


class Child:
    """A NumPy process with AVX-512 dispatch disabled. Raises RuntimeError when it cannot
    start or when AVX-512 is still active there."""

    def __init__(self):
        env = dict(os.environ)
        env["NPY_DISABLE_CPU_FEATURES"] = DISABLE
        env.pop("KWKER_ISA", None)
        self.errf = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen(
            [sys.executable, "-c", "from kwker.bench.avx2 import child_main; child_main()"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.errf,
            env=env, text=True, bufsize=1)
        try:
            self.info = self._read()
        except BaseException:  # the child died at start: its pipes and log go with it
            self.close()
            raise
        if not self.info.get("ok"):
            self.close()
            raise RuntimeError("np.sort AVX2-only child: AVX-512 dispatch still active or "
                               f"AVX2 missing: {self.info}")

    def _read(self):
        line = self.proc.stdout.readline()
        if not line:
            self.proc.wait()
            self.errf.seek(0)
            err = self.errf.read().strip()[-2000:]
            raise RuntimeError(f"np.sort AVX2-only child exited "
                               f"(status {self.proc.returncode}): {err}")
        return json.loads(line)

    def call(self, **msg):
        self.proc.stdin.write(json.dumps(msg) + "\n")
        self.proc.stdin.flush()
        reply = self._read()
        if "error" in reply:
            raise RuntimeError(f"np.sort AVX2-only child: {reply['error']}")
        return reply

    def close(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write(json.dumps({"op": "quit"}) + "\n")
                self.proc.stdin.flush()
                self.proc.wait(timeout=10)
            except Exception:
                self.proc.kill()
                self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout, self.errf):
            try:
                f.close()
            except Exception:
                pass


class RemoteTimer:
    """Times competitor `key` of case `case_id` inside the child (see timing.py)."""

    def __init__(self, child, case_id, comp_key, sizes):
        self.child = child
        child.call(op="setup", case=case_id, competitor=comp_key, sizes=sizes.as_dict())

    def warm(self):
        return self.child.call(op="warm")["seconds"]

    def time(self, number):
        return self.child.call(op="time", number=number)["seconds"]


def child_main():
    """Entry point of the child. Protocol: one JSON object per line each way."""
    proto = sys.stdout
    sys.stdout = sys.stderr          # nothing but protocol on the real stdout

    def send(obj):
        proto.write(json.dumps(obj) + "\n")
        proto.flush()

    info = _numpy_simd()
    info["ok"] = (not info["X86_V4"]) and (not info["AVX512_SKX"]) and info["AVX2"]
    info["NPY_DISABLE_CPU_FEATURES"] = os.environ.get("NPY_DISABLE_CPU_FEATURES")
    send(info)
    if not info["ok"]:
        return

    from . import cases, timing
    timer = None
    for line in sys.stdin:
        try:
            msg = json.loads(line)
            op = msg["op"]
            if op == "quit":
                break
            if op == "setup":
                timer = None
                sizes = cases.Sizes(**msg["sizes"])
                setup = cases.case_by_id(msg["case"]).setup(sizes, {})
                timer = timing.LocalTimer(setup.competitors[msg["competitor"]])
                gc.collect()
                gc.freeze()
                send({"ok": True})
            elif op == "warm":
                send({"seconds": timer.warm()})
            elif op == "time":
                send({"seconds": timer.time(int(msg["number"]))})
            else:
                send({"error": f"unknown op {op!r}"})
        except Exception as exc:
            send({"error": f"{type(exc).__name__}: {exc}"})


# What holds the libraries torch calls to AVX2 (ATEN_CPU_CAPABILITY holds only torch's own
# kernels): oneDNN (bfloat16 / int8 linear layers, convolutions) and MKL (float32 GEMM).
TORCH_LIBRARIES_AVX2 = {"ONEDNN_MAX_CPU_ISA": "AVX2", "MKL_ENABLE_INSTRUCTIONS": "AVX2"}


def inductor_cache_dir(isa):
    """The TorchInductor cache folder for a process whose torch is held to `isa`: one of its
    own beside the user's (TORCHINDUCTOR_CACHE_DIR, or torch's default under the temporary
    folder). TorchInductor's cache keys do not include ATEN_CPU_CAPABILITY: graphs compiled in a
    run held to AVX2 were later loaded by ordinary processes of the same user, and one of them
    (topk, softmax and gather of an 8 x 50,000 tensor, the benchmark's compile/topk-sampling)
    then wrote past a tensor's end and glibc aborted the interpreter (torch 2.13)."""
    import getpass
    base = os.environ.get("TORCHINDUCTOR_CACHE_DIR") or os.path.join(
        tempfile.gettempdir(), f"torchinductor_{getpass.getuser()}")
    return os.path.join(base, f"kwker-held-{isa}")


def kwker_torch_held(isa, torch):
    """Kwker's engine and torch's CPU capability, and notes on whichever of the two is not held
    to `isa` (the reports of runs held to AVX2: python -m kwker bench --isa, make bench-llm)."""
    import kwker
    engine = kwker.get_isa()
    cap = None
    if torch is not None:
        try:
            cap = torch.backends.cpu.get_cpu_capability()
        except Exception as exc:  # a broken torch: say so rather than guess
            cap = f"unknown ({type(exc).__name__})"
    notes = []
    if engine != isa:
        notes.append(f"kwker runs its {engine} engine (set KWKER_ISA={isa})")
    if cap is not None and str(cap).upper() not in (isa.upper(), "DEFAULT"):
        notes.append(f"torch runs {cap} (set ATEN_CPU_CAPABILITY={isa})")
    libs = {k: os.environ.get(k) for k in TORCH_LIBRARIES_AVX2}
    if torch is not None and isa == "avx2":
        for k, want in TORCH_LIBRARIES_AVX2.items():
            if (libs[k] or "").upper() != want:
                notes.append(f"torch's {k.split('_')[0].lower()} library is not held to AVX2 "
                             f"(set {k}={want})")
    return {"kwker_engine": engine, "torch_cpu_capability": cap, "torch_libraries": libs}, notes
