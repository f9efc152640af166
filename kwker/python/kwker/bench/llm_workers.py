"""One engine on one GGUF file, in its own process, driven by `make bench-llm` over a pipe.

Each engine runs in a process of its own because llama.cpp and torch bring their own OpenMP
runtimes: in one process the idle one's spinning threads would be timed against the other.
The parent interleaves the two workers' runs. Protocol: one JSON object per line; the worker
answers {"ready": ...} (or {"error": ...}) after loading, then one line per command
("decode", "prompt", "quit"). Library output goes to stderr so stdout carries only the protocol.

    python -m kwker.bench.llm_workers {llama,kwker} FILE.gguf
"""
import json
import os
import sys
import time

from .cpu_backend import PROMPT

THREADS = 2
# What llm_llamacpp --activations hands the Kwker worker (through its environment).
ACTIVATIONS_ENV = "KWKER_BENCH_LLM_ACTIVATIONS"
NEW_TOKENS = 64
# "1": load without llama.cpp's extra buffer types (llm_llamacpp.Worker sets it after a crash).
NO_EXTRA_BUFTS = "KWKER_BENCH_LLAMA_NO_EXTRA_BUFTS"


class LlamaEngine:
    """llama.cpp through llama-cpp-python: greedy with EOS suppressed, token by token."""

    def __init__(self, path):
        import llama_cpp
        import llama_cpp.llama as llama_mod
        extra = os.environ.get(NO_EXTRA_BUFTS) != "1"
        defaults = llama_cpp.llama_model_default_params
        if not extra:  # Llama() exposes no switch: its model parameters start from this call
            def no_extra():
                params = defaults()
                params.use_extra_bufts = False
                return params
            llama_mod.llama_cpp.llama_model_default_params = no_extra
        try:
            self.llm = llama_cpp.Llama(model_path=path, n_ctx=512, n_batch=512, n_ubatch=512,
                                       n_threads=THREADS, n_threads_batch=THREADS,
                                       logits_all=False, verbose=False)
        finally:
            llama_mod.llama_cpp.llama_model_default_params = defaults
        self.eos = self.llm.token_eos()
        self.n_vocab = self.llm.n_vocab()
        self._logits = llama_cpp.llama_get_logits_ith
        self.info = {"llama_cpp_python": llama_cpp.__version__, "extra_bufts": extra,
                     "system_info": llama_cpp.llama_print_system_info().decode().strip()}

    def decode(self):
        import numpy as np
        llm, stamps, tokens = self.llm, [], []
        llm.reset()
        llm.eval(PROMPT)
        for i in range(NEW_TOKENS):
            # llama-cpp-python copies no logits without logits_all: read llama.cpp's own buffer
            logits = np.ctypeslib.as_array(self._logits(llm._ctx.ctx, -1),
                                           shape=(self.n_vocab,)).copy()
            logits[self.eos] = -np.inf  # as min_new_tokens does in transformers
            tok = int(logits.argmax())
            stamps.append(time.perf_counter())
            tokens.append(tok)
            if i + 1 < NEW_TOKENS:
                llm.eval([tok])
        # token 1 comes from the prompt pass: decode time is token 64 - token 1, as in cpu_backend
        return {"tok_s": (NEW_TOKENS - 1) / (stamps[-1] - stamps[0]), "tokens": tokens}

    def prompt(self, ids):
        self.llm.reset()
        t = time.perf_counter()
        self.llm.eval(ids)  # fills the KV cache, logits of the last position
        return {"s": time.perf_counter() - t}


class KwkerEngine:
    """kwker.cpu_backend.load_gguf on the same file; decode in a forward loop (as llama.cpp's
    side) and through generate() (as cpu_backend's section)."""

    def __init__(self, path):
        import torch

        import kwker
        import kwker.cpu_backend as cb
        self.torch = torch
        torch.set_num_threads(THREADS)
        self._cfg = kwker.config(max_threads=THREADS)
        self._cfg.__enter__()
        t = time.perf_counter()
        # llm_llamacpp --activations (load_gguf's own default, "auto", unless given).
        self.model = cb.load_gguf(path, activations=os.environ.get(ACTIVATIONS_ENV, "auto"))
        info = dict(getattr(self.model, "_kwker_cpu_backend", {}) or {})
        self.info = {"load_s": time.perf_counter() - t, "formats": info.get("formats"),
                     "decoder": info.get("decoder"), "engine": cb.status().get("engine")}

    def _loop(self):
        """Greedy decode in a plain forward loop over the KV cache, exactly what LlamaEngine
        does with llama.cpp: (tok/s, tokens). This is the like-for-like engine comparison;
        generate() adds transformers' per-token Python on top (reported beside it)."""
        torch = self.torch
        eos = self.model.generation_config.eos_token_id
        eos = [] if eos is None else [eos] if isinstance(eos, int) else list(eos)
        stamps, tokens = [], []
        with torch.no_grad():
            out = self.model(torch.tensor([PROMPT]), use_cache=True, logits_to_keep=1)
            cache = out.past_key_values
            for i in range(NEW_TOKENS):
                logits = out.logits[0, -1]
                logits[eos] = -float("inf")  # as LlamaEngine and min_new_tokens do
                tok = int(logits.argmax())
                stamps.append(time.perf_counter())
                tokens.append(tok)
                if i + 1 < NEW_TOKENS:
                    out = self.model(torch.tensor([[tok]]), past_key_values=cache,
                                     use_cache=True)
        return (NEW_TOKENS - 1) / (stamps[-1] - stamps[0]), tokens

    def decode(self):
        from .cpu_backend import decode_tps
        tps, _ = self._loop()
        return {"tok_s": tps,
                "generate_tok_s": decode_tps(self.model, self.torch.tensor([PROMPT]), self.torch)}

    def tokens(self):
        torch = self.torch
        with torch.no_grad():
            out = self.model.generate(torch.tensor([PROMPT]), max_new_tokens=NEW_TOKENS,
                                      min_new_tokens=NEW_TOKENS, do_sample=False)
        return {"tokens": self._loop()[1], "generate_tokens": out[0, len(PROMPT):].tolist()}

    def prompt(self, ids):
        torch = self.torch
        with torch.no_grad():
            t = time.perf_counter()
            # What generate()'s prefill does: the KV cache and the last position's logits.
            self.model(torch.tensor([ids]), use_cache=True, logits_to_keep=1)
            return {"s": time.perf_counter() - t}


ENGINES = {"llama": LlamaEngine, "kwker": KwkerEngine}


def main(argv=None):
    engine, path = (argv or sys.argv[1:])[:2]
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # stray prints (progress bars, library logs) must not break the protocol

    def say(obj):
        proto.write(json.dumps(obj) + "\n")

    try:
        eng = ENGINES[engine](path)
    except Exception as e:
        say({"error": f"{type(e).__name__}: {e}"})
        return 1
    say({"ready": eng.info})
    for line in sys.stdin:
        cmd = json.loads(line)
        op = cmd["op"]
        if op == "quit":
            break
        try:
            if op == "decode":
                say(eng.decode())
            elif op == "tokens":
                say(eng.tokens() if hasattr(eng, "tokens") else eng.decode())
            elif op == "prompt":
                say(eng.prompt(cmd["ids"]))
            else:
                say({"error": f"unknown command {op!r}"})
        except Exception as e:
            say({"error": f"{type(e).__name__}: {e}"})
    return 0


if __name__ == "__main__":
    sys.exit(main())
