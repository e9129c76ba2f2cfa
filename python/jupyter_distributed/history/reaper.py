"""What a dead kernel leaves behind: runs still ``running``, push files, cluster directories.

A kernel killed by SIGKILL or the OOM killer cannot finish its runs or clean up. The next store
open on the host (a new kernel, the server) and the server's periodic scan do it instead: runs of
this host whose ``kernel_pid`` is no longer alive end ``failed`` with "kernel died", and files
named after a dead kernel's pid (``jupyter-distributed-k<pid>-...`` in ``/dev/shm`` and the temp
directory) are removed. SageMaker runs are left alone: their job lives on and the server follows it.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import sqlite3
import tempfile
import time
from pathlib import Path

from ..events import RunEvent, RunState
from ..pids import pid_alive
from . import eventrows

#: Prefix of every file or directory a kernel creates for a cluster; ``{pid}`` is the kernel's.
LEFTOVER_PREFIX = "jupyter-distributed-k"
_LEFTOVER = re.compile(re.escape(LEFTOVER_PREFIX) + r"(\d+)-")

#: Backends whose ranks live and die with the kernel (an external job outlives it).
_EXTERNAL = ("sagemaker",)


def leftover_prefix(pid: int | None = None) -> str:
    """The name prefix for this kernel's cluster files (``mkdtemp(prefix=...)``)."""
    return f"{LEFTOVER_PREFIX}{os.getpid() if pid is None else pid}-"


def kernel_died_message(pid: int) -> str:
    return (
        f"kernel died: its process {pid} on this host is gone (killed or out of memory); "
        "outputs up to then are kept"
    )


def mark_dead_kernels(db: sqlite3.Connection, host: str) -> list[str]:
    """End this host's unfinished runs whose kernel is gone; returns their ids. ``db`` must be
    inside a write transaction."""
    rows = db.execute(
        "SELECT id, kernel_pid, backend FROM runs WHERE state IN (?, ?) AND host=?",
        (RunState.PENDING.value, RunState.RUNNING.value, host),
    ).fetchall()
    now = time.time()
    dead: list[str] = []
    for run_id, pid, backend in rows:
        if backend in _EXTERNAL or not pid or pid_alive(int(pid)):
            continue
        message = kernel_died_message(int(pid))
        event = RunEvent(run_id, now, RunState.FAILED, message)
        eventrows.append(db, [eventrows.item(event)])
        db.execute(
            "UPDATE runs SET state=?, ended=?, message=? WHERE id=?",
            (RunState.FAILED.value, now, message, run_id),
        )
        db.execute(
            "UPDATE ranks SET state='failed', updated=? WHERE run_id=?"
            " AND state IN ('starting', 'running')",
            (now, run_id),
        )
        dead.append(str(run_id))
    return dead


def sweep_leftovers(directories: list[Path] | None = None) -> list[Path]:
    """Remove this user's push files and cluster directories of dead kernels; returns them."""
    if directories is None:
        directories = [Path(tempfile.gettempdir())]
        shm = Path("/dev/shm")  # noqa: S108 - where push files live (worker.shared)
        if shm.is_dir():
            directories.insert(0, shm)
    uid = os.getuid()
    removed: list[Path] = []
    for directory in directories:
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for entry in entries:
            match = _LEFTOVER.match(entry.name)
            if not match or pid_alive(int(match.group(1))):
                continue
            with contextlib.suppress(OSError):
                if entry.stat(follow_symlinks=False).st_uid != uid:
                    continue
                if entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.path)
                else:
                    Path(entry.path).unlink()
                removed.append(Path(entry.path))
    return removed
