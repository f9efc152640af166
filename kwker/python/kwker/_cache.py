"""KWKER_CACHE_DIR: what Kwker computes once per machine and keeps on disk.

The torch operators' self-check results (kwker.torch_ops) and the torch.compile backend's
choices (kwker.dynamo) live here, default ~/.cache/kwker (under $XDG_CACHE_HOME when set).
Files are JSON, written to a temporary name and renamed into place, so a reader never sees a
half-written file; a file that does not parse is reported to the caller, which rebuilds it.

The folders Kwker creates are private (0700) and its files 0600: the CPU backend loads the
decoder packages it compiles here into the process, so whoever can write them can run code in
every process that uses it. Code is loaded only from a folder and a file that untrusted() passes.
"""
import hashlib
import json
import os
import stat
import tempfile

ENV = "KWKER_CACHE_DIR"


def root():
    """The cache folder (not created)."""
    value = os.environ.get(ENV, "")
    if value:
        return os.path.abspath(os.path.expanduser(value))
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "kwker")


def folder(name, base=None):
    """root()/name (or base/name), created on first use. A path that exists as a file or cannot
    be created raises OSError naming the variable to change."""
    top = base or root()
    path = os.path.join(top, name)
    try:
        os.makedirs(top, mode=0o700, exist_ok=True)   # the mode applies to folders it creates
        os.makedirs(path, mode=0o700, exist_ok=True)
    except OSError as e:
        raise OSError(f"kwker: cannot create the cache folder {path!r} ({e.strerror or e}); "
                      f"set {ENV} to a writable folder") from e
    return path


def untrusted(path):
    """None when path (a folder or a file) is one to load code from: not a symbolic link, owned
    by this user and writable by no one else. Otherwise why not, in words that name the fix."""
    try:
        st = os.lstat(path)
    except OSError as e:
        return f"{path} cannot be examined ({e.strerror or e})"
    if stat.S_ISLNK(st.st_mode):
        return f"{path} is a symbolic link"
    uid = os.getuid()
    if st.st_uid != uid:
        return f"{path} belongs to uid {st.st_uid}, not to this user (uid {uid})"
    if st.st_mode & 0o022:
        who = " and ".join(w for w, bit in (("its group", 0o020), ("everyone", 0o002))
                           if st.st_mode & bit)
        return (f"{path} is writable by {who} (mode {stat.S_IMODE(st.st_mode):o}; "
                f"chmod go-w {path})")
    return None


def digest(obj):
    """A short stable hash of a JSON-serialisable key."""
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def read_json(path):
    """(object, None) when path holds valid JSON; (None, None) when it does not exist;
    (None, reason) when it exists but cannot be read or parsed."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f), None
    except FileNotFoundError:
        return None, None
    except (OSError, ValueError) as e:
        return None, f"{type(e).__name__}: {e}"


def write_json(path, obj):
    """Writes obj as JSON atomically (temporary file in the same folder, then rename)."""
    d = os.path.dirname(path)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=d)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(obj, f, indent=1, sort_keys=True)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def machine():
    """What makes a cached measurement or check specific to this machine and configuration:
    the CPU (vendor, brand, features), the engine in use and the thread budget."""
    import kwker
    info = kwker.runtime_info()
    cpu = info.get("cpu", {})
    return {
        "cpu": f"{cpu.get('vendor', '?')} {cpu.get('brand', '?')}",
        "features": sorted(k for k, v in cpu.get("features", {}).items() if v),
        "engine": kwker.get_isa(),
        "threads": info.get("threads", {}).get("budget"),
    }
