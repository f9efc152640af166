"""CompileIQ: evolutionary search over compiler controls.

The public import paths follow NVIDIA's CompileIQ (``compileiq.ciq.Search``,
``compileiq.types.SearchConfiguration``, ...) so that users' objectives run unchanged;
each concept lives in its own subpackage (see docs/ and ../shared/ARCHITECTURE.md).
"""

from importlib.metadata import PackageNotFoundError, version as _version

try:
    __version__ = _version("compileiq")
except PackageNotFoundError:  # running from a source tree without an install
    __version__ = "0.0.0+unknown"

__all__ = ["__version__"]
