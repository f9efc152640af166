"""Workers: how candidates reach the objective (NVIDIA-compatible names).

* ``MultiProcessWorker`` (default): long-lived processes started with CIQ_PROCESS_MODE that
  connect back over a loopback socket; task_timeout kills one evaluation; crashes are replaced.
* ``IsoMultiProcessWorker``: a fresh process per candidate.
* ``AsyncWorker``: an ``async def`` objective, run concurrently in the parent.
* ``RayWorker``: Ray tasks, locally or across a cluster.
* ``SequentialWorker``: in the parent, one after the other (debugging, custom-worker template).
* ``ManualWorker``: no managed execution; the caller drives ``Search.ask`` / ``Search.tell``.
"""

from .async_worker import AsyncWorker
from .base import BaseWorker, Worker, evaluate_call, failed_score
from .isolated import IsoMultiProcessWorker
from .manual import ManualWorker
from .multiprocess import MultiProcessWorker
from .ray_worker import RayWorker
from .sequential import SequentialWorker

__all__ = ["Worker", "BaseWorker", "MultiProcessWorker", "IsoMultiProcessWorker", "AsyncWorker", "RayWorker",
           "SequentialWorker", "ManualWorker", "evaluate_call", "failed_score"]
