"""``compileiq profile``: compare two builds of a kernel to see why one is faster.

Static part (no GPU needed): registers, stack, spill stores and loads, shared memory, and the SASS
opcode histogram. Runtime part, when ``ncu`` is installed and a run command is given: Nsight
Compute's SM throughput, memory throughput, warps active, registers per thread and L2 throughput
for each build. See docs/profile.md.
"""

from .builds import Build, ProfileInputError, input_kind, make_build
from .cli import main
from .ncu import METRICS, NcuError, find_ncu, parse_ncu_csv, run_ncu
from .report import Comparison, compare, format_text
from .sass_mix import mix_diff, opcode_histogram

__all__ = ["main", "Build", "ProfileInputError", "input_kind", "make_build", "compare", "format_text", "Comparison",
           "opcode_histogram", "mix_diff", "METRICS", "NcuError", "find_ncu", "parse_ncu_csv", "run_ncu"]
