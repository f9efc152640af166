"""Booster packs, the built-in open debug packs, the O0/O3 canary and try_pack.

    from compileiq.boosters import canary, try_pack, load_pack, debug_pack
    print(canary(objective, "gcc").report())           # do the controls reach the compiler?
    print(try_pack(objective, "debug-pack-gcc").report())

See docs/boosters.md.
"""

from ..search_spaces.packs import PackError
from .build import manifest_doc, write_pack_manifest, zip_pack
from .builtin import DEBUG_LEVELS, builtin_ids, debug_pack, list_packs, write_debug_packs
from .canary import CanaryResult, canary
from .pack import Pack, PackConfig, PackVerifyError, load_pack
from .trial import PackDecision, PackTrialResult, try_pack

__all__ = ["Pack", "PackConfig", "PackError", "PackVerifyError", "load_pack", "list_packs", "builtin_ids",
           "debug_pack", "DEBUG_LEVELS", "write_debug_packs", "write_pack_manifest", "manifest_doc", "zip_pack",
           "canary", "CanaryResult", "try_pack", "PackTrialResult", "PackDecision"]
