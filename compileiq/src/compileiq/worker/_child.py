"""The loop a MultiProcessWorker process runs: connect back, beat, evaluate what the parent sends.

First a raw HELLO (token, launch id, pid), then pickled frames. From the parent: ("fn", fn_id,
cloudpickle bytes), ("task", task_id, params, param_id, num_objectives, is_baseline), ("stop",).
To the parent: ("hb",), ("start", task_id) once the objective is loaded, ("result", task_id,
pickled Score).
"""

from __future__ import annotations

import os
import socket
import sys
import threading
import time
import traceback

import cloudpickle

from ._common import dump_score, own_process_group
from ._transport import HELLO, Channel, tune
from .base import evaluate_call, failed_score


def _beat(chan: Channel, interval: float) -> None:
    # runs beside the objective so that a long evaluation is told apart from a stuck process
    while True:
        time.sleep(interval)
        try:
            chan.send(("hb",))
        except OSError:
            os._exit(0)  # the parent is gone: nobody wants this evaluation any more


def _flush() -> None:
    # stdout is block-buffered when redirected; a later SIGKILL would lose the objective's prints
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass


def main(host: str, port: int, token: bytes, launch_id: int, index: int, hb_interval: float) -> None:
    own_process_group()
    sock = socket.create_connection((host, port))
    tune(sock)
    chan = Channel(sock)
    sock.sendall(HELLO.pack(token, launch_id, os.getpid()))
    threading.Thread(target=_beat, args=(chan, hb_interval), name="compileiq-heartbeat", daemon=True).start()

    function, load_error = None, None
    meta = {"worker": index}
    while True:
        try:
            msg = chan.recv()
        except (EOFError, OSError):
            return
        kind = msg[0]
        if kind == "stop":
            _flush()
            return
        if kind == "fn":
            try:
                function, load_error = cloudpickle.loads(msg[2]), None
            except BaseException as exc:  # noqa: BLE001 - e.g. a module the objective needs is missing here
                function, load_error = None, (
                    "the objective could not be loaded in the worker process (pid "
                    f"{os.getpid()}): {''.join(traceback.format_exception(exc))}"
                    "every module the objective uses must be importable in the worker: install it in this "
                    "environment or define the objective at module level in an importable file")
        elif kind == "task":
            _, task_id, params, param_id, k, is_baseline = msg
            if function is None:
                score = failed_score(param_id, params, k, "exception", load_error or "no objective received",
                                     metadata={"pid": os.getpid(), **meta}, is_baseline=is_baseline)
            else:
                try:
                    chan.send(("start", task_id))
                except OSError:
                    return
                score = evaluate_call(function, params, param_id, k, metadata=meta, is_baseline=is_baseline)
            _flush()
            try:
                chan.send(("result", task_id, dump_score(score)))
            except OSError:
                return
