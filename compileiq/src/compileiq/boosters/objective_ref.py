"""``--module mymod:objective`` on the command line: find the user's objective without a traceback.

The part before the colon is an importable module (``pkg.mod``) or a ``.py`` file; the part after
it names a callable in it (default ``objective``). The current folder is importable, as it is for
``python -m``.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from pathlib import Path
from typing import Callable


class ObjectiveRefError(ValueError):
    """The --module reference names no importable callable."""


def load_objective(ref: str) -> Callable:
    mod_name, _, attr = ref.rpartition(":") if ":" in ref else (ref, "", "objective")
    attr = attr or "objective"
    if not mod_name:
        raise ObjectiveRefError(f"--module {ref!r}: give MODULE:FUNCTION, e.g. --module mybench:objective")
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        if mod_name.endswith(".py") or os.sep in mod_name:
            path = Path(mod_name)
            if not path.is_file():
                raise ObjectiveRefError(f"--module {ref!r}: {path} does not exist")
            spec = importlib.util.spec_from_file_location(path.stem, path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[path.stem] = module  # so the objective pickles by reference, as in a search
            spec.loader.exec_module(module)
        else:
            module = importlib.import_module(mod_name)
    except ObjectiveRefError:
        raise
    except ModuleNotFoundError as exc:
        raise ObjectiveRefError(f"--module {ref!r}: cannot import {exc.name!r}; run from the folder that holds "
                                f"{mod_name.split('.')[0]}.py or install it (pip install -e .)") from None
    except Exception as exc:  # the module's own import-time error: show it in one line, not a traceback
        raise ObjectiveRefError(f"--module {ref!r}: importing {mod_name} raised {type(exc).__name__}: {exc}") from None
    fn = getattr(module, attr, None)
    if fn is None:
        have = ", ".join(n for n in dir(module) if not n.startswith("_") and callable(getattr(module, n)))
        raise ObjectiveRefError(f"--module {ref!r}: {mod_name} has no {attr!r} (callables there: {have or 'none'})")
    if not callable(fn):
        raise ObjectiveRefError(f"--module {ref!r}: {mod_name}.{attr} is not callable (it is a {type(fn).__name__!r} value)")
    return fn


__all__ = ["load_objective", "ObjectiveRefError"]
