"""`make bench-llm`'s pure-Python parts: the GGUF format conversion (on a small file made here),
the cache of converted files, the report table and the command line. The benchmark itself needs
llama-cpp-python, which only `make bench-llm` installs: the tests that drive llama.cpp skip
without it."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

gguf = pytest.importorskip("gguf")

from kwker.bench import llm_formats, llm_llamacpp  # noqa: E402

Q = gguf.GGMLQuantizationType
try:
    import llama_cpp  # noqa: F401
    HAVE_LLAMA = True
except ImportError:
    HAVE_LLAMA = False
needs_llama = pytest.mark.skipif(not HAVE_LLAMA, reason="llama-cpp-python is not installed "
                                 "(only `make bench-llm` installs it; it is not part of make test)")


def _small_gguf(path):
    """A Llama-like file with the shipped SmolLM2's mix: Q8_0 embedding, Q4_1 blocks, F32 norm."""
    rng, k = np.random.default_rng(0), 64
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_uint32("llama.block_count", 1)
    w.add_float32("llama.rope.freq_base", 100000.0)
    w.add_bool("tokenizer.ggml.add_bos_token", False)
    w.add_uint32("general.file_type", 3)
    w.add_array("tokenizer.ggml.tokens", ["a", "b", "<eos>"])
    w.add_array("tokenizer.ggml.token_type", [1, 1, 3])
    w.add_tensor("token_embd.weight", gguf.quants.quantize(
        rng.standard_normal((48, k)).astype(np.float32), Q.Q8_0), raw_dtype=Q.Q8_0)
    w.add_tensor("blk.0.attn_q.weight", gguf.quants.quantize(
        rng.standard_normal((32, k)).astype(np.float32), Q.Q4_1), raw_dtype=Q.Q4_1)
    w.add_tensor("blk.0.attn_norm.weight", rng.standard_normal(k).astype(np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return str(path)


def _floats(path):
    return {t.name: gguf.quants.dequantize(t.data, t.tensor_type)
            for t in gguf.GGUFReader(path).tensors}


def _fields(path):
    return {k: f.contents() for k, f in gguf.GGUFReader(path).fields.items()
            if not k.startswith("GGUF.")}


def test_f32_is_the_exact_dequantisation_with_the_same_metadata(tmp_path):
    src = _small_gguf(tmp_path / "src.gguf")
    dst = str(tmp_path / "f32.gguf")
    llm_formats.convert(src, dst, "F32")
    assert set(llm_formats.tensor_types(dst).values()) == {"F32"}
    a, b = _floats(src), _floats(dst)
    for name in a:
        np.testing.assert_array_equal(a[name], b[name])
    fa, fb = _fields(src), _fields(dst)
    assert fb.pop("general.file_type") == 0
    fa.pop("general.file_type")
    assert fa == fb
    assert not os.path.exists(dst + ".part")


@pytest.mark.parametrize("fmt, block_types, embd, tol", [
    ("F16", "F16", "F16", 2.0 ** -11), ("BF16", "BF16", "BF16", 2.0 ** -8),
    ("Q8_0", "Q8_0", "Q8_0", 1 / 127),
    ("Q4_0", "Q4_0", "Q8_0", 1 / 7)])
def test_formats_keep_the_weights_within_their_rounding(tmp_path, fmt, block_types, embd, tol):
    f32 = str(tmp_path / "f32.gguf")
    llm_formats.convert(_small_gguf(tmp_path / "src.gguf"), f32, "F32")
    dst = str(tmp_path / f"{fmt}.gguf")
    llm_formats.convert(f32, dst, fmt, llm_formats._EMBEDDING[fmt])
    types = llm_formats.tensor_types(dst)
    assert types == {"token_embd.weight": embd, "blk.0.attn_q.weight": block_types,
                     "blk.0.attn_norm.weight": "F32"}
    ref, got = _floats(f32), _floats(dst)
    np.testing.assert_array_equal(ref["blk.0.attn_norm.weight"], got["blk.0.attn_norm.weight"])
    for name in ("token_embd.weight", "blk.0.attn_q.weight"):
        scale = np.abs(ref[name]).reshape(ref[name].shape[0], -1, 32).max(axis=2, keepdims=True)
        err = np.abs(ref[name] - got[name]).reshape(scale.shape[0], -1, 32)
        assert (err <= scale * tol + 1e-7).all(), name
    assert _fields(dst)["general.file_type"] == llm_formats._FTYPE[fmt]


def test_a_failed_conversion_leaves_no_file(tmp_path):
    f32 = str(tmp_path / "f32.gguf")
    w = gguf.GGUFWriter(f32, "llama")
    w.add_uint32("general.file_type", 0)
    w.add_tensor("blk.0.attn_q.weight", np.ones((4, 48), np.float32))  # 48: not blocks of 32
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    dst = str(tmp_path / "q4.gguf")
    with pytest.raises(Exception):
        llm_formats.convert(f32, dst, "Q4_0")
    assert not os.path.exists(dst) and not os.path.exists(dst + ".part")


def test_prepare_makes_each_format_once_and_remakes_on_a_new_converter(tmp_path):
    src = _small_gguf(tmp_path / "SmolTest.Q4_1.gguf")
    folder = str(tmp_path / "models")
    logs = []
    paths, conv = llm_formats.prepare(folder, src=src, use_llama=False, log=logs.append)
    assert conv == "gguf.quants" and paths["Q4_1"] == src
    assert set(paths) == set(llm_formats.FORMATS)
    for fmt in ("F32", "F16", "BF16", "Q8_0", "Q4_0"):
        assert os.path.basename(paths[fmt]) == f"SmolTest.{fmt}.gguf"
    stamps = {f: os.stat(p).st_mtime_ns for f, p in paths.items()}
    logs.clear()
    again, _ = llm_formats.prepare(folder, src=src, use_llama=False, log=logs.append)
    assert again == paths and logs == []
    assert {f: os.stat(p).st_mtime_ns for f, p in again.items()} == stamps
    os.remove(paths["Q8_0"])  # a missing file is made again, alone
    llm_formats.prepare(folder, src=src, use_llama=False, log=logs.append)
    assert len(logs) == 1 and "Q8_0" in logs[0]
    with open(os.path.join(folder, llm_formats.MANIFEST)) as f:
        man = json.load(f)
    man["converter"] = "something else"
    with open(os.path.join(folder, llm_formats.MANIFEST), "w") as f:
        json.dump(man, f)
    logs.clear()
    llm_formats.prepare(folder, src=src, use_llama=False, log=logs.append)
    assert len(logs) == 5  # F32, F16, BF16, Q8_0, Q4_0 again


def test_weight_bytes_count_every_matrix_once(tmp_path):
    src = _small_gguf(tmp_path / "src.gguf")
    # Q8_0: 34 bytes per 32 values; Q4_1: 20 bytes per 32 values; the norm vector is not counted
    assert llm_llamacpp.weight_mb_per_token(src) * 1e6 == pytest.approx(48 * 2 * 34 + 32 * 2 * 20)


def test_table_reports_numbers_ratios_and_failures():
    row = {"format": "Q4_1", "weight_MB_per_token": 96.4, "loadavg_1min_start": 2.0,
           "loadavg_1min_end": 2.5, "decode_ratio": 1.25, "prompt_ratio": 0.5, "greedy_agree": 64,
           "kwker_info": {"formats": ["Q4_1 -> int4", "Q8_0 -> int8"]},
           "llama": {"tok_s": 100.0, "prompt_s": 0.2, "other_cpu_fraction": 0.05},
           "kwker": {"tok_s": 125.0, "prompt_s": 0.4, "other_cpu_fraction": 0.1,
                     "generate_tok_s": 90.0}, "generate_ratio": 0.9, "generate_agree": 64}
    bad = {"format": "BF16", "weight_MB_per_token": 269.1, "loadavg_1min_start": None,
           "loadavg_1min_end": None, "kwker_error": "ValueError: no such layout",
           "llama": {"tok_s": 86.0, "prompt_s": 0.3, "other_cpu_fraction": 0.0}}
    env = {"repeats": 5, "threads": 2, "converter": "gguf.quants", "llama_cpp_python": "0.3.36",
           "loadavg_1min_start": 2.0, "loadavg_1min_end": 2.5, "system_info": "AVX512 = 1"}
    md = llm_llamacpp.table({"env": env, "rows": [row, bad]})
    lines = md.splitlines()
    assert lines[2].split("|")[1:-1] == [
        " Q4_1 ", " Q4_1 -> int4, Q8_0 -> int8 ", " 96.4 ", " 100.0 ", " 125.0 ", " 1.25x ",
        " 90.0 ", " 0.90x ", " 200 ", " 400 ", " 0.50x ", " 64/64 ", " 5% / 10% ", " 2.0–2.5 "]
    assert "| BF16 | load failed | 269.1 | 86.0 | — | —x | — | —x |" in lines[3]
    assert "agree on only" not in md
    assert "- BF16: Kwker failed: ValueError: no such layout" in md
    assert "medians of 5 interleaved repeats" in md
    assert "Q4_1: other processes used more than 10%" not in md
    row["generate_agree"] = 40
    assert ("- Q4_1: Kwker's generate() and forward loop agree on only 40/64 greedy tokens"
            in llm_llamacpp.table({"env": env, "rows": [row]}))
    row["kwker"]["other_cpu_fraction"] = 0.5
    md = llm_llamacpp.table({"env": env, "rows": [row]})
    assert "- Q4_1: other processes used more than 10% of the machine while Kwker ran" in md
    assert "activations=float (weight-only" in md
    md = llm_llamacpp.table({"env": dict(env, kwker_activations="int8"), "rows": [row]})
    assert "Kwker's int8 / int4 layers: activations=int8" in md
    md = llm_llamacpp.table({"env": dict(env, kwker_activations="auto"), "rows": [row]})
    assert "activations=auto (x quantised per 32-block" in md
    assert "load_gguf's default for the file's own blocks" in md


def test_activations_option_reaches_the_kwker_worker():
    """--activations int8: the Kwker worker loads with load_gguf(activations="int8") (through
    its environment); anything else is refused by the command line."""
    from kwker.bench import llm_workers
    assert llm_llamacpp._parse(["--activations", "int8"]).activations == "int8"
    assert llm_llamacpp._parse([]).activations == "auto"      # load_gguf's default
    assert llm_llamacpp._parse(["--activations", "float"]).activations == "float"
    assert llm_workers.ACTIVATIONS_ENV == "KWKER_BENCH_LLM_ACTIVATIONS"
    r = subprocess.run([sys.executable, "-m", "kwker.bench.llm_llamacpp", "--activations", "int4"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "invalid choice: 'int4'" in r.stderr


def test_command_line_rejects_an_unknown_format():
    r = subprocess.run([sys.executable, "-m", "kwker.bench.llm_llamacpp", "--formats", "Q9_9"],
                       capture_output=True, text=True)
    assert r.returncode == 2
    assert "unknown Q9_9" in r.stderr and "F32" in r.stderr


def test_a_worker_that_cannot_load_says_why(tmp_path):
    w = llm_llamacpp.Worker("kwker", str(tmp_path / "missing.gguf"), dict(os.environ))
    try:
        assert "error" in w.ready and "missing.gguf does not exist" in w.ready["error"]
    finally:
        w.close()


def test_kwker_worker_decodes_the_same_tokens_in_a_loop_and_through_generate():
    """The Kwker worker's forward loop (the like-for-like number against llama.cpp's loop) and
    generate() give the same greedy tokens, and both are timed."""
    w = llm_llamacpp.Worker("kwker", llm_formats.shipped_path(), dict(os.environ))
    try:
        assert "ready" in w.ready, w.ready
        ans, _ = w.ask("tokens")
        assert len(ans["tokens"]) == 64 and ans["tokens"][0] == 7042  # " Paris"
        assert ans["generate_tokens"] == ans["tokens"]
        ans, _ = w.ask("decode")
        assert ans["tok_s"] > 0 and ans["generate_tok_s"] > 0
    finally:
        w.close()


@needs_llama
def test_llama_worker_answers_paris_on_the_shipped_file():
    w = llm_llamacpp.Worker("llama", llm_formats.shipped_path(), dict(os.environ))
    try:
        assert "ready" in w.ready, w.ready
        ans, other = w.ask("tokens")  # the llama engine's greedy decode, timed
        assert len(ans["tokens"]) == 64 and ans["tokens"][0] == 7042  # " Paris"
        assert ans["tok_s"] > 0 and (other is None or 0 <= other <= 1)
        assert w.ask("prompt", ids=list(range(100, 132)))[0]["s"] > 0
    finally:
        w.close()
