"""torch.compile(backend="kwker", options={"mode": ...}) with the CPU backend's modes: the
graph's linear calls run Kwker's linear kernels on weights packed once at compile time, with the
same numbers as kwker.cpu_backend.optimize; weights changed after the compile are re-packed;
the choice cache is keyed by the mode; bad options fail before anything is compiled;
KWKER_DISABLE=1 and a torch without the compiled operators fall back.

Only one test compiles with Inductor (the rewritten graph in a lossy mode); the others restrict
the candidates through options= (conftest.compile_env shares one Inductor cache)."""
import os

import pytest

from kwker import _integrations  # noqa: E402
import torch
import torch.nn.functional as F

import kwker.cpu_backend as cb
import kwker.dynamo as dyn
from kwker._torch import extension

needs_ops = pytest.mark.skipif(not extension.availability()[0],
                               reason=f"compiled operators unavailable: "
                                      f"{extension.availability()[1]}")
pytestmark = pytest.mark.filterwarnings(
    "ignore:`torch.jit.script_method` is deprecated:DeprecationWarning")

# max |compiled - torch| / max |torch| of a whole model: the CPU backend's per-mode bounds
# (test_cpu_backend.py).
BOUND = {"high": 1e-5, "medium": 2e-2, "int8": 3e-2, "int4": 0.3}
MODES = ("high", "medium", "int8", "int4")


class MLP(torch.nn.Module):
    """A residual MLP block and a head, with a K (72) that is not a multiple of 32."""

    def __init__(self):
        super().__init__()
        g = torch.Generator().manual_seed(0)
        self.up = torch.nn.Linear(72, 160)
        self.down = torch.nn.Linear(160, 72, bias=False)
        self.norm = torch.nn.LayerNorm(72)
        self.head = torch.nn.Linear(72, 24)
        with torch.no_grad():
            for p in self.parameters():
                p.copy_(torch.randn(p.shape, generator=g) / 8)

    def forward(self, x):
        h = x + self.down(F.gelu(self.up(x)))
        return self.head(self.norm(h))


class Functional(torch.nn.Module):
    """F.linear on a buffer (the model's: rewritten), on a weight computed in the graph and on
    the caller's weight (not the model's: torch's linear stays), on bfloat16 activations."""

    def __init__(self):
        super().__init__()
        self.register_buffer("w", torch.randn(40, 72) / 8)
        self.scale = torch.nn.Parameter(torch.randn(40, 72) / 8)
        self.wb = torch.nn.Parameter((torch.randn(40, 72) / 8).to(torch.bfloat16))

    def forward(self, x, w_caller):
        a = F.linear(x, self.w)
        b = F.linear(x, self.scale * 2)
        c = F.linear(x, w_caller)
        d = F.linear(x.to(torch.bfloat16), self.wb)
        return a, d, b, c


def _compile(model, choices, **options):
    return torch.compile(model, backend="kwker", dynamic=False,
                         options={"cache_dir": str(choices), **options})


def _rel(got, want):
    return float((got - want).abs().max() / want.abs().max())


@needs_ops
@pytest.mark.parametrize("mode", MODES)
def test_each_mode_gives_optimize_s_numbers(compile_env, mode):
    model = MLP().eval()
    x = torch.randn(3, 72, generator=torch.Generator().manual_seed(1))
    opts = {"mode": mode}
    if mode == "high":
        opts["candidates"] = ["kwker"]     # no timing against Inductor here
    f = _compile(model, compile_env, **opts)
    with torch.no_grad():
        got = f(x)
        want = cb.optimize(model, mode)(x)  # the same kernels on the same packed weights
        ref = model(x)
    assert torch.equal(got, want)
    assert _rel(got, ref) < BOUND[mode]
    if mode != "high":
        assert not torch.equal(got, ref)    # really quantised
    s = dyn.stats()
    assert s["packed"] == 3 and s["repacked"] == 0 and s["timed"] == 0


@needs_ops
def test_only_linears_on_the_model_s_own_weights_are_rewritten(compile_env):
    model = Functional().eval()
    x, w = torch.randn(5, 72), torch.randn(40, 72)
    with torch.no_grad():
        got = _compile(model, compile_env, mode="high", candidates=["kwker"])(x, w)
        want = model(x, w)
    assert dyn.stats()["packed"] == 2
    assert torch.allclose(got[0], want[0], rtol=1e-5, atol=1e-5)
    assert got[1].dtype == torch.bfloat16                 # computed in float32, returned as given
    assert torch.allclose(got[1].float(), want[1].float(), rtol=2e-2, atol=2e-2)
    for g, r in zip(got[2:], want[2:]):                   # torch's own linear
        assert torch.equal(g, r)


@needs_ops
def test_a_symbolically_traced_graph_calling_the_backend_directly(compile_env):
    # nn.Linear as call_module nodes and F.linear on get_attr weights (no Dynamo placeholders).
    model, fn = MLP().eval(), Functional().eval()
    x, w = torch.randn(2, 72), torch.randn(40, 72)
    with torch.no_grad():
        got = dyn.backend(torch.fx.symbolic_trace(model), [x], options={"mode": "int4"})(x)
        assert torch.equal(got, cb.optimize(model, "int4")(x))
        got = dyn.backend(torch.fx.symbolic_trace(fn), [x, w], options={"mode": "int8"})(x, w)
        want = fn(x, w)
    assert dyn.stats()["packed"] == 3 + 2
    assert _rel(got[0], want[0]) < BOUND["int8"] and torch.equal(got[3], want[3])


@needs_ops
def test_weights_are_packed_once_and_repacked_only_when_the_model_changes_them(compile_env):
    model = MLP().eval()
    f = _compile(model, compile_env, mode="int8")
    x = torch.randn(1, 72)
    with torch.no_grad():
        first = f(x)
        for _ in range(5):
            assert torch.equal(f(x), first)
    assert dyn.stats()["packed"] == 3 and dyn.stats()["repacked"] == 0
    with torch.no_grad():
        f(torch.randn(4, 72))                # new shape: a second graph, the same packed weights
    assert dyn.stats()["graphs"] == 2 and dyn.stats()["packed"] == 3
    other = MLP()
    with torch.no_grad():
        other.up.weight.mul_(-2.0)
    model.load_state_dict(other.state_dict())   # in place: Dynamo does not recompile
    with torch.no_grad():
        got = f(x)
        want = cb.optimize(model, "int8")(x)
    assert torch.equal(got, want) and not torch.equal(got, first)
    assert dyn.stats()["repacked"] == 3          # load_state_dict copies into every tensor
    with torch.no_grad():                        # ... and the second graph shares the re-pack
        assert torch.equal(f(torch.ones(4, 72)), cb.optimize(model, "int8")(torch.ones(4, 72)))
    assert dyn.stats()["packed"] == 3 and dyn.stats()["repacked"] == 3


@needs_ops
def test_the_choice_cache_is_keyed_by_the_mode(compile_env, capfd):
    model = MLP().eval()
    x = torch.randn(2, 72)

    def run(**opts):
        torch._dynamo.reset()
        with torch.no_grad():
            return _compile(model, compile_env, candidates=["eager", "kwker"], **opts)(x)

    run(mode="high")
    assert dyn.stats()["timed"] == 1 and dyn.stats()["last"]["mode"] == "high"
    run(mode="high", threads=1)             # another CPU-backend setting: not the same choice
    assert dyn.stats()["timed"] == 2
    run(mode="high")                        # the first again: read from the cache
    assert dyn.stats()["timed"] == 2 and dyn.stats()["cache_hits"] == 1
    assert len(os.listdir(compile_env)) == 2
    # A lossy mode never reads a float32 choice: its candidates are Kwker's only.
    run_lossy = _compile(model, compile_env, mode="medium")
    torch._dynamo.reset()
    with torch.no_grad():
        run_lossy(x)
    assert dyn.stats()["timed"] == 2 and dyn.stats()["cache_hits"] == 1


@pytest.mark.parametrize("options,msg", [
    ({"mode": "fp8"}, r"mode='fp8' is not valid; use 'auto', a candidate \(inductor, eager, "
                      r"kwker, kwker-inductor\) or a CPU-backend mode "
                      r"\(high, medium, int8, int4\)"),
    ({"mode": "int4", "group_size": 48}, "options group_size=48 does not divide into"),
    ({"mode": "int4", "group_size": "32"}, "group_size='32' does not divide"),
    ({"mode": "int8", "group_size": 64}, "group_size is int4's group size"),
    ({"group_size": 64}, r"group_size apply to the CPU-backend modes .* not mode='auto'"),
    ({"mode": "int8", "scheme": "q4_0"},
     r"scheme 'q4_0' is not one of mode 'int8''s \(q8_0, per_channel\)"),
    ({"mode": "high", "threads": 0}, "threads must be an int >= 1"),
    ({"mode": "int4", "candidates": ["inductor"]}, "its candidates are 'kwker' and "
                                                   "'kwker-inductor'"),
])
def test_bad_options_fail_before_anything_is_compiled(compile_env, options, msg):
    f = _compile(MLP().eval(), compile_env, **options)
    with pytest.raises(Exception, match=msg), torch.no_grad():
        f(torch.randn(1, 72))
    assert dyn.stats()["packed"] == 0 and not compile_env.exists()


def test_kwker_disable_leaves_the_graph_unchanged_in_every_mode(compile_env, monkeypatch):
    monkeypatch.setenv("KWKER_DISABLE", "1")
    model = MLP().eval()
    x = torch.randn(2, 72)
    with pytest.warns(_integrations.DisabledWarning, match="KWKER_DISABLE=1 is set"):            # once in the process
        for mode in MODES:
            torch._dynamo.reset()
            with torch.no_grad():
                assert torch.equal(_compile(model, compile_env, mode=mode)(x), model(x))
    assert dyn.stats()["disabled"] == 4 and dyn.stats()["packed"] == 0


def test_without_the_compiled_operators_a_mode_falls_back_with_a_notice(compile_env, monkeypatch,
                                                                         capfd):
    monkeypatch.setattr(extension, "running_torch", lambda: "2.99.0")
    monkeypatch.setattr(dyn, "_notices", set())
    model = MLP().eval()
    x = torch.randn(2, 72)
    for _ in range(2):
        torch._dynamo.reset()
        with torch.no_grad():
            got = _compile(model, compile_env, mode="int4", candidates=["kwker"])(x)
        assert torch.equal(got, model(x))        # float32: the graph as it is
    err = [line for line in capfd.readouterr().err.splitlines() if "kwker.cpu_backend" in line]
    assert len(err) == 1                         # once per process and mode
    assert err[0].startswith("kwker.cpu_backend: the compiled PyTorch operators were built for "
                             "torch ") and "not 2.99.0" in err[0]
    assert "compiles in float32 as mode 'auto' (see python -m kwker doctor)" in err[0]
    assert dyn.stats()["fallbacks"] == 2 and dyn.stats()["packed"] == 0


@needs_ops
def test_the_rewritten_graph_under_inductor(compile_env):
    # Linears only: Inductor lowers kwker_torch::linear to extern calls and generates no C++ kernel,
    # which keeps this compile short, and the result must then be optimize()'s bit for bit.
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(72, 160), torch.nn.Linear(160, 24)).eval()
    x = torch.randn(4, 72)
    f = _compile(model, compile_env, mode="int4", group_size=64, scheme="q4_0",
                 candidates=["kwker-inductor"])
    with torch.no_grad():
        got = f(x)
        assert torch.equal(got, cb.optimize(model, "int4", group_size=64, scheme="q4_0")(x))
    assert dyn.stats()["packed"] == 2
    with torch.no_grad():                       # re-packing reaches Inductor's buffers too
        model[1].weight.mul_(0.5)
        got = f(x)
        assert torch.equal(got, cb.optimize(model, "int4", group_size=64, scheme="q4_0")(x))
    assert dyn.stats()["repacked"] == 1


def test_a_graph_that_needs_gradients_goes_to_inductor_in_every_mode(compile_env, monkeypatch,
                                                                     capfd):
    # Routing only: test_dynamo.py runs a training graph through the real Inductor.
    sent = []
    monkeypatch.setattr(dyn, "_inductor", lambda gm, ex, m: sent.append(gm) or gm.forward)
    monkeypatch.setattr(dyn, "_notices", set())
    train = MLP()
    x = torch.randn(2, 72)
    for mode in MODES + ("int8",):
        torch._dynamo.reset()
        _compile(train, compile_env, mode=mode)(x).sum().backward()
    assert len(sent) == 5 and dyn.stats()["training"] == 5 and dyn.stats()["packed"] == 0
    assert train.up.weight.grad is not None
    # The user asked for a mode and gets float32: said once per mode, with the fix.
    err = [ln for ln in capfd.readouterr().err.splitlines() if "applies to inference" in ln]
    assert len(err) == 4 and "torch.no_grad()" in err[2] and "mode='int8'" in err[2]


@needs_ops
def test_a_transformers_llama_compiles_in_one_graph_with_optimize_s_numbers(compile_env):
    transformers = pytest.importorskip("transformers")
    cfg = transformers.LlamaConfig(vocab_size=300, hidden_size=128, intermediate_size=352,
                                   num_hidden_layers=2, num_attention_heads=4,
                                   num_key_value_heads=2, tie_word_embeddings=True)
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(cfg).eval()
    ids = torch.randint(0, 300, (1, 12))
    f = _compile(model, compile_env, mode="int4")
    with torch.no_grad():
        got = f(ids).logits
        want = cb.optimize(model, "int4")(ids).logits
    assert torch.equal(got, want)
    # 7 projections per layer and the LM head (tied to the embedding, which stays torch's).
    assert dyn.stats()["graphs"] == 1 and dyn.stats()["packed"] == 2 * 7 + 1


@needs_ops
def test_packed_weights_are_freed_with_the_compiled_graphs(compile_env):
    import gc
    from kwker.dynamo import _linear
    model = MLP().eval()
    with torch.no_grad():
        _compile(model, compile_env, mode="int8")(torch.randn(1, 72))
    assert len(_linear._SHARED.get(model.up.weight)) == 1
    torch._dynamo.reset()                        # drops the compiled graphs
    gc.collect()
    assert len(_linear._SHARED.get(model.up.weight, {})) == 0
