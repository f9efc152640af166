"""Section 13: PyTorch. The same torch call with kwker.torch_ops installed (the kwker side)
and uninstalled (torch's own kernels), interleaved in the same run, torch and Kwker on 2
threads; and torch.compile(backend="kwker") against Inductor and eager.

Each timed callable switches the overrides on or off in its prepare() hook, outside the clock
(bench/timing.py). The compiled operators are used where the wheel has them (the per-call row
requires them); one row per implementation shows the Python-registered operators too.
"""
import contextlib
import gc
import os
import shutil
import tempfile

import numpy as np

from .cases import Case, Competitor, Setup, _torch_threads, rng_for

SECTION = "13"  # its title is in cases.SECTIONS
_REQ = "torch"


class _Switched:
    """fn() with kwker.torch_ops installed (compiled or Python-registered) or uninstalled."""

    def __init__(self, fn, installed, compiled=None):
        self.fn, self.installed, self.compiled = fn, installed, compiled

    def prepare(self):
        import kwker.torch_ops as ops
        if self.installed:
            ops.install(compiled=self.compiled)
        else:
            ops.uninstall()

    def __call__(self):
        return self.fn()


_CACHE = []  # one private cache folder per bench run: each self-check runs once


def _cache_dir():
    if not _CACHE:
        _CACHE.append(tempfile.mkdtemp(prefix="kwker-bench-"))
    return _CACHE[0]


def remove_cache():
    """Delete the run's cache folder (the runner calls this when the run ends: each run used
    to leave one kwker-bench-* folder in the temporary directory)."""
    while _CACHE:
        shutil.rmtree(_CACHE.pop(), ignore_errors=True)


@contextlib.contextmanager
def _torch_env(torch):
    """2 torch threads, the bench's own self-check cache (the user's is left alone), and nothing
    installed afterwards."""
    import kwker.torch_ops as ops
    old = os.environ.get("KWKER_CACHE_DIR")
    os.environ["KWKER_CACHE_DIR"] = _cache_dir()
    try:
        with _torch_threads(torch, 2):
            yield
    finally:
        ops.uninstall()
        if old is None:
            os.environ.pop("KWKER_CACHE_DIR", None)
        else:
            os.environ["KWKER_CACHE_DIR"] = old


def _freeze():
    """Moves what the setup imported (kwker.torch_ops, torch._dynamo, Inductor: hundreds of
    thousands of objects) out of the collector's reach, as the runner did for its own imports:
    otherwise every per-sample gc.collect() took 27 ms. The runner unfreezes at the end."""
    gc.collect()
    gc.freeze()


def _tensor(torch, cid, dtype, shape):
    rng = rng_for(cid)
    n = int(np.prod(shape))
    if dtype in ("float16", "bfloat16", "float64"):
        return torch.from_numpy(rng.random(n).reshape(shape)).to(getattr(torch, dtype))
    if dtype == "float32":
        a = rng.random(n, dtype=np.float32)
    elif dtype == "bool":
        a = rng.integers(0, 2, n).astype(bool)
    else:
        info = np.iinfo(dtype)
        a = rng.integers(info.min, info.max, size=n, dtype=dtype, endpoint=True)
    return torch.from_numpy(a.reshape(shape))


def _op_case(cid, desc, dtype, shape_of, call, target, compiled=None, small=False, slow=False,
             note=""):
    """A torch call timed with the overrides on (kwker) and off (competitor)."""

    def setup(sizes, mods):
        torch = mods["torch"]
        t = _tensor(torch, cid, dtype, shape_of(sizes))
        fn = call(torch, t)
        import kwker.torch_ops  # noqa: F401  (imported before the freeze)
        _freeze()
        return Setup(kwker=_Switched(fn, True, compiled),
                     competitors={"torch": _Switched(fn, False)}, ctx=_torch_env(torch))

    impl = {None: "installed", True: "installed, compiled operators",
            False: "installed, Python-registered operators"}[compiled]
    return Case(cid, SECTION, dtype, f"{desc} with kwker.torch_ops {impl}",
                [Competitor("torch", f"{desc}, torch's own kernel (kwker.torch_ops "
                            "uninstalled)", target, requires=_REQ)],
                setup, n=lambda s: int(np.prod(shape_of(s))), shape=_shape(shape_of), small=small,
                slow=slow, note=note)


def _shape(shape_of):
    """The report's shape column, for 2-D inputs only."""
    return lambda s: "x".join(map(str, shape_of(s))) if len(shape_of(s)) > 1 else None


def _vocab(sizes):
    return (8, 50_000 if sizes.preset != "smoke" else 500)


def _sampling_step(torch, sizes=None):
    def step(logits):
        v, i = torch.topk(logits / 0.8, 50, dim=-1)
        p = torch.softmax(v, dim=-1)
        return i.gather(-1, torch.argmax(p, dim=-1, keepdim=True)), p
    return step


def _mlp(torch, sizes=None):
    gen = torch.Generator().manual_seed(0)
    w1 = torch.randn(512, 1024, generator=gen) / 32
    w2 = torch.randn(1024, 256, generator=gen) / 32

    def mlp(x):
        return torch.relu(x @ w1).mul(0.5).add(1.0) @ w2
    return mlp


def _decoder(torch, sizes):
    """A decoder-like stack of linears at one token: 4 layers of hidden 1024 (LLaMA-shaped
    projections, SiLU-gated MLP, RMS norms; attention over one position reduces to its
    projections), about 200 MB of float32 weights."""
    nn = torch.nn
    smoke = sizes.preset == "smoke"
    d, f, layers = (64, 176, 2) if smoke else (1024, 2816, 4)
    torch.manual_seed(0)

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.q, self.k, self.v, self.o = (nn.Linear(d, d, bias=False) for _ in range(4))
            self.gate, self.up = nn.Linear(d, f, bias=False), nn.Linear(d, f, bias=False)
            self.down = nn.Linear(f, d, bias=False)

        def forward(self, x):
            h = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
            x = x + self.o(self.v(h) * torch.sigmoid(self.q(h) * self.k(h)))
            h = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
            return x + self.down(torch.nn.functional.silu(self.gate(h)) * self.up(h))

    return nn.Sequential(*(Layer() for _ in range(layers))).eval()


def _decoder_shape(sizes):
    return (1, 64 if sizes.preset == "smoke" else 1024)


def _compile_case(cid, desc, make_fn, shape_of, competitors, target, mode=None):
    """torch.compile(fn, backend="kwker") against the competitors' compiles of the same fn.
    In the smoke preset (the test-suite) Inductor is replaced by eager, so that no row
    compiles for half a minute: it checks the machinery only. mode: the backend's mode option
    (a CPU-backend mode; the lossy ones have the rewritten graph as their only candidate)."""

    def setup(sizes, mods):
        torch = mods["torch"]
        import kwker.torch_ops as ops
        ops.uninstall()
        smoke = sizes.preset == "smoke"
        x = _tensor(torch, cid, "float32", shape_of(sizes))
        fn = make_fn(torch, sizes)
        opts = {"cache_dir": os.path.join(_cache_dir(), "dynamo")}
        if mode:
            opts["mode"] = mode
        if smoke and mode not in ("medium", "int8", "int4"):
            opts["candidates"] = ["eager", "kwker"]
        torch._dynamo.reset()
        with torch.no_grad():
            kw = torch.compile(fn, backend="kwker", options=opts, dynamic=False)
            kw(x)  # timing of the candidates happens here, outside the measurement
            comps = {}
            for key in competitors:
                backend = "eager" if key == "eager" or smoke else "inductor"
                comps[key] = torch.compile(fn, backend=backend, dynamic=False)
                comps[key](x)

        def run(f):
            def call():
                with torch.no_grad():
                    return f(x)
            return call
        _freeze()
        return Setup(kwker=run(kw), competitors={k: run(f) for k, f in comps.items()},
                     ctx=_torch_env(torch))

    descs = {"inductor": "torch.compile(fn) (Inductor), kwker.torch_ops uninstalled",
             "eager": "torch.compile(fn, backend='eager')"}
    extra = f", options={{'mode': {mode!r}}}" if mode else ""
    how = f"torch.compile(fn, backend='kwker'{extra})"
    return Case(cid, SECTION, "float32", f"{how}: {desc}",
                [Competitor(k, descs[k], target, requires=_REQ) for k in competitors],
                setup, n=lambda s: int(np.prod(shape_of(s))), shape=_shape(shape_of), slow=True)


def cases():
    big = lambda s: (s.n,)  # noqa: E731
    out = [
        _op_case("torch.sort/float32", "torch.sort(t)", "float32", big,
                 lambda torch, t: lambda: torch.sort(t), 10.0, slow=True),
        _op_case("torch.sort/int64", "torch.sort(t)", "int64", big,
                 lambda torch, t: lambda: torch.sort(t), 2.0, slow=True),
        _op_case("torch.topk100/float32", "torch.topk(t, 100)", "float32", big,
                 lambda torch, t: lambda: torch.topk(t, 100), 5.0),
        _op_case("torch.topk50/rows", "torch.topk(t, 50, dim=-1)", "float32", _vocab,
                 lambda torch, t: lambda: torch.topk(t, 50, dim=-1), 2.0),
        # Rows of 1,000 (class scores, per-row candidates): never slower than torch's kernels.
        *[_op_case(f"torch.topk10/rows1000/{dt}", "torch.topk(t, 10, dim=1)", dt,
                   lambda s: (max(1, s.rows // 10), s.cols),
                   lambda torch, t: lambda: torch.topk(t, 10, dim=1), 1.0)
          for dt in ("float32", "float64", "int64")],
        # Along dim 0 of a contiguous matrix: down the columns in the core (kwker_sort_cols;
        # torch.msort is this).
        *[_op_case(f"torch.sort/dim0/{dt}", "torch.sort(t, dim=0)", dt,
                   lambda s: (10, max(1, s.n // 100)),
                   lambda torch, t: lambda: torch.sort(t, dim=0), 1.0)
          for dt in ("float32", "int64")],
        # Top-k down the columns in place (kwker_topk_cols): a square matrix, and narrow rows
        # of 10 (which took torch's kernel before).
        *[_op_case(f"torch.topk5/dim0/{dt}", "torch.topk(t, 5, dim=0)", dt,
                   lambda s: (max(5, s.rows // 10), s.cols),
                   lambda torch, t: lambda: torch.topk(t, 5, dim=0), 1.0)
          for dt in ("float32", "int64")],
        *[_op_case(f"torch.topk5/dim0-narrow/{dt}", "torch.topk(t, 5, dim=0)", dt,
                   lambda s: (max(5, s.n // 100), 10),
                   lambda torch, t: lambda: torch.topk(t, 5, dim=0), 1.0)
          for dt in ("float32", "int64")],
        # 1-D stable sorts of 1e5 and 1e6 keys, where torch's own kernel is a radix sort for
        # integers: on AMD CPUs 8- and 16-bit ones are left to it from 65,536 keys (ops.cc's
        # kNarrowRadixMin; Kwker's run them on Intel), so those rows hold "never slower" (0.97x:
        # there torch against itself plus the override's check); bool and 32 / 64-bit keys run
        # on Kwker everywhere.
        *[_op_case(f"torch.sort/{dt}/n{n}", "torch.sort(t, stable=True)", dt,
                   lambda s, n=n: (n if s.preset != "smoke" else n // 100,),
                   lambda torch, t: lambda: torch.sort(t, stable=True),
                   0.97 if dt in ("uint8", "int8", "int16") else 1.0)
          for dt in ("uint8", "int8", "bool", "int16", "int32", "int64")
          for n in (100_000, 1_000_000)],
        # A large k (a tenth of a 1-D tensor): the candidates' selection and sort dominate.
        *[_op_case(f"torch.topk/k-tenth/{dt}", "torch.topk(t, n // 10)", dt,
                   lambda s: (s.n // 10,),
                   lambda torch, t: lambda: torch.topk(t, t.numel() // 10), 1.0)
          for dt in ("float32", "float64", "int64")],
        *[_op_case(f"torch.kthvalue/dim0/{dt}", "torch.kthvalue(t, 100, dim=0)", dt,
                   lambda s: (max(100, s.rows // 10), s.cols),
                   lambda torch, t: lambda: torch.kthvalue(t, 100, dim=0), 1.0)
          for dt in ("float32", "int64")],
        *[_op_case(f"torch.kthvalue/rows1000/{dt}", "torch.kthvalue(t, 100, dim=1)", dt,
                   lambda s: (max(1, s.rows // 10), s.cols),
                   lambda torch, t: lambda: torch.kthvalue(t, min(100, t.shape[1]), dim=1), 1.0)
          for dt in ("float32", "float64", "int64")],
        _op_case("torch.sort/dim1", "torch.sort(t, dim=1)", "float32",
                 lambda s: (s.rows, s.cols), lambda torch, t: lambda: torch.sort(t, dim=1), 8.0,
                 slow=True),
        _op_case("torch.sort/small", "torch.sort(t) per call", "float32",
                 lambda s: (s.small,), lambda torch, t: lambda: torch.sort(t), 3.0,
                 compiled=True, small=True),
        # A strided view per call (every second key of 2 x small): one gather, no dispatcher copies.
        _op_case("torch.sort/small-strided", "torch.sort(t[::2]) per call", "float32",
                 lambda s: (2 * s.small,), lambda torch, t: lambda: torch.sort(t[::2]), 1.0,
                 compiled=True, small=True),
        # Informational: the Python-registered operators, other entry points and dtypes.
        _op_case("torch.sort/float32/python", "torch.sort(t)", "float32", big,
                 lambda torch, t: lambda: torch.sort(t), None, compiled=False, slow=True),
        _op_case("torch.sort/small/python", "torch.sort(t) per call", "float32",
                 lambda s: (s.small,), lambda torch, t: lambda: torch.sort(t), None,
                 compiled=False, small=True),
        _op_case("torch.argsort/float32", "torch.argsort(t, stable=True)", "float32",
                 lambda s: (s.n // 10,), lambda torch, t: lambda: torch.argsort(t, stable=True),
                 None),
        _op_case("torch.kthvalue/float32", "torch.kthvalue(t, n // 2)", "float32",
                 lambda s: (s.n // 10,),
                 lambda torch, t: lambda: torch.kthvalue(t, t.numel() // 2), None),
        _op_case("torch.unique/int64", "torch.unique(t % 65536)", "int64",
                 lambda s: (s.n // 10,),
                 lambda torch, t: (lambda u: lambda: torch.unique(u))(t % 65536), None),
        _compile_case("compile/topk-sampling", "top-k sampling step, batch 8, vocabulary "
                      "50,000", _sampling_step, _vocab, ["inductor"], 1.5),
        _compile_case("compile/mlp", "an MLP with no sort (within 5% of the faster)", _mlp,
                      lambda s: (64, 512), ["inductor", "eager"], 0.95),
    ]
    # The CPU backend's linear kernels through torch.compile's CPU-backend modes, batch 1
    # (informational: the decode targets are measured through optimize() and generate()
    # in the cpu_backend section).
    out += [_compile_case(f"compile/decoder-{m}", "decoder-like stack of linears, batch 1",
                          _decoder, _decoder_shape, ["inductor", "eager"], None, mode=m)
            for m in ("high", "medium", "int8", "int4")]
    out += [_op_case(f"torch.sort/{dt}/1e5", "torch.sort(t)", dt, lambda s: (s.n // 100,),
                     lambda torch, t: lambda: torch.sort(t, descending=True), None)
            for dt in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                       "uint64", "float16", "bfloat16", "float32", "float64")]
    return out
