"""Is a process alive? (standard library only: the worker uses it too.)"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Generic, Protocol, TypeVar

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
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return True  # no /proc: kill(0) said it exists


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


class EndWatch(Generic[K]):
    """Which of a fixed set of processes ended: one ``poll()`` of their pidfds (Linux ≥ 5.3)
    per look, and a ``waitpid`` only for those whose pidfd says so, instead of one per
    process (89 relays and aggregators at 10,000 ranks: ~60 µs against ~5 µs per look). A
    process without a pidfd is asked each look, as :func:`newly_ended` does."""

    def __init__(self, procs: Mapping[K, Polled]) -> None:
        self._procs = dict(procs)
        self._fds: dict[int, K] = {}
        self._asked: list[K] = []  # (no pidfd: asked each look)
        self._poll = select.poll() if hasattr(select, "poll") else None
        for key, proc in self._procs.items():
            fd = -1
            with contextlib.suppress(AttributeError, OSError):
                fd = os.pidfd_open(proc.pid)
            if fd < 0 or self._poll is None:
                self._asked.append(key)
                continue
            self._fds[fd] = key
            self._poll.register(fd, select.POLLIN)

    def ended(self, reported: set[K]) -> list[tuple[K, int]]:
        """(key, return code) of the processes that ended and are not in ``reported`` yet
        (added to it); an ended process's pidfd is closed once it is reported."""
        keys = list(self._asked)
        ready = [fd for fd, _ in self._poll.poll(0)] if self._poll is not None else []
        keys += [self._fds[fd] for fd in ready]
        out = newly_ended({k: self._procs[k] for k in keys}, reported)
        for fd in ready:
            if self._fds[fd] in reported:
                self._drop(fd)
        return out

    def close(self) -> None:
        for fd in list(self._fds):
            self._drop(fd)

    def _drop(self, fd: int) -> None:
        if self._poll is not None:
            self._poll.unregister(fd)
        del self._fds[fd]
        os.close(fd)
