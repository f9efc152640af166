"""Controls files: the open format CompileIQ writes, vendor ACFs users bring, and how either reaches a compiler.

    from compileiq.controls import controls_args
    save_compiler_config("cand.ctl", config)                  # the hex string the objective received
    subprocess.run(["ptxas", "-arch=sm_90", "k.ptx", "-o", "k.cubin", *controls_args("cand.ctl", "ptxas")])

See docs/controls.md.
"""

from .args import ControlsArgs, controls_args
from .format import (ControlsError, ControlsFile, format_controls, header, is_open_controls, parse_controls,
                     read_controls, write_controls)
from .vendor import MIN_CUDA, VendorAcfError, check_vendor_acf

__all__ = ["controls_args", "ControlsArgs", "ControlsFile", "ControlsError", "VendorAcfError", "check_vendor_acf",
           "format_controls", "header", "is_open_controls", "parse_controls", "read_controls", "write_controls",
           "MIN_CUDA"]
