"""Idle ranks sleep (issue 26): hundreds of them on a few cores must not keep the cores busy.

An idle rank's guardian is not woken at all while nothing can start a process below the rank
(it looked 4 times a second), and its I/O thread wakes for the heartbeat only (it ticked 10
times a second). Counted with the kernel's own count of the times a thread was scheduled in
(``/proc/PID/task/TID/schedstat``, third field), not with a clock. What the guardian is for
still holds: a process that a user's thread starts after its cell ended dies with the rank.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from .core_helpers import (
    proc_alive,
    shell,  # noqa: F401 (the fixture)
)

pytestmark = [
    pytest.mark.timeout(180),
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc"),
]

WHO = """\
import os, threading
pid = os.getpid()
io = next(t.native_id for t in threading.enumerate() if t.name == "jd-channel")
guardian = [int(c) for t in os.listdir("/proc/self/task")
    for c in open(f"/proc/self/task/{t}/children").read().split()]
"""

WINDOW = 3.0  # seconds of idleness whose wake-ups are counted


def runs(pid: int, tid: int | None = None) -> int:
    """How many times the thread was scheduled in so far."""
    path = f"/proc/{pid}/task/{tid or pid}/schedstat"
    return int(Path(path).read_text().split()[2])


def test_an_idle_ranks_guardian_and_io_thread_sleep(shell: Any) -> None:  # noqa: F811
    result = shell.run_cell(f"%%distributed -n 2 --pull pid,io,guardian\n{WHO}")
    assert result.error_in_exec is None, result.error_in_exec
    ns = shell.user_ns
    ranks = list(zip(ns["pid"], ns["io"], ns["guardian"], strict=True))
    assert all(len(g) == 1 for _, _, g in ranks)
    time.sleep(2.5)  # (the rank rests once it had nothing to do for a second)
    before = [(runs(g[0]), runs(p, t)) for p, t, g in ranks]
    time.sleep(WINDOW)
    after = [(runs(g[0]), runs(p, t)) for p, t, g in ranks]
    for (g0, io0), (g1, io1) in zip(before, after, strict=True):
        assert g1 - g0 <= 1, f"an idle rank's guardian woke {g1 - g0} times (it looked 4 a second)"
        # its heartbeat a second and what that wakes (4-8 times in 3 s here, quiet), and a few
        # more on a loaded machine (a thread preempted is scheduled in again: 11 seen in the
        # full suite); it ticked 10 times a second
        assert io1 - io0 < 5 * WINDOW, f"an idle rank's I/O thread woke {io1 - io0} times"
    again = shell.run_cell("%%distributed -n 2\nx = 1")  # and they wake for a cell
    assert again.error_in_exec is None, again.error_in_exec


THREADED = """\
import subprocess, threading, time
def later():
    time.sleep(1.5)  # after the cell ended: the rank is idle, a thread of the user's is not
    p = subprocess.Popen(["sleep", "300"], start_new_session=True)
    open({out!r} + str(rank), "w").write(str(p.pid))
    time.sleep(300)
threading.Thread(target=later, daemon=True).start()
import os
pid = os.getpid()
"""


def test_a_process_a_users_thread_starts_while_idle_dies_with_the_rank(
    shell: Any,  # noqa: F811
    tmp_path: Path,
) -> None:
    """The guardian goes on looking while a thread of the user's is alive, so a ``setsid``
    child that thread starts after its cell ended is killed when the rank is SIGKILLed."""
    out = str(tmp_path / "sleeper-")
    result = shell.run_cell(f"%%distributed -n 1 --pull pid\n{THREADED.format(out=out)}")
    assert result.error_in_exec is None, result.error_in_exec
    marker = tmp_path / "sleeper-0"
    deadline = time.monotonic() + 30
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    sleeper = int(marker.read_text())
    try:
        time.sleep(1.0)  # the guardian's next look (every 0.25 s) sees the sleeper
        os.kill(shell.user_ns["pid"][0], signal.SIGKILL)
        deadline = time.monotonic() + 20
        while proc_alive(sleeper) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not proc_alive(sleeper), "a setsid child of a user's thread outlived its rank"
    finally:
        if proc_alive(sleeper):
            os.kill(sleeper, signal.SIGKILL)


PDB = """\
import sys
before = "pdb" in sys.modules
import pdb
redirected = pdb.set_trace.__module__
"""


def test_a_rank_imports_pdb_only_when_its_code_does(shell: Any) -> None:  # noqa: F811
    """Less to build at a rank's start and to free at its exit; ``pdb.set_trace`` is still the
    notebook's once a cell imports ``pdb``."""
    result = shell.run_cell(f"%%distributed -n 1 --pull before,redirected\n{PDB}")
    assert result.error_in_exec is None, result.error_in_exec
    assert shell.user_ns["before"] == [False], "an idle rank imported pdb"
    assert shell.user_ns["redirected"] == ["jupyter_distributed.worker.debugger"]
