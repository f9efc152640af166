"""KWKER_CACHE_DIR: what Kwker computes once per machine and keeps on disk, default
~/.cache/kwker (under $XDG_CACHE_HOME when set): the torch operators' self-check results
(torch_ops/), the compile backend's choices (dynamo/) and the CPU backend's decoder packages
(decoder/).

Every JSON file goes through one Store: {"schema", "schema_version", "key", ...payload}, written
to a temporary name (mode 0600) and renamed into place, so a reader never sees a half-written
file; a file that does not parse, names another schema or version, or was written for another
key is reported to the caller, which rebuilds it.

The folders Kwker creates are private (0700): the CPU backend loads the decoder packages it
compiles here into the process, so whoever can write them can run code in every process that
uses it. Compiled code is loaded only through load_library(), which checks every folder from
the cache root down and the opened file itself (fstat on the descriptor it then loads, opened
without following symbolic links, so the file cannot be swapped between the check and the load).
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
    if base is None and not os.environ.get(ENV):
        _tighten(top)
        _tighten(path)
    return path


def _tighten(path):
    """Kwker's default cache folders, made by a Kwker that left the umask's mode (0775 under a
    umask of 002), lose their group and other write bits: the checks before loading compiled
    code would refuse them. Only the default location, which is Kwker's own; a KWKER_CACHE_DIR
    the user chose keeps its mode (and a shared one is refused, with the fix)."""
    try:
        st = os.lstat(path)
        if (stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and st.st_mode & 0o022):
            os.chmod(path, stat.S_IMODE(st.st_mode) & ~0o022)
    except OSError:
        pass        # the load-time checks report what is still wrong


def _problem(path, st, kind):
    """Why a file or folder with this stat cannot hold code this process loads, or None."""
    if stat.S_ISLNK(st.st_mode):
        return f"{path} is a symbolic link"
    if kind == "file" and not stat.S_ISREG(st.st_mode):
        return f"{path} is not a regular file"
    if kind == "folder" and not stat.S_ISDIR(st.st_mode):
        return f"{path} is not a folder"
    uid = os.getuid()
    if st.st_uid != uid:
        return f"{path} belongs to uid {st.st_uid}, not to this user (uid {uid})"
    if st.st_mode & 0o022:
        who = " and ".join(w for w, bit in (("its group", 0o020), ("everyone", 0o002))
                           if st.st_mode & bit)
        return (f"{path} is writable by {who} (mode {stat.S_IMODE(st.st_mode):o}; "
                f"chmod go-w {path})")
    return None


def untrusted(path, top=None):
    """None when the folder `path` (and every folder from `top` down to it, when given) can hold
    code this process loads: no symbolic link, owned by this user and writable by no one else.
    Otherwise why not, in words that name the fix."""
    path = os.path.abspath(path)
    chain = [path]
    if top is not None:
        top = os.path.abspath(top)
        cur = path
        while cur != top and os.path.dirname(cur) != cur and cur.startswith(top + os.sep):
            cur = os.path.dirname(cur)
            chain.insert(0, cur)
    for folder in chain:
        try:
            st = os.lstat(folder)
        except OSError as e:
            return f"{folder} cannot be examined ({e.strerror or e})"
        problem = _problem(folder, st, "folder")
        if problem:
            return problem
    return None


class UntrustedCode(OSError):
    """A compiled library that load_library() refused: the message names the path and the fix."""


_held = []   # descriptors of the libraries load_library loaded


def load_library(path, top, loader, sha256=None):
    """loader(path) on the library at `path` (ctypes.CDLL), after the checks of untrusted() on
    every folder from `top` down, and on the file itself through the descriptor that is then
    loaded (/proc/self/fd/N): opened with O_NOFOLLOW, a regular file owned by this user and
    writable by no one else, and (with sha256) holding exactly those bytes. Raises UntrustedCode
    naming the path and the fix otherwise."""
    problem = untrusted(os.path.dirname(os.path.abspath(path)), top)
    if problem:
        raise UntrustedCode(f"not loaded: {problem}")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as e:
        why = "it is a symbolic link" if e.errno == 40 else (e.strerror or str(e))
        raise UntrustedCode(f"not loaded: {path} cannot be opened safely ({why})") from e
    try:
        problem = _problem(path, os.fstat(fd), "file")
        if problem:
            raise UntrustedCode(f"not loaded: {problem}")
        if sha256 is not None and _fd_sha256(fd) != sha256:
            raise UntrustedCode(f"not loaded: {path} does not hold the bytes its manifest names")
        via = f"/proc/self/fd/{fd}"
        if not os.path.exists(via):       # no /proc: the path, if it is still the same file
            st, now = os.fstat(fd), os.stat(path, follow_symlinks=False)
            if (st.st_dev, st.st_ino) != (now.st_dev, now.st_ino):
                raise UntrustedCode(f"not loaded: {path} changed while it was checked")
            via = path
    except BaseException:
        os.close(fd)
        raise
    # The descriptor stays open for the life of the process, even when loading fails part way:
    # the dynamic loader knows a library by the name it was given, and a closed descriptor's
    # number (so its /proc/self/fd name) comes back for the next library, which dlopen would
    # then take for the one it already holds.
    _held.append(fd)
    return loader(via)


def sha256_file(path):
    """The SHA-256 of a file's bytes, in hex."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        return _fd_sha256(fd)
    finally:
        os.close(fd)


def _fd_sha256(fd):
    h = hashlib.sha256()
    os.lseek(fd, 0, os.SEEK_SET)
    while True:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            break
        h.update(chunk)
    os.lseek(fd, 0, os.SEEK_SET)
    return h.hexdigest()


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


class Store:
    """One kind of cache file: KWKER_CACHE_DIR/<folder>/<prefix><digest of key>.json holding
    {"schema", "schema_version", "key", ...payload}. location= puts the folder elsewhere (an
    absolute path: the compile backend's cache_dir option)."""

    def __init__(self, folder, schema, version, *, prefix="", location=None):
        self.name, self.schema, self.version, self.prefix = folder, schema, version, prefix
        self._location = os.path.abspath(location) if location else None

    @property
    def folder(self):
        return self._location or os.path.join(root(), self.name)

    def path(self, key):
        return os.path.join(self.folder, f"{self.prefix}{digest(key)}.json")

    def get(self, key, path=None):
        """(payload, None) for a valid file of this schema, version and key; (None, None) when
        there is none; (None, why) when the file is there but unusable (the caller rebuilds it)."""
        path = path or self.path(key)
        data, problem = read_json(path)
        if data is None:
            return None, problem
        if not isinstance(data, dict) or data.get("schema") != self.schema:
            return None, f"not a {self.schema} file"
        if data.get("schema_version") != self.version:
            return None, (f"schema version {data.get('schema_version')!r}, this Kwker reads "
                          f"{self.version}")
        if data.get("key") != json.loads(json.dumps(key, default=str)):
            return None, "written for another key"
        return {k: v for k, v in data.items() if k not in ("schema", "schema_version", "key")}, None

    def put(self, key, payload, path=None):
        """Writes the file atomically (0600), creating the folder (0700); returns its path."""
        path = path or self.path(key)
        d = os.path.dirname(path)
        if self._location or d != self.folder:
            os.makedirs(d, mode=0o700, exist_ok=True)
        else:
            folder(self.name)
        write_json(path, {"schema": self.schema, "schema_version": self.version, "key": key,
                          **payload})
        return path


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
