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

from .utils.validation import BASELINE_CONFIG, INVALID_SCORE  # noqa: E402


def __getattr__(name):
    # Search and SearchConfiguration load lazily: worker processes import this package, and
    # should not pay for pandas (which Search needs) on every start
    if name == "Search":
        from .ciq import Search
        return Search
    if name == "SearchConfiguration":
        from .types import SearchConfiguration
        return SearchConfiguration
    raise AttributeError(f"module 'compileiq' has no attribute {name!r}")

__all__ = ["__version__", "Search", "SearchConfiguration", "INVALID_SCORE", "BASELINE_CONFIG"]
