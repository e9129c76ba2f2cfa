"""Is a process alive? (standard library only: the worker uses it too.)"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Iterable, Mapping
from typing import Protocol, TypeVar

K = TypeVar("K")


def pid_alive(pid: int | None) -> bool:
    """Whether process ``pid`` exists on this host (a zombie counts as gone)."""
    if not pid or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    fields = stat_fields(pid)
    return fields is None or fields[:1] != [b"Z"]  # (no /proc: kill(0) said it exists)


def proc_end(pid: int) -> tuple[bool, int | None]:
    """Whether ``pid`` has exited, and its wait status while it is a zombie not yet reaped by
    its parent (``/proc/PID/stat``'s last field), None once it is gone."""
    fields = stat_fields(pid)
    if not fields or fields[0] == b"X":
        return True, None
    if fields[0] != b"Z":
        return False, None
    return True, int(fields[49]) if len(fields) > 49 else 0


def stat_fields(pid: int) -> list[bytes] | None:
    """``/proc/PID/stat``'s fields after the command name (its state first), None where it
    cannot be read. Plain ``os`` calls (a quarter of ``open()``'s CPU): asked of every rank at
    each look, and of the kernel at each rank's heartbeat."""
    try:
        fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY)
    except OSError:
        return None
    try:
        return os.read(fd, 2048).rpartition(b")")[2].split()
    except OSError:
        return None
    finally:
        os.close(fd)


def die_with_parent() -> None:
    """Linux: the kernel asks for SIGKILL if our parent dies (no orphan after a crash)."""
    if sys.platform.startswith("linux"):
        import ctypes

        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


class Polled(Protocol):
    pid: int

    def poll(self) -> int | None: ...


def newly_ended(procs: Mapping[K, Polled], reported: set[K]) -> list[tuple[K, int]]:
    """(key, return code) of the processes in ``procs`` that ended and are not in ``reported``
    yet (added to it)."""
    out: list[tuple[K, int]] = []
    for key, proc in procs.items():
        code = proc.poll()
        if code is not None and key not in reported:
            reported.add(key)
            out.append((key, code))
    return out


def pidfds(pids: Iterable[int]) -> list[int]:
    """A pidfd per process (Linux ≥ 5.3), readable once it ends; none where there are none."""
    fds: list[int] = []
    for pid in pids:
        with contextlib.suppress(AttributeError, OSError):  # not Linux ≥ 5.3, or reaped
            fds.append(os.pidfd_open(pid))
    return fds
