"""The fused decode step of kwker.cpu_backend on small random Llama-family models (built from a
config, no download): the same tokens as the original model in "high" mode, identical numbers
from a decoder package and the generic library and on every engine, generate() features
(left-padded batches, sampling, several sequences, beam search, a reused cache), the package
cache (reused by a second process, rebuilt when corrupt, keyed by architecture and mode), a
missing compiler, and models outside the family."""
import json
import os
import shutil
import subprocess
import sys
import textwrap
import weakref

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import kwker  # noqa: E402
import kwker.cpu_backend as cb  # noqa: E402
from kwker.cpu_backend import _decoder, _package  # noqa: E402
from kwker._torch import extension  # noqa: E402
from kwker._torch.linear import Q4_0_FLAG  # noqa: E402

pytestmark = pytest.mark.skipif(not extension.availability()[0],
                                reason=f"compiled operators unavailable: "
                                       f"{extension.availability()[1]}")

ENGINES_HERE = kwker.runtime_info()["engines"]["supported"]


@pytest.fixture(autouse=True)
def cache_dir(kwker_cache_dir, monkeypatch):
    monkeypatch.setenv("KWKER_CACHE_DIR", str(kwker_cache_dir))
    monkeypatch.delenv("CXX", raising=False)
    yield kwker_cache_dir
    kwker.set_isa(None)


def tiny(kind="llama", seed=0, **over):
    """A random 2-layer model of the family with grouped-query attention."""
    args = dict(hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                num_attention_heads=4, num_key_value_heads=2, vocab_size=96,
                max_position_embeddings=512, tie_word_embeddings=False)
    args.update(over)
    if kind == "qwen2":
        cfg, cls = transformers.Qwen2Config(**args), transformers.Qwen2ForCausalLM
    else:
        cfg, cls = transformers.LlamaConfig(**args), transformers.LlamaForCausalLM
    torch.manual_seed(seed)
    return cls(cfg).eval()


PROMPT = torch.tensor([[5, 17, 42, 8, 23, 61]])


def gen(model, ids=PROMPT, **kw):
    kw.setdefault("max_new_tokens", 10)
    kw.setdefault("do_sample", False)
    with torch.no_grad():
        return model.generate(ids, pad_token_id=0, **kw)


def scores(model, ids=PROMPT, n=8):
    out = gen(model, ids, max_new_tokens=n, min_new_tokens=n, output_scores=True,
              return_dict_in_generate=True)
    return out.sequences, torch.stack(out.scores)


@pytest.mark.parametrize("kind,over", [("llama", {}), ("qwen2", {}),
                                       ("llama", {"attention_bias": True, "mlp_bias": True,
                                                  "tie_word_embeddings": True})])
def test_high_mode_gives_the_original_tokens(kind, over):
    model = tiny(kind, **over)
    opt = cb.optimize(model, "high")
    assert opt._kwker_cpu_backend["decoder"]["kind"] == "package"
    seq, sc = scores(opt)
    ref_seq, ref_sc = scores(model)
    assert opt._kwker_decoder.steps >= 7          # every step after the prompt was fused
    assert torch.equal(seq, ref_seq)
    torch.testing.assert_close(sc, ref_sc, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("mode,activations,scheme", [
    ("medium", "float", None), ("int8", "float", None), ("int4", "float", None),
    ("int8", "int8", None), ("int4", "int8", None),
    ("int4", "int8", "q4_0")])   # Q4_0 blocks in their own 18 bytes (KWKER_LINEAR_Q4_0)
def test_fused_step_matches_the_per_layer_kernels(mode, activations, scheme):
    model = tiny(seed=1)
    fused = cb.optimize(model, mode, activations=activations, scheme=scheme)
    per_layer = cb.optimize(model, mode, decoder="off", activations=activations, scheme=scheme)
    if scheme == "q4_0":
        assert fused._kwker_decoder.shapes["mode"] & Q4_0_FLAG
    assert fused._kwker_cpu_backend["decoder"]["kind"] == "package"
    assert per_layer._kwker_cpu_backend["decoder"]["kind"] == "per-layer"
    seq, sc = scores(fused)
    seq2, sc2 = scores(per_layer)
    # Same linear kernels; only norm / rotary / softmax are computed by other code.
    torch.testing.assert_close(sc, sc2, rtol=1e-4, atol=1e-4)
    assert torch.equal(seq, seq2)


def test_package_generic_and_every_engine_give_identical_numbers():
    model = tiny(seed=2, num_hidden_layers=3, hidden_size=80, intermediate_size=136,
                 num_attention_heads=5, num_key_value_heads=1)
    ref = scores(cb.optimize(model, "int8", decoder="generic"))[1]
    for engine in ENGINES_HERE:
        kwker.set_isa(engine)
        opt = cb.optimize(model, "int8")
        assert opt._kwker_decoder.info["kind"] == "package"
        assert torch.equal(scores(opt)[1], ref), engine


def test_left_padded_batch_sampling_and_several_sequences():
    model = tiny(seed=3)
    opt = cb.optimize(model, "high")
    ids = torch.tensor([[0, 0, 7, 9, 11], [3, 4, 5, 6, 7]])
    mask = torch.tensor([[0, 0, 1, 1, 1], [1, 1, 1, 1, 1]])
    got = gen(opt, ids, attention_mask=mask)
    assert torch.equal(got, gen(model, ids, attention_mask=mask))
    steps = opt._kwker_decoder.steps
    torch.manual_seed(5)
    out = gen(opt, ids, attention_mask=mask, do_sample=True, top_k=10,
              num_return_sequences=3, max_new_tokens=6)
    assert out.shape == (6, 11) and opt._kwker_decoder.steps > steps


def test_beam_search_and_a_reused_cache():
    model = tiny(seed=4)
    opt = cb.optimize(model, "high")
    assert torch.equal(gen(opt, num_beams=3), gen(model, num_beams=3))
    outs = []
    for m in (opt, model):
        first = gen(m, max_new_tokens=4, return_dict_in_generate=True)
        cache = getattr(first, "cache", None) or first.past_key_values
        more = gen(m, first.sequences, max_new_tokens=5, cache=cache)
        outs.append(more)
    assert torch.equal(outs[0], outs[1])



def test_the_cache_views_grow_in_place_and_hold_the_models_keys_and_values():
    """The step grows each layer's K / V view by one position in place (kv_extend): the same
    tensor objects from step to step, one more position each time, a moved version counter,
    and the same contents as the original model's own cache after the same tokens; past the
    buffers' capacity (64 positions here) the step moves to larger ones and goes on."""
    model = tiny(seed=6)
    opt = cb.optimize(model, "high")
    ids, steps = PROMPT, 70
    with torch.no_grad():
        out = opt(ids, use_cache=True)
        ref = model(ids, use_cache=True)
        cache = getattr(out, "cache", None) or out.past_key_values
        ref_cache = getattr(ref, "cache", None) or ref.past_key_values
        seen, caps, grown = None, set(), 0
        for step in range(steps):
            tok = ref.logits[:, -1:].argmax(-1)  # the original's tokens on both sides
            out = opt(tok, cache=cache, use_cache=True)
            ref = model(tok, cache=ref_cache, use_cache=True)
            layers = cache.layers
            # weak references: a strong one kept here would (rightly) get fresh views
            now = [(weakref.ref(layer.keys), weakref.ref(layer.values)) for layer in layers]
            cap = opt._kwker_decoder._state["cap"]
            if seen is not None and cap == prev_cap:  # the same buffers: extended in place
                assert all(layer.keys is k0() and layer.values is v0()
                           for layer, (k0, v0) in zip(layers, seen))
                assert layers[0].keys._version > versions
                grown += 1
            seen, versions, prev_cap = now, layers[0].keys._version, cap
            caps.add(cap)
            assert cache.get_seq_length() == PROMPT.shape[1] + step + 1
            for layer, rl in zip(layers, ref_cache.layers):
                assert layer.keys.shape == rl.keys.shape and layer.values.shape == rl.values.shape
                torch.testing.assert_close(layer.keys, rl.keys, rtol=1e-4, atol=1e-5)
                torch.testing.assert_close(layer.values, rl.values, rtol=1e-4, atol=1e-5)
            torch.testing.assert_close(out.logits, ref.logits, rtol=1e-3, atol=1e-4)
    assert opt._kwker_decoder.steps == steps  # every token went through the fused step
    assert len(caps) == 2 and grown >= steps - 3  # one move to larger buffers, in place otherwise


def test_a_view_kept_from_an_earlier_step_keeps_its_length_and_inference_mode_caches_go_on():
    """A script holding a layer's keys from an earlier step (a rollback) keeps them at their
    length, as with transformers' own cache; a cache begun under torch.inference_mode() goes on
    under no_grad (its tensors have no version counter to move)."""
    model = tiny(seed=7)
    opt = cb.optimize(model, "high")

    def step(m, tok, cache):
        out = m(tok, cache=cache, use_cache=True)
        return out, getattr(out, "cache", None) or out.past_key_values

    with torch.inference_mode():
        out, cache = step(opt, PROMPT, None)
        ref, ref_cache = step(model, PROMPT, None)
        for _ in range(3):
            tok = ref.logits[:, -1:].argmax(-1)
            out, cache = step(opt, tok, cache)
            ref, ref_cache = step(model, tok, ref_cache)
    with torch.no_grad():
        kept = cache.layers[1].keys
        length = kept.shape[2]
        for _ in range(4):
            tok = ref.logits[:, -1:].argmax(-1)
            out, cache = step(opt, tok, cache)
            ref, ref_cache = step(model, tok, ref_cache)
            torch.testing.assert_close(out.logits, ref.logits, rtol=1e-3, atol=1e-4)
    assert kept.shape[2] == length and cache.layers[1].keys.shape[2] == length + 4
    for layer, rl in zip(cache.layers, ref_cache.layers):
        torch.testing.assert_close(layer.keys, rl.keys, rtol=1e-4, atol=1e-5)
        torch.testing.assert_close(layer.values, rl.values, rtol=1e-4, atol=1e-5)
    assert opt._kwker_decoder.steps == 7


def test_kv_extend_refuses_what_it_cannot_grow_and_changes_nothing():
    from kwker._torch.ops import compiled as ops
    extend = ops().kv_extend
    big = torch.zeros(2, 1, 2, 8, 4)
    views = list(big[:, :, :, :3].unbind(0))
    with pytest.raises(RuntimeError, match="cannot hold 9 positions"):
        extend(views, 9)
    bad = views + [torch.zeros(3, 4)]
    with pytest.raises(RuntimeError, match="has 2 dims"):
        extend(bad, 4)
    with pytest.raises(RuntimeError, match="length 0 < 1"):
        extend(views, 0)
    with pytest.raises(RuntimeError, match="cannot hold"):
        extend(views, 2 ** 62)  # no overflow in the bound
    assert all(v.shape == (1, 2, 3, 4) for v in views)  # nothing changed by a refused call
    big[1, 0, 1, 7] = 5.0
    extend(views, 8)
    assert all(v.shape == (1, 2, 8, 4) for v in views) and views[1][0, 1, 7, 3] == 5.0
    assert views[0].stride() == big[0].stride() and views[1].data_ptr() == big[1].data_ptr()

SCRIPT = textwrap.dedent("""
    import json, torch, transformers, kwker.cpu_backend as cb
    from kwker.cpu_backend import _package
    cfg = transformers.LlamaConfig(hidden_size=48, intermediate_size=64, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2,
                                   vocab_size=80, tie_word_embeddings=False)
    torch.manual_seed(0)
    m = cb.optimize(transformers.LlamaForCausalLM(cfg).eval(), "int4")
    with torch.no_grad():
        out = m.generate(torch.tensor([[1, 2, 3]]), max_new_tokens=4, do_sample=False,
                         pad_token_id=0)
    s = _package.stats()
    print(json.dumps({"tokens": out.tolist(), "compiled": s["compiled"],
                      "loaded": s["loaded"], "kind": m._kwker_cpu_backend["decoder"]["kind"],
                      "reason": m._kwker_cpu_backend["decoder"]["reason"]}))
""")


def _run(env):
    r = subprocess.run([sys.executable, "-c", SCRIPT], env=dict(os.environ, **env),
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_a_second_process_loads_the_package_without_compiling(tmp_path):
    env = {"KWKER_CACHE_DIR": str(tmp_path)}
    first, second = _run(env), _run(env)
    assert (first["compiled"], first["loaded"]) == (1, 0)
    assert (second["compiled"], second["loaded"]) == (0, 1), second
    assert first["tokens"] == second["tokens"]
    files = sorted(os.listdir(tmp_path / "decoder"))
    assert len(files) == 2 and files[0].endswith(".json") and files[1].endswith(".so")


def test_without_a_compiler_the_generic_step_runs_and_says_why(monkeypatch):
    model = tiny(seed=10)
    ref = gen(cb.optimize(model, "int4"))
    monkeypatch.setenv("CXX", "/nonexistent/c++")
    opt = cb.optimize(model, "int4")
    info = opt._kwker_cpu_backend["decoder"]
    assert info["kind"] == "generic" and "CXX='/nonexistent/c++' is set but not found" in \
        info["reason"]
    assert torch.equal(gen(opt), ref) and opt._kwker_decoder.steps > 0
    dp = cb.status()["decoder_packages"]
    assert dp["compiler"] is None and dp["last"] == info


@pytest.mark.parametrize("damage", ["library", "manifest"])
def test_a_corrupt_package_is_rebuilt_with_a_warning(tmp_path, monkeypatch, damage):
    monkeypatch.setenv("KWKER_CACHE_DIR", str(tmp_path))
    model = tiny(seed=6)
    first = cb.optimize(model, "high")
    key = first._kwker_decoder.info["key"]
    base = tmp_path / "decoder" / key
    # The damaged file replaces the original (this process has the library mapped: writing
    # into it in place would crash the test itself, not the code under test).
    target = base.with_suffix(".so" if damage == "library" else ".json")
    bad = tmp_path / "bad"
    bad.write_bytes(b"\x7fELF garbage" if damage == "library" else b"{not json")
    os.replace(bad, target)
    _package._loaded.pop(str(base.with_suffix(".so")))
    before = _package.stats()["rebuilt"]
    with pytest.warns(RuntimeWarning, match="unusable.*rebuilding"):
        again = cb.optimize(model, "high")
    assert _package.stats()["rebuilt"] == before + 1
    assert again._kwker_decoder.info["kind"] == "package"
    assert torch.equal(gen(again), gen(first))


def test_packages_are_keyed_by_architecture_and_mode():
    a, b = tiny(seed=7), tiny(seed=7, hidden_size=96)
    keys = {cb.optimize(m, mode)._kwker_decoder.info["key"]
            for m in (a, b) for mode in ("high", "int8")}
    assert len(keys) == 4
    # A package refuses a model of other shapes instead of computing garbage.
    da, db = cb.optimize(a, "high")._kwker_decoder, cb.optimize(b, "high")._kwker_decoder
    db.lib = da.lib
    with pytest.raises(RuntimeError, match="built for other shapes"):
        gen(db_model(b, db))


def test_a_deep_copy_runs_its_own_weights():
    import copy
    model = tiny(seed=11)
    opt = cb.optimize(model, "high")
    twin = copy.deepcopy(opt)
    with torch.no_grad():
        for p in twin.model.norm.parameters():
            p.mul_(-1.0)                       # the copy now differs from the original
    assert torch.equal(gen(opt), gen(model))
    got = gen(twin)
    assert twin._kwker_decoder and twin._kwker_decoder is not opt._kwker_decoder
    assert twin._kwker_decoder.steps > 0
    ref = copy.deepcopy(model)
    with torch.no_grad():
        for p in ref.model.norm.parameters():
            p.mul_(-1.0)
    assert torch.equal(got, gen(ref))


def db_model(model, decoder):
    """A copy of `model` optimized per layer, with `decoder` attached (test helper)."""
    m = cb.optimize(model, "high", decoder="off")
    return _decoder.attach(m, decoder)


def test_models_outside_the_family_keep_per_layer_kernels():
    gelu = cb.optimize(tiny(seed=8, hidden_act="gelu"), "high")
    info = gelu._kwker_cpu_backend["decoder"]
    assert info["kind"] == "per-layer" and "activation is 'gelu'" in info["reason"]
    gpt2 = transformers.GPT2LMHeadModel(transformers.GPT2Config(n_embd=32, n_layer=1, n_head=2,
                                                                vocab_size=50)).eval()
    info = cb.optimize(gpt2, "high")._kwker_cpu_backend["decoder"]
    assert info["kind"] == "per-layer" and "model_type 'gpt2'" in info["reason"]
    assert cb.status()["decoder_packages"]["last"] == info


def test_bad_decoder_option_leaves_the_model_untouched():
    model = tiny(seed=9)
    with pytest.raises(ValueError, match="decoder='fused' is not one of"):
        cb.optimize(model, "high", decoder="fused", inplace=True)
    assert type(model.model.layers[0].self_attn.q_proj) is torch.nn.Linear
    assert "forward" not in vars(model)


def test_the_backend_and_its_status_import_no_torch():
    """The doctor reads status() in its own process: that must not cost a torch import."""
    code = ("import sys, kwker.cpu_backend as cb; st = cb.status(); "
            "assert 'torch' not in sys.modules, 'torch imported'; "
            "assert st['decoder_packages']['compiler'], st['decoder_packages']")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]


def test_on_torch_threads_or_kwker_pool_the_numbers_are_the_same():
    """With 2+ torch threads the step and the per-layer kernels run on torch's intra-op threads
    (kwker_set_thread_runner), with one on Kwker's pool: the same bits either way. (Only
    Kwker's parts are compared: torch's own reductions may depend on its thread count.)"""
    from kwker.cpu_backend._linear import ops
    assert ops().thread_runner() != 0
    model = tiny(seed=12, hidden_size=256, intermediate_size=512)
    opt = cb.optimize(model, "int8")
    big = cb.optimize(torch.nn.Sequential(torch.nn.Linear(1024, 4096)), "int8")
    x = torch.randn(3, 1024)
    old = torch.get_num_threads()
    try:
        got = {}
        for n in (1, 2):
            torch.set_num_threads(n)
            with torch.no_grad():
                got[n] = (scores(opt)[1], big(x))
        assert torch.equal(got[1][0], got[2][0]) and torch.equal(got[1][1], got[2][1])
    finally:
        torch.set_num_threads(old)


def test_medium_prompt_attention_runs_in_bfloat16_where_the_linears_round(monkeypatch):
    """"medium" wraps the model's attention: q, k and v in bfloat16 exactly for the calls whose
    linear inputs the prompt kernel rounds (16+ rows, amx-bf16 / avx512-bf16), float32 otherwise
    and with KWKER_AMX=0; the given model keeps its own attention."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward
    from kwker.cpu_backend import _attention
    model = tiny()
    opt = cb.optimize(model, "medium")
    assert model.config._attn_implementation == "sdpa"
    assert opt.config._attn_implementation == _attention.NAME
    assert opt._kwker_cpu_backend["prompt_attention"].endswith("(wraps 'sdpa')")
    assert cb.optimize(model, "high").config._attn_implementation == "sdpa"
    att = opt.model.layers[0].self_attn
    g = torch.Generator().manual_seed(3)

    def qkv(rows):
        q = torch.randn(1, 4, rows, 16, generator=g)
        kv = torch.randn(2, 1, 2, rows, 16, generator=g)
        return q, kv[0], kv[1]

    def run(q, k, v):
        return _attention._attention(att, q, k, v, None, dropout=0.0, scaling=0.25,
                                     is_causal=True)[0]

    def reference(q, k, v, dtype):
        out = sdpa_attention_forward(att, q.to(dtype), k.to(dtype), v.to(dtype), None,
                                     dropout=0.0, scaling=0.25, is_causal=True)[0]
        return out.to(torch.float32)

    q, k, v = qkv(15)  # below the prompt kernels' 16 rows: float32 as before
    assert torch.equal(run(q, k, v), reference(q, k, v, torch.float32))
    q, k, v = qkv(40)
    got = run(q, k, v)
    if _attention.rounds_prompt():
        assert torch.equal(got, reference(q, k, v, torch.bfloat16))
        assert not torch.equal(got, reference(q, k, v, torch.float32))
    else:
        assert torch.equal(got, reference(q, k, v, torch.float32))
    monkeypatch.setenv("KWKER_AMX", "0")  # the float kernels, and float32 attention with them
    assert not _attention.rounds_prompt()
    assert torch.equal(run(q, k, v), reference(q, k, v, torch.float32))
    monkeypatch.delenv("KWKER_AMX")
    long = torch.randint(1, 96, (2, 24), generator=g)  # the whole model through the wrapper
    with torch.no_grad():
        want, got = model(long).logits, opt(long).logits
    assert got.dtype == torch.float32
    assert (got - want).abs().max() <= 2e-2 * want.abs().max()


def _as_gguf_blocks(linear, kind):
    """Replaces linear's weights by their gguf quantise / dequantise round trip (as transformers
    loads a GGUF file: float32 weights that are exactly the file's blocks)."""
    gguf = pytest.importorskip("gguf")
    from gguf import quants
    qtype = getattr(gguf.GGMLQuantizationType, kind)
    w = linear.weight.detach().numpy()
    with torch.no_grad():
        linear.weight.copy_(torch.from_numpy(quants.dequantize(quants.quantize(w, qtype), qtype)))


def test_exact_gguf_blocks_in_the_fused_step_give_float32_numbers():
    model = tiny(seed=4)
    for name, mod in model.named_modules():
        if isinstance(mod, torch.nn.Linear):
            _as_gguf_blocks(mod, "Q8_0" if name == "lm_head" else "Q4_1")
    exact = cb.optimize(model, "high", decoder="generic")
    plain = cb.optimize(model, "high", decoder="generic", exact_blocks=False)
    assert exact._kwker_cpu_backend["storage"] == {"exact-q4_1": 14, "exact-q8_0": 1}
    assert exact._kwker_cpu_backend["decoder"]["kind"] == "generic"
    seq, sc = scores(exact)
    seq2, sc2 = scores(plain)
    assert exact._kwker_decoder.steps >= 7
    assert torch.equal(seq, seq2) and torch.equal(sc, sc2)   # bit for bit
    assert torch.equal(seq, scores(model)[0])


def test_float16_weights_in_the_fused_step_give_float32_numbers():
    """A float16 checkpoint loaded as float32 (or an F16 GGUF file): every projection and the LM
    head stored as float16 (KWKER_LINEAR_HIGH_F16), decoded natively with float32's bits."""
    model = tiny(seed=6)
    with torch.no_grad():
        for mod in model.modules():
            if isinstance(mod, torch.nn.Linear):
                mod.weight.copy_(mod.weight.to(torch.float16).to(torch.float32))
    half = cb.optimize(model, "high", decoder="generic")
    plain = cb.optimize(model, "high", decoder="generic", exact_blocks=False)
    assert half._kwker_cpu_backend["storage"] == {"float16": 15}
    assert half._kwker_decoder.shapes["mode"] == 8 and half._kwker_decoder.shapes["lm_mode"] == 8
    seq, sc = scores(half)
    seq2, sc2 = scores(plain)
    assert half._kwker_decoder.steps >= 7
    assert torch.equal(seq, seq2) and torch.equal(sc, sc2)   # bit for bit
    assert torch.equal(seq, scores(model)[0])


def test_mixed_storage_projections_run_the_fused_step_as_float32():
    model = tiny(seed=5)
    _as_gguf_blocks(model.model.layers[0].self_attn.q_proj, "Q4_1")
    _as_gguf_blocks(model.lm_head, "Q8_0")
    opt = cb.optimize(model, "high", decoder="generic")
    # One kernel mode for every projection: float32 storage; the LM head keeps its blocks.
    assert opt._kwker_cpu_backend["storage"] == {"float32": 14, "exact-q8_0": 1}
    assert opt._kwker_cpu_backend["decoder"]["kind"] == "generic"
    seq, sc = scores(opt)
    ref_seq, ref_sc = scores(model)
    assert torch.equal(seq, ref_seq)
    torch.testing.assert_close(sc, ref_sc, rtol=1e-4, atol=1e-4)


def _private(path):
    return os.stat(path).st_mode & 0o077 == 0


def test_the_package_cache_is_private_and_a_library_not_ours_is_rebuilt(tmp_path, monkeypatch):
    """Decoder packages are code loaded into the process: the cache folder and its files are
    the user's alone (0700 / owner-only), and a library there that another user owns is
    rebuilt, not loaded."""
    monkeypatch.setenv("KWKER_CACHE_DIR", str(tmp_path / "cache"))
    model = tiny(seed=8)
    first = cb.optimize(model, "high")
    key = first._kwker_decoder.info["key"]
    folder = tmp_path / "cache" / "decoder"
    so, manifest = folder / f"{key}.so", folder / f"{key}.json"
    assert _private(tmp_path / "cache") and _private(folder)
    assert _private(so) and _private(manifest)
    if os.getuid() != 0:
        return  # giving a file to another user needs root
    os.chown(so, 4321, -1)
    _package._loaded.pop(str(so))
    before = _package.stats()["rebuilt"]
    with pytest.warns(RuntimeWarning, match="unusable.*belongs to uid 4321.*rebuilding"):
        again = cb.optimize(model, "high")
    assert _package.stats()["rebuilt"] == before + 1
    assert os.stat(so).st_uid == os.getuid() and _private(so)
    assert torch.equal(gen(again), gen(first))


def test_a_planted_package_in_a_folder_others_can_write_is_never_loaded(tmp_path, monkeypatch):
    """A valid package (library and manifest, as Kwker wrote them) planted in a cache whose
    folder its group can write is not loaded: the package is compiled into a private folder of
    the process instead, with a warning naming the folder and the fix."""
    own = tmp_path / "own"
    monkeypatch.setenv("KWKER_CACHE_DIR", str(own))
    model = tiny(seed=9)
    first = cb.optimize(model, "high")
    key = first._kwker_decoder.info["key"]
    shared = tmp_path / "shared"
    shutil.copytree(own, shared)
    (shared / "decoder").chmod(0o770)            # the team's group can write it
    monkeypatch.setenv("KWKER_CACHE_DIR", str(shared))
    planted = shared / "decoder" / f"{key}.so"
    _package._warned.discard(str(shared / "decoder"))
    before = _package.stats()["loaded"]
    with pytest.warns(RuntimeWarning, match=r"cannot hold code.*writable by its group.*chmod 700"
                                            r".*private folder"):
        fast = cb.optimize(model, "high")
    info = fast._kwker_decoder.info
    assert info["kind"] == "package" and "private folder" in info["reason"]
    assert _package.stats()["loaded"] == before                 # the planted one was not
    assert str(planted) not in _package._loaded
    assert sorted(p.name for p in (shared / "decoder").iterdir()) == [f"{key}.json", f"{key}.so"]
    assert torch.equal(gen(fast), gen(first))


def test_a_package_reached_through_a_symbolic_link_is_rebuilt(tmp_path, monkeypatch):
    """The cache's library replaced by a symbolic link (to a copy of the very same, valid
    library) is refused: the file is opened without following links, then rebuilt."""
    monkeypatch.setenv("KWKER_CACHE_DIR", str(tmp_path / "cache"))
    model = tiny(seed=8)
    first = cb.optimize(model, "high")
    so = tmp_path / "cache" / "decoder" / f"{first._kwker_decoder.info['key']}.so"
    elsewhere = tmp_path / "elsewhere.so"
    shutil.copy2(so, elsewhere)
    so.unlink()
    so.symlink_to(elsewhere)
    _package._loaded.pop(str(so))
    with pytest.warns(RuntimeWarning, match=r"unusable.*cannot be opened safely \(it is a "
                                            r"symbolic link\).*rebuilding"):
        again = cb.optimize(model, "high")
    assert again._kwker_decoder.info["kind"] == "package"
    assert not so.is_symlink() and _private(so)
    assert torch.equal(gen(again), gen(first))