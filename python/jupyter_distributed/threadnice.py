"""Our threads yield to the user's: a lower scheduling weight (a higher nice value) per thread.

A rank's capture readers, its I/O thread and its ZeroMQ threads, and the kernel's I/O thread
while a cell runs, wake for a few tens of µs at a time. In a training loop whose ranks keep
every core busy, such a thread woken onto a rank's core delays that rank's step, and ranks in
lockstep wait for the slowest at the next collective. At a higher nice value (Linux: per
thread) the scheduler runs it where a core is idle (a rank waiting in its all_reduce) and
preempts a rank's main thread for it less: it still runs within a few ms on a busy core (at
nice 10 it is given ~10 % of a core both want), and alone on a core it runs at full speed.

``JD_THREAD_NICE`` sets the value; unset or 0 (the default) leaves every thread as it is: on a
shared 2-vCPU machine nice 10 showed no gain (the ranks' main threads were preempted as often,
~4.5 times a step, nearly all by gloo's threads) and hints of a cost (print → notebook p99 at
8 ranks, a 2-rank flood), so it stays an experiment for a quiet machine's A/B (RESULTS.md,
h12-trainprio). A thread cannot
lower its nice value again without ``CAP_SYS_NICE`` or an ``RLIMIT_NICE`` that allows it:
:func:`may_restore` says whether it can, so that a value is only taken back where it can be.
"""

from __future__ import annotations

import contextlib
import os
import resource
from pathlib import Path

NICE_ENV = "JD_THREAD_NICE"
DEFAULT = 0  # (the value an A/B tries: TRIED)
TRIED = 10
_CAP_SYS_NICE = 23


def level() -> int:
    """The nice value our threads take (0: none is changed), from ``JD_THREAD_NICE``."""
    try:
        value = int(os.environ.get(NICE_ENV, DEFAULT))
    except ValueError:
        value = DEFAULT
    return max(0, min(19, value))


def get(tid: int = 0) -> int:
    """The nice value of thread ``tid`` of this process (0: the calling thread)."""
    return os.getpriority(os.PRIO_PROCESS, tid)


def lower(tid: int = 0, nice: int | None = None) -> bool:
    """Raise thread ``tid``'s nice value (0: the calling thread) to ``nice`` (default:
    :func:`level`) where it is lower; whether the thread is at that value or above now."""
    value = level() if nice is None else nice
    if value <= 0:
        return False
    try:
        if get(tid) < value:
            os.setpriority(os.PRIO_PROCESS, tid, value)
    except OSError:  # (a thread that ended, a system without per-thread nice)
        return False
    return True


def restore(tid: int = 0, nice: int = 0) -> bool:
    """Set thread ``tid``'s nice value back to ``nice``; whether it could."""
    try:
        os.setpriority(os.PRIO_PROCESS, tid, nice)
    except OSError:
        return False
    return True


def may_restore(nice: int = 0) -> bool:
    """Whether a thread of this process may lower its nice value back to ``nice``:
    ``CAP_SYS_NICE``, or ``RLIMIT_NICE`` of at least ``20 - nice``."""
    with contextlib.suppress(OSError, ValueError):
        soft, _ = resource.getrlimit(resource.RLIMIT_NICE)
        if soft == resource.RLIM_INFINITY or soft >= 20 - nice:
            return True
    try:
        for line in Path("/proc/self/status").read_text(encoding="ascii").splitlines():
            if line.startswith("CapEff:"):
                return bool(int(line.split()[1], 16) >> _CAP_SYS_NICE & 1)
    except (OSError, ValueError):
        pass
    return False


def threads() -> list[int]:
    """The thread ids of this process (e.g. before and after a ZeroMQ context starts its
    threads, which name themselves only once they run)."""
    try:
        return [int(task.name) for task in Path("/proc/self/task").iterdir()]
    except OSError:
        return []
