"""Decoder packages: the decode step (kwker/decoder/decoder_step.cc) compiled for one
architecture (layer count and shapes, head layout, mode, int4 group) and the engine in use, and
kept in KWKER_CACHE_DIR/decoder/ so a later process loads it without compiling.

A package is `<key>.so` plus `<key>.json` (a kwker._cache.Store file: what it was built for and
the .so's SHA-256). It is loaded only through kwker._cache.load_library: the folders from the
cache root down and the file itself (checked on the descriptor that is loaded) must belong to
this user and be writable by no one else; where the cache folder fails that, the package is
compiled into a private folder of the process instead, with a warning naming the fix. The key
hashes everything the machine code depends on: the shapes, mode, engine and its flags, the
source text, the Kwker version and the compiler's version, so another architecture or mode can
never load the wrong package. Both files are written under temporary names and renamed into
place; a package whose manifest is missing or does not match its .so is rebuilt with a warning.
Without a C++ compiler (CXX, else c++ / g++ on PATH), or when a build fails, the generic
library compiled with the wheel (lib/libkwker_decoder.so, same source, shapes at run time) runs
instead and status() says why.
"""
import atexit
import ctypes
import functools
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
_private = []
# <key>.json beside <key>.so: the description the key hashes, and the library's SHA-256.
MANIFESTS = _cache.Store("decoder", "kwker.cpu_backend.decoder_package", 1)


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
    try:
        return _bind_symbols(lib)
    except AttributeError as e:   # not a decoder library at all
        raise OSError(f"not a Kwker decoder library ({e})") from e


def _bind_symbols(lib):
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


def package_key(shapes, engine):
    """(key, description) of the package for these shapes on this engine."""
    import kwker
    f = _files()
    cmd, _ = compiler()
    with open(f["flags"], encoding="utf-8") as fh:
        flags = json.load(fh).get(engine, [])
    desc = {"abi": ABI, "shapes": {k: int(shapes[k]) for k in SHAPE_FIELDS}, "engine": engine,
            "flags": flags, "kwker": kwker.__version__,
            "source": _cache.sha256_file(f["src"])[:16],
            "header": _cache.sha256_file(f["header"])[:16],
            "api": _cache.sha256_file(os.path.join(f["include"], "kwker", "kwker.h"))[:16],
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


def _private_folder():
    """A folder of this process's own (0700, removed at exit), for packages the shared cache
    folder cannot hold."""
    if not _private:
        path = tempfile.mkdtemp(prefix="kwker-decoder-")
        atexit.register(shutil.rmtree, path, True)
        _private.append(path)
    return _private[0]


def _load_checked(so_path, top, sha256, desc):
    """The package at so_path through _cache.load_library, and then checked to be the library
    built for desc's shapes (what the dynamic loader handed back, not only what was on disk)."""
    lib = _cache.load_library(so_path, top, lambda p: _bind(ctypes.CDLL(p)), sha256=sha256)
    want = " ".join(f"{k}={int(desc['shapes'][k])}" for k in SHAPE_FIELDS)
    got = (lib.kwd_build_info() or b"").decode(errors="replace")
    if got != want:
        raise OSError(f"the library loaded from {so_path} was built for {got!r}, not {want!r}")
    return lib


def load(shapes, engine, cache_dir=None, generic_only=False):
    """(library, info) for these shapes on this engine: the cached package, a freshly compiled
    one, or the generic library (info["kind"] says which and info["reason"] why)."""
    if generic_only:
        return _generic("decoder=\"generic\" was asked for")
    cmd, why = compiler()
    if cmd is None:
        return _generic(why)
    key, desc = package_key(shapes, engine)
    top = os.path.abspath(cache_dir or _cache.root())
    folder = _cache.folder("decoder", cache_dir)
    note = ""
    unsafe = _cache.untrusted(folder, top)
    if unsafe:
        # Another user could put a library here: nothing is compiled into or loaded from it.
        private = _private_folder()
        note = (f"the decoder cache folder cannot hold code this process loads: {unsafe}; make "
                f"it private (chmod 700 {folder}, and chmod go-w any folder above it up to "
                f"{top}) or set {_cache.ENV} to a folder of your own. Until then each process "
                f"compiles its package into a private folder ({private})")
        if folder not in _warned:
            _warned.add(folder)
            warnings.warn(f"kwker.cpu_backend: {note}", RuntimeWarning, stacklevel=3)
        folder = top = private
    so_path = os.path.join(folder, key + ".so")
    if so_path in _loaded:
        _stats["loaded"] += 1
        return _loaded[so_path], _info("package", key, "already loaded in this process")
    man_path = os.path.join(folder, key + ".json")
    manifest, bad = MANIFESTS.get(desc, path=man_path)
    if manifest is not None and not isinstance(manifest.get("sha256"), str):
        manifest, bad = None, "its manifest names no SHA-256"
    if manifest is not None and os.path.exists(so_path):
        try:
            lib = _load_checked(so_path, top, manifest["sha256"], desc)
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
        sha = _cache.sha256_file(so_path)
        lib = _load_checked(so_path, top, sha, desc)
    except (OSError, subprocess.SubprocessError) as e:
        return _generic(f"building the decoder package failed, so the generic decode step runs: "
                        f"{e}")
    seconds = time.perf_counter() - t0
    MANIFESTS.put(desc, {"sha256": sha, "built": time.time(),
                         "compile_seconds": round(seconds, 2)}, path=man_path)
    _loaded[so_path] = lib
    _stats["compiled"] += 1
    _stats["compile_seconds"] += seconds
    where = f"into a private folder, {folder}: {note}" if note else f"into {folder}"
    return lib, _info("package", key, f"compiled in {seconds:.1f} s {where}")


def _info(kind, key, reason):
    info = {"kind": kind, "key": key, "reason": reason}
    _stats["last"] = info
    return info


def _generic(why):
    _stats["generic"] += 1
    return generic(), _info("generic", None, why)
