"""Find the installed native files (libkwker, headers, kwker-doctor, CMake config).

In a wheel install they sit next to the package: site-packages/kwker/{lib,include,bin}. In an
editable install the Python sources are imported from the source tree while the compiled files
live in site-packages/kwker, so __file__ is no guide; the _fast extension (which scikit-build
installs into site-packages/kwker) and sys.path are.
"""
import os
import sys

LIB_NAMES = ("libkwker.so.1", "libkwker.so")


def _has_lib(root):
    return any(os.path.exists(os.path.join(root, "lib", n)) for n in LIB_NAMES)


def native_root():
    """The directory that holds lib/libkwker.so*, or None."""
    try:
        from kwker import _fast
        root = os.path.dirname(os.path.abspath(_fast.__file__))
        if _has_lib(root):
            return root
    except ImportError:
        pass
    for entry in sys.path:
        root = os.path.join(entry or os.getcwd(), "kwker")
        if _has_lib(root):
            return os.path.abspath(root)
    return None


def library_path():
    """Path of libkwker for ctypes: $KWKER_LIBRARY, else the installed copy."""
    env = os.environ.get("KWKER_LIBRARY")
    if env:
        if not os.path.exists(env):
            raise ImportError(
                f"KWKER_LIBRARY={env!r} does not exist; point it at a libkwker.so or unset it "
                "to use the copy installed with the kwker package")
        return env
    root = native_root()
    if root is not None:
        for name in LIB_NAMES:
            path = os.path.join(root, "lib", name)
            if os.path.exists(path):
                return path
    raise ImportError(
        "cannot find libkwker.so: it is neither next to the kwker._fast extension nor in "
        "kwker/lib under any sys.path entry. Reinstall the wheel (pip install --force-reinstall "
        "kwker) or set KWKER_LIBRARY to the path of libkwker.so")


def sdk_paths():
    """Dict of the SDK locations (values None where the file is missing)."""
    root = native_root()

    def existing(*parts):
        if root is None:
            return None
        path = os.path.join(root, *parts)
        return path if os.path.exists(path) else None

    lib = None
    if root is not None:
        for name in LIB_NAMES:
            lib = existing("lib", name) or lib
    return {
        "root": root,
        "include_dir": existing("include"),
        "lib_dir": existing("lib"),
        "library": lib,
        "cmake_dir": existing("lib", "cmake", "kwker"),
        "doctor": existing("bin", "kwker-doctor"),
    }
