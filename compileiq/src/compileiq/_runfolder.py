"""The per-run folder under the cache folder: the run log and, with CIQ_KEEP_CACHE=1, every failure.

Layout (documented in docs/search.md):
    <cache>/<YYYY-MM-DD-HH_MM_SS>-<uuid4>/
        run.log                      every failure with its full traceback or reason
        failures/<param_id>/         one folder per failing candidate (CIQ_KEEP_CACHE=1 only)
            params.json              the candidate as the objective received it
            error.txt                the traceback, or the timeout / crash / format reason
            controls.bin             the compiler configuration, when the candidate is one (hex)
            controls_<i>.bin         ... of entry i of a mixed (list) candidate
The folder is removed at the end of the run unless CIQ_KEEP_CACHE=1.
"""

from __future__ import annotations

import datetime as _dt
import json
import logging
import re
import shutil
import uuid
from typing import Any

from . import _env

_HEX = re.compile(r"^(?:[0-9a-fA-F]{2})+$")


class RunFolder:
    def __init__(self, cache_folder=None):
        self.keep = _env.keep_cache()  # first: a bad CIQ_KEEP_CACHE must not leave an empty folder behind
        self.root = _env.cache_root(cache_folder)
        stamp = _dt.datetime.now().strftime("%Y-%m-%d-%H_%M_%S")
        self.path = self.root / f"{stamp}-{uuid.uuid4()}"
        try:
            self.path.mkdir(parents=True, exist_ok=False)
        except OSError as exc:
            raise OSError(f"cannot create the run folder {self.path} ({exc.strerror}); pass cache_folder= "
                          "a writable folder, or fix the permissions of the cache folder") from None
        self.log_path = self.path / "run.log"
        self.log = logging.Logger(f"compileiq.run.{self.path.name}")  # not registered: no leak per run
        self.log.propagate = False
        self.log.setLevel(logging.INFO)
        self._handler = logging.FileHandler(self.log_path, encoding="utf-8")
        self._handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
        self.log.addHandler(self._handler)

    def record_failure(self, param_id: Any, params: Any, error: str) -> None:
        if not self.keep:
            return
        d = self.path / "failures" / str(param_id)
        d.mkdir(parents=True, exist_ok=True)
        (d / "params.json").write_text(json.dumps(params, indent=2, default=str) + "\n")
        (d / "error.txt").write_text(error if error.endswith("\n") else error + "\n")
        blobs = [params] if isinstance(params, str) else [p for p in params] if isinstance(params, list) else []
        hexes = [(i, b) for i, b in enumerate(blobs) if isinstance(b, str) and _HEX.match(b)]
        for i, b in hexes:
            name = "controls.bin" if isinstance(params, str) else f"controls_{i}.bin"  # list: by position
            (d / name).write_bytes(bytes.fromhex(b))

    def close(self) -> None:
        self.log.removeHandler(self._handler)
        self._handler.close()
        if not self.keep:
            shutil.rmtree(self.path, ignore_errors=True)
