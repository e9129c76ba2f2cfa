"""Gloo ranks for a test, as plain processes: :func:`run` starts ``ranks`` interpreters, each
calling ``rank_fn(rank, port, out)`` of the test's module; a rank hands back its findings with
:func:`found`.

Plain processes, not ``torch.multiprocessing``: its resource tracker outlives the test as a
child of pytest, and every later check that a test left no process behind then fails. The ranks
are ended whatever happens, and each leaves with ``os._exit`` as a rank of ours does
(``worker/leave.py``): no interpreter teardown of gloo's and the profiler's threads, which
aborted one ("terminate called without an active exception")."""

from __future__ import annotations

import importlib
import json
import os
import socket
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

RANK = (
    "import importlib, sys; sys.path.insert(0, sys.argv[5]); "
    "getattr(importlib.import_module(sys.argv[4]), sys.argv[6])"
    "(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3])"
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run(
    rank_fn: Callable[[int, int, str], None], ranks: int = 2, timeout: float = 200
) -> list[Any]:
    """Each rank's findings, in rank order; a rank that failed fails the caller with its
    stderr's end."""
    module = rank_fn.__module__
    base = Path(importlib.import_module(module).__file__ or "").parents[module.count(".")]
    port = str(free_port())
    with tempfile.TemporaryDirectory() as out:
        procs = [
            subprocess.Popen(
                [
                    sys.executable,
                    "-c",
                    RANK,
                    str(r),
                    port,
                    out,
                    module,
                    str(base),
                    rank_fn.__name__,
                ],
                stderr=subprocess.PIPE,
                text=True,
            )
            for r in range(ranks)
        ]
        try:
            errors = [p.communicate(timeout=timeout)[1] for p in procs]
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait()
        for r, (p, err) in enumerate(zip(procs, errors, strict=True)):
            assert p.returncode == 0, f"rank {r} exited {p.returncode}:\n{err[-3000:]}"
        return [json.loads(Path(out, f"{r}.json").read_text()) for r in range(ranks)]


def found(out: str, rank: int, value: Any) -> NoReturn:
    """Hand ``value`` back and leave at once."""
    Path(out, f"{rank}.json").write_text(json.dumps(value))
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
