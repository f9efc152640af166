"""torch.compile(backend="kwker"): the entry point, KWKER_DISABLE=1, the rewritten graph, the
choice cache (reused by a second process without timing, invalidated by a new graph or new
shapes, a corrupt file survived), options, and gradient graphs going to Inductor.

Inductor compiles take tens of seconds on two cores: the tests share one Inductor cache
(TORCHINDUCTOR_CACHE_DIR in the session's cache folder) and most limit the candidates to
eager and kwker through options=; two tests compile with Inductor."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

from kwker import _integrations  # noqa: E402
import torch

import kwker
import kwker.dynamo as dyn

FAST = {"candidates": ["eager", "kwker"]}
# Inductor's own code triggers this deprecation of torch's while it compiles.
pytestmark = pytest.mark.filterwarnings(
    "ignore:`torch.jit.script_method` is deprecated:DeprecationWarning")


def sampling_step(logits):
    v, i = torch.topk(logits / 0.8, 50, dim=-1)
    p = torch.softmax(v, dim=-1)
    return i.gather(-1, torch.argmax(p, dim=-1, keepdim=True)), p


def sorts(x, y):
    s = x.sort(dim=1, descending=True).values
    a = torch.argsort(y, stable=True)
    k = y.kthvalue(3)
    return s[:, :3] * 2, a, k.values, torch.msort(x)


def test_the_backend_is_found_by_name_through_its_entry_point():
    assert "kwker" in torch._dynamo.list_backends()
    from torch._dynamo.backends.registry import lookup_backend
    assert lookup_backend("kwker") is dyn.backend


def test_kwker_disable_returns_the_graph_unchanged(compile_env, monkeypatch):
    monkeypatch.setenv("KWKER_DISABLE", "1")
    gm = torch.fx.symbolic_trace(torch.nn.Linear(3, 2))
    with pytest.warns(_integrations.DisabledWarning, match="KWKER_DISABLE=1 is set"):
        assert dyn.backend(gm, [torch.randn(4, 3)]) == gm.forward
    dyn.reset_stats()
    f = torch.compile(sampling_step, backend="kwker", options={"cache_dir": str(compile_env)})
    x = torch.randn(8, 500)
    got, want = f(x), sampling_step(x)
    assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])
    assert dyn.stats()["disabled"] == 1 and dyn.stats()["timed"] == 0
    assert not compile_env.exists()  # nothing timed, nothing cached


def test_the_rewritten_graph_calls_kwker_and_equals_torch_stable(compile_env):
    from kwker.dynamo._rewrite import rewrite
    gm = torch.fx.symbolic_trace(sorts)
    rewritten, changed = rewrite(gm)
    assert changed == 4
    assert "kwker_torch.sort" in rewritten.code
    assert "torch.sort" not in rewritten.code.replace("torch.ops.kwker_torch.", "")
    x = torch.randn(40, 300)
    x[x.abs() < 0.2] = 0.0
    y = torch.randint(0, 5, (500,)).float()
    kwker.reset_counters()
    got = rewritten(x, y)
    # At least one Kwker call per rewritten op (msort's columns run as blocks of rows: two
    # calls for this 40 x 300 tensor).
    assert sum(c["calls"] for c in kwker.runtime_info()["counters"].values()) >= 4
    want = (torch.sort(x, dim=1, descending=True, stable=True).values[:, :3] * 2,
            torch.sort(y, stable=True).indices, torch.sort(y, stable=True).values[2],
            torch.sort(x, dim=0, stable=True).values)
    for g, w in zip(got, want):
        assert torch.equal(g, w)


def test_choice_is_timed_once_then_cached_and_invalidated_by_shape_or_graph(compile_env, capfd):
    opts = dict(FAST, cache_dir=str(compile_env))
    f = torch.compile(sampling_step, backend="kwker", options=opts, dynamic=False)
    x = torch.randn(8, 5000)
    got = f(x)
    assert torch.equal(got[0], sampling_step(x)[0])
    s = dyn.stats()
    assert s["timed"] == 1 and s["last"]["choice"] in ("eager", "kwker")
    assert set(s["last"]["times_ms"]) == {"eager", "kwker"}
    assert "kwker backend: timing eager, kwker once on the example inputs" in capfd.readouterr().err
    files = sorted(os.listdir(compile_env))
    assert len(files) == 1
    f(torch.randn(8, 5000))                  # same graph and shapes: no new compile at all
    assert dyn.stats()["timed"] == 1
    f(torch.randn(8, 3000))                  # new shapes: a new graph for Dynamo, timed again
    assert dyn.stats()["timed"] == 2 and len(os.listdir(compile_env)) == 2
    g = torch.compile(sorts, backend="kwker", options=opts, dynamic=False)
    g(torch.randn(6, 40), torch.randn(30))   # another graph
    assert dyn.stats()["timed"] == 3 and len(os.listdir(compile_env)) == 3
    capfd.readouterr()
    torch._dynamo.reset()                    # same graphs again in this process: cached
    f(torch.randn(8, 5000))
    assert dyn.stats()["timed"] == 3 and dyn.stats()["cache_hits"] == 1
    assert "timing" not in capfd.readouterr().err


def test_a_second_process_reuses_the_choice_without_timing(compile_env, tmp_path):
    script = tmp_path / "run.py"
    script.write_text(textwrap.dedent(f"""
        import json, torch, kwker.dynamo as dyn
        def step(logits):
            v, i = torch.topk(logits, 20, dim=-1)
            return torch.softmax(v, dim=-1), i
        f = torch.compile(step, backend="kwker", dynamic=False,
                          options={{"candidates": ["eager", "kwker"],
                                    "cache_dir": {str(compile_env)!r}}})
        f(torch.randn(4, 4000))
        print(json.dumps(dyn.stats()))
    """))
    runs = []
    for _ in range(2):
        r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                           env=dict(os.environ))
        assert r.returncode == 0, r.stderr
        runs.append((json.loads(r.stdout.strip().splitlines()[-1]), r.stderr))
    (first, err1), (second, err2) = runs
    assert first["timed"] == 1 and first["cache_hits"] == 0 and "timing" in err1
    assert second["timed"] == 0 and second["cache_hits"] == 1 and "timing" not in err2
    assert second["last"]["choice"] == first["last"]["choice"]


def test_a_corrupt_choice_file_is_timed_again_and_rewritten(compile_env):
    opts = dict(FAST, cache_dir=str(compile_env))
    f = torch.compile(sampling_step, backend="kwker", options=opts, dynamic=False)
    f(torch.randn(8, 2000))
    (name,) = os.listdir(compile_env)
    path = compile_env / name
    path.write_text("{ not json")
    torch._dynamo.reset()
    with pytest.warns(RuntimeWarning, match="choice cache .* was unreadable"):
        f(torch.randn(8, 2000))
    assert dyn.stats()["timed"] == 2
    assert json.loads(path.read_text())["schema"] == "kwker.dynamo.choice"


def test_mode_forces_a_candidate_and_bad_options_are_rejected(compile_env):
    f = torch.compile(sampling_step, backend="kwker", dynamic=False,
                      options={"mode": "kwker", "cache_dir": str(compile_env)})
    kwker.reset_counters()
    f(torch.randn(8, 3000))
    assert dyn.stats()["timed"] == 0
    assert sum(c["calls"] for c in kwker.runtime_info()["counters"].values()) == 1
    for bad, msg in (({"candidate": ["eager"]}, "unknown option"),
                     ({"candidates": ["jit"]}, "candidates="),
                     ({"mode": "fastest"}, "mode='fastest' is not valid"),
                     ({"repeats": 0}, "repeats must be")):
        torch._dynamo.reset()
        g = torch.compile(sampling_step, backend="kwker", options=bad)
        with pytest.raises(Exception, match=msg):
            g(torch.randn(8, 100))


def test_inductor_is_a_candidate_and_training_graphs_go_to_it(compile_env):
    x = torch.randn(4, 300)
    f = torch.compile(sorts, backend="kwker", dynamic=False,
                      options={"candidates": ["inductor", "kwker"],
                               "cache_dir": str(compile_env), "repeats": 3})
    got = f(x, x[0])
    assert set(dyn.stats()["last"]["times_ms"]) == {"inductor", "kwker"}
    assert torch.equal(got[0], torch.sort(x, dim=1, descending=True, stable=True).values[:, :3] * 2)
    w = torch.randn(300, requires_grad=True)

    def loss(v):
        return torch.topk(v * w, 5).values.sum()

    g = torch.compile(loss, backend="kwker", dynamic=False)
    v = torch.randn(300)
    g(v).backward()
    grad = w.grad.clone()
    w.grad = None
    loss(v).backward()
    assert torch.allclose(grad, w.grad)
    assert dyn.stats()["training"] >= 1
