"""A link driver that links GCC-compiled objects against an older glibc (CMake's KWKER_GLIBC).

    python glibc_link.py <glibc version> [--cxx=<C++ compiler>] C|CXX <gcc or g++ link arguments...>

Why: what a Linux wheel can claim (its manylinux tag) is decided by the newest glibc and
libstdc++ symbol versions its binaries need, and a link against this machine's glibc binds
every symbol to this glibc's newest version (pthread_create@GLIBC_2.34 where glibc 2.28 has
pthread_create@GLIBC_2.2.5 in libpthread). Zig (the PyPI `ziglang` package) ships stub
libraries and start files for every glibc version, so linking through `zig cc -target
x86_64-linux-gnu.<version>` binds each symbol to the version that glibc has, and fails when a
symbol does not exist there at all: the link itself checks the claim. The objects stay GCC's
(one compilation of the engines for the editable install, the native tests and the wheel);
only the link changes. libstdc++ stays the system's shared one (torch shares C++ objects with
the compiled operators, so it must be the same libstdc++); its symbol versions are what
auditwheel checks against the tag.

Arguments are gcc's or g++'s as CMake writes them. `zig cc` is a C driver, so what g++ adds on
its own for C++ (libstdc++, libgcc_s) is added here by full path: a -L to the system's library
folder would let the linker find this glibc's libc.so instead of Zig's stubs.
"""
import os
import subprocess
import sys


def _gcc_file(name, cxx):
    """The full path the C++ compiler itself would link for `name` (libstdc++.so,
    libgcc_s.so.1): the compiler that compiled the objects, so headers and library match."""
    path = subprocess.run([cxx, f"-print-file-name={name}"], capture_output=True, text=True,
                          check=True).stdout.strip()
    if not os.path.isabs(path):
        sys.exit(f"kwker glibc_link: {cxx} does not know where {name} is (got {path!r}); "
                 "install g++, or configure without -DKWKER_GLIBC")
    return os.path.realpath(path)


def main(argv):
    version, rest = argv[0], argv[1:]
    cxx = os.environ.get("KWKER_GLIBC_CXX", "g++")
    if rest and rest[0].startswith("--cxx="):
        cxx, rest = rest[0].split("=", 1)[1] or cxx, rest[1:]
    lang, args = rest[0], rest[1:]
    # Compile-only options (CMake passes the target's compile flags to the link line too).
    args = [a for a in args if a not in ("-fopenmp", "-pthread")]
    runtime = ([_gcc_file("libstdc++.so", cxx), _gcc_file("libgcc_s.so.1", cxx)]
               if lang == "CXX" else [])
    # This machine's libstdc++ and libgcc_s need this machine's glibc, which is not the one
    # linked against; on a user's machine their own do. Only our objects' needs are checked.
    cmd = [sys.executable, "-m", "ziglang", "cc", "-target", f"x86_64-linux-gnu.{version}",
           *args, *runtime, "-lm", "-lpthread", "-ldl", "-Wl,--allow-shlib-undefined"]
    return subprocess.run(cmd).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
