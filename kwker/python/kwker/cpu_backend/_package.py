"""Decoder packages: the decode step (kwker/decoder/decoder_step.cc) compiled for one
architecture (layer count and shapes, head layout, mode, int4 group) and the engine in use, and
kept in KWKER_CACHE_DIR/decoder/ so a later process loads it without compiling.

A package is `<key>.so` plus `<key>.json` (what it was built for and the .so's SHA-256). The key
hashes everything the machine code depends on: the shapes, mode, engine and its flags, the
source text, the Kwker version and the compiler's version, so another architecture or mode can
never load the wrong package. Both files are written under temporary names and renamed into
place; a package whose manifest is missing or does not match its .so is rebuilt with a warning.
Without a C++ compiler (CXX, else c++ / g++ on PATH), or when a build fails, the generic
library compiled with the wheel (lib/libkwker_decoder.so, same source, shapes at run time) runs
instead and status() says why.
"""
import ctypes
import functools
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import time
import warnings

from kwker import _cache, _locate

ABI = 1
SHAPE_FIELDS = ("layers", "hidden", "heads", "kv_heads", "head_dim", "inter", "vocab", "mode",
                "group", "lm_mode", "lm_group")
_stats = {"compiled": 0, "loaded": 0, "generic": 0, "rebuilt": 0, "compile_seconds": 0.0,
          "last": None}
_loaded = {}
_warned = set()  # cache folders refused, warned about once per process


def stats():
    """Counters of this process: packages compiled, packages loaded from the cache, decoders
    running the generic library, corrupt packages rebuilt; `last` says what the last optimize()
    got and why."""
    return dict(_stats)


def _files():
    root = _locate.native_root()
    if root is None:
        raise ImportError("kwker.cpu_backend: the native files of the kwker package are missing "
                          "(reinstall kwker)")
    src = os.path.join(root, "decoder")
    return {"root": root, "src": os.path.join(src, "decoder_step.cc"),
            "header": os.path.join(src, "kwker_decoder.h"),
            "flags": os.path.join(src, "engine_flags.json"),
            "include": os.path.join(root, "include"), "lib": os.path.join(root, "lib"),
            "generic": os.path.join(root, "lib", "libkwker_decoder.so")}


def _bind(lib):
    lib.kwd_step.restype = ctypes.c_int
    lib.kwd_step.argtypes = (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int)
    lib.kwd_abi.restype = ctypes.c_int
    lib.kwd_build_info.restype = ctypes.c_char_p
    if lib.kwd_abi() != ABI:
        raise OSError(f"decoder library speaks ABI {lib.kwd_abi()}, this Kwker {ABI}")
    return lib


def generic():
    """The generic decode step shipped with the wheel (loaded once)."""
    if "generic" not in _loaded:
        _loaded["generic"] = _bind(ctypes.CDLL(_files()["generic"]))
    return _loaded["generic"]


def compiler():
    """(command, None) of the C++ compiler packages are built with, or (None, why not)."""
    cxx = os.environ.get("CXX", "").strip()
    if cxx:
        path = shutil.which(cxx.split()[0])
        return ((cxx.split(), None) if path else
                (None, f"CXX={cxx!r} is set but not found on PATH"))
    for name in ("c++", "g++", "clang++"):
        if shutil.which(name):
            return [name], None
    return None, ("no C++ compiler at run time (install g++ or set CXX); the generic decode "
                  "step runs, a little slower than a package specialised for the model")


@functools.lru_cache(maxsize=8)
def _version_of(cmd):
    return _compiler_version(list(cmd))


def _compiler_version(cmd):
    try:
        out = subprocess.run(cmd + ["--version"], capture_output=True, text=True, timeout=60)
        return out.stdout.splitlines()[0] if out.stdout else "?"
    except (OSError, subprocess.SubprocessError):
        return "?"


def _sha(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def package_key(shapes, engine):
    """(key, description) of the package for these shapes on this engine."""
    import kwker
    f = _files()
    cmd, _ = compiler()
    with open(f["flags"], encoding="utf-8") as fh:
        flags = json.load(fh).get(engine, [])
    desc = {"abi": ABI, "shapes": {k: int(shapes[k]) for k in SHAPE_FIELDS}, "engine": engine,
            "flags": flags, "kwker": kwker.__version__,
            "source": _sha(f["src"])[:16], "header": _sha(f["header"])[:16],
            "api": _sha(os.path.join(f["include"], "kwker", "kwker.h"))[:16],
            "compiler": _version_of(tuple(cmd)) if cmd else None}
    return _cache.digest(desc), desc


def _build(cmd, desc, so_path):
    f = _files()
    defines = [f"-DKWD_{k.upper()}={int(v)}" for k, v in desc["shapes"].items()]
    folder = os.path.dirname(so_path)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".so", dir=folder)
    os.close(fd)
    args = cmd + ["-std=c++17", "-O3", "-fPIC", "-shared", "-ffp-contract=off",
                  "-fvisibility=hidden", *desc["flags"], "-DKWD_SPEC", *defines,
                  "-I", f["include"], "-I", os.path.dirname(f["src"]), f["src"],
                  "-L", f["lib"], f"-Wl,-rpath,{f['lib']}", "-l:libkwker.so.1", "-o", tmp]
    try:
        run = subprocess.run(args, capture_output=True, text=True, timeout=600)
        if run.returncode != 0:
            raise OSError(f"the compiler failed ({' '.join(cmd)} exit {run.returncode}): "
                          f"{(run.stderr or run.stdout).strip()[-800:]}")
        os.chmod(tmp, 0o700)   # the linker creates its output with the umask's mode
        os.replace(tmp, so_path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def load(shapes, engine, cache_dir=None, generic_only=False):
    """(library, info) for these shapes on this engine: the cached package, a freshly compiled
    one, or the generic library (info["kind"] says which and info["reason"] why)."""
    if generic_only:
        return _generic("decoder=\"generic\" was asked for")
    cmd, why = compiler()
    if cmd is None:
        return _generic(why)
    key, desc = package_key(shapes, engine)
    folder = _cache.folder("decoder", cache_dir)
    unsafe = _cache.untrusted(folder)
    if unsafe:
        # Another user could put a library here: nothing is compiled into or loaded from it.
        why = (f"the decoder cache folder cannot hold code this process loads: {unsafe}; make "
               f"it private (chmod 700 {folder}) or set {_cache.ENV} to a folder of your own, "
               "so the generic decode step runs")
        if folder not in _warned:
            _warned.add(folder)
            warnings.warn(f"kwker.cpu_backend: {why}", RuntimeWarning, stacklevel=3)
        return _generic(why)
    so_path = os.path.join(folder, key + ".so")
    if so_path in _loaded:
        _stats["loaded"] += 1
        return _loaded[so_path], _info("package", key, "already loaded in this process")
    man_path = os.path.join(folder, key + ".json")
    manifest, bad = _cache.read_json(man_path)
    if manifest is not None and os.path.exists(so_path):
        try:
            unsafe = _cache.untrusted(so_path)
            if unsafe:
                raise OSError(f"not loaded: {unsafe}")
            if manifest.get("sha256") != _sha(so_path) or manifest.get("desc") != desc:
                raise OSError("its manifest does not match the library")
            lib = _bind(ctypes.CDLL(so_path))
            _loaded[so_path] = lib
            _stats["loaded"] += 1
            return lib, _info("package", key, f"loaded from {folder}")
        except OSError as e:
            bad = str(e)
    if bad or (manifest is None) != (not os.path.exists(so_path)):
        warnings.warn(f"kwker.cpu_backend: the decoder package {so_path} is unusable "
                      f"({bad or 'half of it is missing'}); rebuilding it", RuntimeWarning,
                      stacklevel=3)
        _stats["rebuilt"] += 1
    t0 = time.perf_counter()
    try:
        _build(cmd, desc, so_path)
        lib = _bind(ctypes.CDLL(so_path))
    except (OSError, subprocess.SubprocessError) as e:
        return _generic(f"building the decoder package failed, so the generic decode step runs: "
                        f"{e}")
    seconds = time.perf_counter() - t0
    _cache.write_json(man_path, {"desc": desc, "sha256": _sha(so_path), "built": time.time(),
                                 "compile_seconds": round(seconds, 2)})
    _loaded[so_path] = lib
    _stats["compiled"] += 1
    _stats["compile_seconds"] += seconds
    return lib, _info("package", key, f"compiled in {seconds:.1f} s into {folder}")


def _info(kind, key, reason):
    info = {"kind": kind, "key": key, "reason": reason}
    _stats["last"] = info
    return info


def _generic(why):
    _stats["generic"] += 1
    return generic(), _info("generic", None, why)
