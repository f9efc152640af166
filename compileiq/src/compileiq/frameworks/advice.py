"""How to make sure a candidate reaches the compiler, per framework: the table the trust tools print.

The symptom of a missed cache-bust is a search in which every candidate scores the same as the
baseline: the framework served a binary it had built before, and the candidate's controls were
never compiled in.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CacheBust:
    framework: str
    how: str
    helper: str


_TABLE = (
    CacheBust("Triton", "TRITON_ALWAYS_COMPILE=1 and a new TRITON_CACHE_DIR per evaluation; TRITON_PTXAS_PATH / "
              "TRITON_PTXAS_BLACKWELL_PATH at a ptxas >= 13.3 for vendor ACFs (the bundled one is older); pass the "
              "options as ptx_options= when Triton is already imported", "compileiq.frameworks.triton_candidate"),
    CacheBust("Helion", "HELION_SKIP_CACHE=1 (plus Triton's settings, as Helion compiles through Triton); a vendor "
              "ACF goes in helion.Config(advanced_controls_file=...)", "compileiq.frameworks.helion_candidate"),
    CacheBust("FlashInfer", "uninstall flashinfer-cubin and flashinfer-jit-cache (prebuilt kernels skip compilation); "
              "a new FLASHINFER_WORKSPACE_BASE per evaluation; flags in FLASHINFER_EXTRA_CUDAFLAGS",
              "compileiq.frameworks.flashinfer_candidate"),
    CacheBust("raw nvcc", "build every candidate in a clean folder (make/CMake reuse objects whose sources did not "
              "change, whatever the flags)", "compileiq.frameworks.nvcc_build_dir"),
)


def cache_bust_advice() -> dict[str, CacheBust]:
    """Framework name -> what busts its cache and which CompileIQ helper does it."""
    return {row.framework: row for row in _TABLE}


def cache_bust_table() -> str:
    """The advice as a Markdown table."""
    lines = ["| framework | how to make every candidate compile | helper |", "|---|---|---|"]
    lines += [f"| {r.framework} | {r.how} | `{r.helper}` |" for r in _TABLE]
    return "\n".join(lines)


__all__ = ["CacheBust", "cache_bust_advice", "cache_bust_table"]
