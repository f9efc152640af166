"""kwker.cpu_backend.optimize on small torch models: every mode replaces every nn.Linear (an
LM head tied to the embedding too), copy vs inplace, KWKER_DISABLE=1, bad input that leaves the
model untouched, status() and the doctor."""
import json
import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

import kwker  # noqa: E402
from kwker import _integrations  # noqa: E402
import kwker.cpu_backend as cb  # noqa: E402
from kwker.cpu_backend._linear import KwkerLinear  # noqa: E402
from kwker._torch import extension  # noqa: E402

needs_ops = pytest.mark.skipif(not extension.availability()[0],
                               reason=f"compiled operators unavailable: "
                                      f"{extension.availability()[1]}")


class TinyLM(torch.nn.Module):
    def __init__(self, vocab=50, dim=40, hidden=72):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, dim)
        self.up = torch.nn.Linear(dim, hidden)
        self.down = torch.nn.Linear(hidden, dim, bias=False)
        self.mha = torch.nn.MultiheadAttention(dim, 4, batch_first=True)
        self.head = torch.nn.Linear(dim, vocab, bias=False)
        self.head.weight = self.embed.weight            # tied, as in most LMs

    def forward(self, ids):
        h = self.embed(ids)
        h = h + self.down(torch.relu(self.up(h)))
        h = h + self.mha(h, h, h, need_weights=False)[0]
        return self.head(h)


def _model():
    torch.manual_seed(0)
    return TinyLM().eval()


def _state(model):
    return {k: v.clone() for k, v in model.state_dict().items()}


@needs_ops
@pytest.mark.parametrize("mode", cb.MODES)
def test_optimize_replaces_every_linear_and_keeps_the_original(mode):
    model = _model()
    before = _state(model)
    ids = torch.randint(0, 50, (2, 9))
    ref = model(ids).detach()
    opt = cb.optimize(model, mode)
    assert opt is not model
    assert isinstance(opt.up, KwkerLinear) and isinstance(opt.down, KwkerLinear)
    assert isinstance(opt.head, KwkerLinear) and opt.head.mode == mode   # the tied head too
    assert isinstance(opt.mha.out_proj, torch.nn.Linear)   # MHA reads it by weight: left alone
    assert not isinstance(model.up, KwkerLinear)
    for k, v in _state(model).items():
        assert torch.equal(v, before[k]), k
    got = opt(ids).detach()
    bound = {"high": 1e-5, "medium": 2e-2, "int8": 3e-2, "int4": 0.3}[mode]
    assert float((got - ref).abs().max() / ref.abs().max()) < bound
    assert torch.equal(model(ids).detach(), ref)   # the original still runs, unchanged


@needs_ops
@pytest.mark.parametrize("mode", cb.MODES)
def test_prompt_rows_on_every_kernel_this_cpu_runs(mode, monkeypatch):
    """40 rows (a prompt) on awkward shapes, on every engine this CPU runs: within each mode's
    bound of a float64 reference on AMX, VNNI, AVX2 and the float kernels alike; in int8 / int4
    every engine's kernel (amx-int8, vnni-int8, avx2-int8, scalar-int8) gives the same bits."""
    from kwker.cpu_backend import _status
    torch.manual_seed(3)
    lin = torch.nn.Linear(100, 37)
    x = torch.randn(40, 100)
    x[5, 50] = float("nan")
    ref = (x.double() @ lin.weight.double().T + lin.bias.double()).detach()
    opt = cb.optimize(torch.nn.Sequential(lin), mode)
    outs = {}
    with kwker.config():
        for engine in kwker.available_isas():
            kwker.set_isa(engine)
            for amx in ("1", "0"):
                monkeypatch.setenv("KWKER_AMX", amx)
                kern = _status.linear_kernels()["prompt"][mode]
                with torch.no_grad():
                    outs[kern] = got = opt(x).double()
                assert got[5].isnan().all() and not got[torch.arange(40) != 5].isnan().any(), kern
                keep = torch.arange(40) != 5
                err = float((got[keep] - ref[keep]).abs().max() / ref[keep].abs().max())
                bound = {"high": 1e-5, "medium": 2e-2, "int8": 3e-2, "int4": 0.3}[mode]
                assert err < bound, (kern, err)
    if mode in ("int8", "int4"):
        assert all(k.endswith("-int8") for k in outs), outs.keys()
        first = next(iter(outs.values())).nan_to_num()
        for kern, got in outs.items():
            assert torch.equal(got.nan_to_num(), first), kern


@needs_ops
def test_inplace_changes_the_model_itself():
    model = _model()
    out = cb.optimize(model, "int8", inplace=True, threads=1)
    assert out is model and isinstance(model.up, KwkerLinear) and model.up.threads == 1
    assert cb.status()["last_mode"] == "int8" and cb.status()["layers"] >= 3


@needs_ops
def test_int4_schemes_and_group_sizes():
    model = _model()
    a = cb.optimize(model, "int4", group_size=64)
    assert a.up.group == 64 and a.up.scheme == "q4_1"
    b = cb.optimize(model, "int4", scheme="q4_0")
    assert b.up.scheme == "q4_0"
    c = cb.optimize(model, "int8", scheme="per_channel")
    s = c.up.unpack()[1]
    assert torch.equal(s, s[:, :1].expand_as(s))   # one scale per output row


@pytest.mark.parametrize("kwargs,match", [
    ({"mode": "fp8"}, "unknown mode 'fp8'"),
    ({"mode": "int4", "group_size": 48}, "group_size=48 does not divide"),
    ({"mode": "int4", "group_size": 0}, "group_size=0 does not divide"),
    ({"mode": "int8", "scheme": "q4_0"}, "scheme 'q4_0' is not one of mode 'int8'"),
    ({"mode": "high", "threads": 0}, "threads must be an int >= 1"),
    ({"mode": "int8", "activations": "int4"}, "activations='int4' is not one of 'float'"),
    ({"mode": "high", "activations": "int8"}, "mode 'high' keeps float activations"),
])
def test_bad_options_are_clear_and_change_nothing(kwargs, match):
    model = _model()
    before = _state(model)
    with pytest.raises(ValueError, match=match):
        cb.optimize(model, inplace=True, **kwargs)
    assert not any(isinstance(m, KwkerLinear) for m in model.modules())
    assert all(torch.equal(v, before[k]) for k, v in _state(model).items())


@needs_ops
@pytest.mark.parametrize("mode", ["int8", "int4"])
def test_int8_activations_give_each_row_the_same_bits_at_any_batch(mode):
    """activations="int8" (W8A8 / W4A8): the decode step quantises x as the prompt kernels do, so
    a row computed alone (1 row), in a small batch (5) or in a prompt (40) gives the same bits,
    on every engine; the prompt equals the default scheme's prompt; accuracy stays in the mode's
    bound. The default keeps float activations below 16 rows."""
    torch.manual_seed(5)
    model = torch.nn.Sequential(torch.nn.Linear(96, 200), torch.nn.ReLU(), torch.nn.Linear(200, 70))
    x = torch.randn(40, 96)
    a8 = cb.optimize(model, mode, activations="int8", decoder="off")
    default = cb.optimize(model, mode, decoder="off")
    assert a8[0].activations == "int8" and "activations=int8" in repr(a8[0])
    assert a8._kwker_cpu_backend["activations"] == "int8"
    with torch.no_grad():
        ref = model(x)
        outs = []
        with kwker.config():
            for engine in kwker.available_isas():
                kwker.set_isa(engine)
                whole = a8(x)
                assert torch.equal(torch.cat([a8(x[i:i + 1]) for i in range(40)]), whole), engine
                assert torch.equal(torch.cat([a8(x[i:i + 5]) for i in range(0, 40, 5)]), whole)
                assert torch.equal(default(x), whole), engine  # prompts: the same scheme
                outs.append(whole)
        assert all(torch.equal(o, outs[0]) for o in outs)
        err = float((outs[0] - ref).abs().max() / ref.abs().max())
        assert err < {"int8": 3e-2, "int4": 0.3}[mode]
        # float activations in the default's decode step: another result for one row
        assert not torch.equal(default(x[:1]), outs[0][:1])


@needs_ops
def test_a_model_without_linear_layers_is_an_error():
    model = torch.nn.Sequential(torch.nn.Conv1d(3, 4, 3), torch.nn.ReLU())
    with pytest.raises(ValueError, match="has no torch.nn.Linear layers"):
        cb.optimize(model, inplace=True)
    assert isinstance(model[0], torch.nn.Conv1d)
    with pytest.raises(TypeError, match="expected a torch.nn.Module"):
        cb.optimize("model")


@needs_ops
def test_kwker_disable_returns_the_model_unchanged_with_a_notice(monkeypatch, capfd):
    monkeypatch.setenv("KWKER_DISABLE", "1")
    model = _model()
    with pytest.warns(_integrations.DisabledWarning,
                      match=r"^kwker.cpu_backend: KWKER_DISABLE=1 is set; optimize\(\) and "
                            r"load_gguf\(\) return models unchanged$"):
        assert cb.optimize(model, "int4", inplace=True) is model
    assert not any(isinstance(m, KwkerLinear) for m in model.modules())
    assert capfd.readouterr().err == ""            # a warning, never a print
    rep = cb.check_accuracy(model, torch.randint(0, 50, (1, 5)), mode="int8", show=False)
    assert rep["backend_on"] is False and rep["max_abs_error"] == 0.0


def test_a_torch_mismatch_turns_the_backend_off(monkeypatch, capfd):
    monkeypatch.setattr(extension, "running_torch", lambda: "2.99.0")
    model = _model()
    assert cb.optimize(model, "high") is model
    err = capfd.readouterr().err
    assert "the compiled PyTorch operators were built for torch" in err and "not 2.99.0" in err
    assert cb.status()["available"] is False


@needs_ops
def test_check_accuracy_report_is_a_dict_and_a_table(capsys):
    model = _model()
    ids = torch.randint(0, 50, (2, 12))
    rep = cb.check_accuracy(model, ids, mode="int8")
    printed = capsys.readouterr().out
    assert "kwker.cpu_backend accuracy: mode='int8'" in printed and "top-1 agreement" in printed
    for key in ("max_abs_error", "max_rel_error", "cosine", "top1_agreement",
                "perplexity_original", "perplexity_optimized", "perplexity_change"):
        assert rep[key] is not None, key
    assert rep["cosine"] > 0.999 and rep["positions"] == 24
    x = torch.randn(3, 40)
    plain = cb.check_accuracy(torch.nn.Linear(40, 5), x, mode="high", show=False)
    assert plain["top1_agreement"] is None and plain["max_rel_error"] < 1e-6
    with pytest.raises(ValueError, match="give the inputs"):
        cb.check_accuracy(model, mode="high")
    with pytest.raises(ValueError, match="unknown mode"):
        cb.check_accuracy(model, ids, mode="fast")


def test_status_and_doctor_report_the_backend():
    st = cb.status()
    assert st["amx"]["cpu"] in (True, False)
    # AMX kernels run where the CPU has AMX and Linux granted it, on the avx512 engine.
    amx_usable = st["amx"]["cpu"] and st["amx"]["permission"] == "granted by arch_prctl"
    assert st["amx"]["on"] is bool(amx_usable and st["engine"] == "avx512")
    kern = st["linear_kernels"]
    assert kern["decode"] == {m: st["engine"] for m in ("high", "medium", "int8", "int4")}
    assert kern["prompt"]["high"] == st["engine"]
    if st["amx"]["on"]:
        assert kern["prompt"] == {"high": "avx512", "medium": "amx-bf16", "int8": "amx-int8",
                                  "int4": "amx-int8"}
    elif st["engine"] == "avx512" and kwker.runtime_info()["cpu"]["features"]["avx512_bf16"]:
        assert kern["prompt"]["medium"] == "avx512-bf16"  # VDPBF16PS where there is no AMX
    assert "decoder_packages" in st
    env = dict(os.environ, KWKER_AMX="0")
    out = subprocess.run([sys.executable, "-m", "kwker", "doctor", "--json"], env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    text = json.dumps(doc)
    assert "cpu_backend" in text and "avx512_vnni" in text


def test_kwker_amx_rejects_invalid_values(monkeypatch):
    from kwker.cpu_backend import _status
    monkeypatch.setenv("KWKER_AMX", "yes")
    with pytest.raises(ValueError, match="KWKER_AMX='yes' is not valid"):
        _status.amx_setting()
    st = _status.amx_status({"amx": True})
    assert "is not valid" in st["reason"]
    with pytest.raises(ValueError, match="KWKER_AMX='yes' is not valid"):
        cb.optimize(torch.nn.Linear(8, 8), mode="int8")
    monkeypatch.setenv("KWKER_AMX", "0")
    assert _status.amx_status({"amx": True})["reason"] == "KWKER_AMX=0 is set"
    kern = _status.linear_kernels()
    assert kern["prompt"]["int8"] in ("vnni-int8", "avx2-int8")  # never AMX with KWKER_AMX=0
    assert kern["prompt"]["medium"] == kern["engine"]


def test_bench_section_is_opt_in_and_reports_bandwidth_against_targets():
    from kwker.bench import cpu_backend as sec
    assert sec.selected(["cpu_backend"]) and not sec.selected(["sort/"]) and not sec.selected([])
    env = {"read_bandwidth_GBps": 30.0, "new_tokens": 64, "bandwidth": [
        {"model": "llama1024x8", "mode": "high", "tok_s": 50.0, "competitor_tok_s": 30.0,
         "weight_MB_per_token": 480.0, "weight_GBps": 24.0, "share": 0.8, "target_share": 0.75},
        {"model": "llama1024x8", "mode": "int4", "tok_s": 90.0, "competitor_tok_s": None,
         "weight_MB_per_token": 90.0, "weight_GBps": 8.1, "share": 0.27, "target_share": 0.5}]}
    text = sec.intro(env)
    assert "30.0 GB/s" in text and "≥ 75% PASS" in text and "≥ 50% **MISS**" in text
    assert sec._short("torchao int4 (CPU kernel, group 32), eager") == \
        "torchao int4 (CPU kernel, group 32)"
    rows = sec.variants(cb.MODES)
    assert [t for _, _, t in rows] == ["high", "high-float32-storage", "medium", "int8", "int4",
                                       "int8-a8", "int4-a8"]
    assert rows[-1][:2] == ("int4", {"activations": "int8"})
