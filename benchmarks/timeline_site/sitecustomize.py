"""Marks for ``benchmarks/cell_timeline.py`` inside each rank (this directory is put first on
the ranks' ``PYTHONPATH`` by that script only): when a rank's main thread has a cell, runs it
and sends its end. Each mark is ``name monotonic_ns`` in a file per rank."""

import functools
import importlib
import os
import time
from pathlib import Path

_DIR = os.environ.get("JD_TIMELINE_DIR")
if _DIR and "JUPYTER_DISTRIBUTED_BOOTSTRAP" in os.environ:
    _out = (Path(_DIR) / f"rank-{os.getpid()}.txt").open("a", buffering=1)

    def _wrap(module: str, cls: str, attr: str, name: str, point: bool = False) -> None:
        """Mark the start and end of each call (``point``: only when it returns, as
        ``name!``)."""
        owner = getattr(importlib.import_module(module), cls)
        fn = getattr(owner, attr)

        @functools.wraps(fn)
        def marked(*args, **kwargs):  # type: ignore[no-untyped-def]
            if not point:
                _out.write(f"{name}> {time.perf_counter_ns()}\n")
            try:
                return fn(*args, **kwargs)
            finally:
                _out.write(f"{name}{'!' if point else '<'} {time.perf_counter_ns()}\n")

        setattr(owner, attr, marked)

    cellsocket = "jupyter_distributed.worker.cellsocket"
    runtime = "jupyter_distributed.worker.runtime"
    _wrap(cellsocket, "CellSocket", "recv", "rank: the cell arrives", point=True)
    _wrap(runtime, "Runtime", "execute", "rank: run the cell")
    _wrap(cellsocket, "CellSocket", "send", "rank: send its end")
