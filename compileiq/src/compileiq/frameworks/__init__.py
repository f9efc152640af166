"""Framework helpers: make sure each candidate's controls really reach the compiler.

Every helper is a context manager that sets up one evaluation (environment variables, a fresh
cache or build folder) and restores everything on exit::

    with triton_candidate(controls=path) as cand:
        kernel[grid](..., ptx_options=cand.ptx_options)

None of them imports its framework, so they work (and are tested) where it is not installed.
"""

from ._env import FrameworkCacheWarning, FrameworkCandidate
from .advice import CacheBust, cache_bust_advice, cache_bust_table
from .flashinfer_env import flashinfer_candidate, prebuilt_packages
from .helion_env import helion_candidate
from .nvcc_env import nvcc_build_dir
from .triton_env import triton_candidate

__all__ = ["triton_candidate", "helion_candidate", "flashinfer_candidate", "nvcc_build_dir", "cache_bust_advice",
           "cache_bust_table", "CacheBust", "FrameworkCandidate", "FrameworkCacheWarning", "prebuilt_packages"]
