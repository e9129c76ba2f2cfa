"""A rank's process group dies with the rank (POSIX; standard library only).

A rank dies with whoever started it (``PR_SET_PDEATHSIG``: the kernel for ``local`` ranks, Open
MPI's daemon for ``mpi`` ones) or when the kernel on its host is gone; such a death is a SIGKILL,
which a process cannot catch, so the rank cannot clean up what its code started. So, before any
thread exists, the rank makes itself a process-group leader and forks a guardian into that group,
as early as it can (before the rank's imports, where the rank is started as ``python -m
jupyter_distributed.worker``: the guardian is then a small copy of a fresh interpreter, not of
everything the rank imported, so the rank does not copy each page it writes after the fork, and the
guardian's exit frees little). The guardian only waits (it ignores SIGINT, SIGTERM and SIGHUP,
which belong to the rank), and once the rank is gone (its pipe closes, or the guardian is re-
parented) it SIGKILLs the whole group: every process the rank's code started that stayed in the
group (``subprocess`` and ``multiprocessing`` children do), then itself. Nothing is orphaned to PID
1 when the kernel is SIGKILLed. A child that starts its own session (``setsid``) leaves the group;
the guardian remembers those from its looks at the rank's tree (the rank is a child subreaper, so
what its descendants orphan stays in that tree) and kills them too (:mod:`.lineage`, Linux). A look
can come too late for a child started just before the rank ends, so at its normal end (after the
user's ``atexit`` work) the rank kills its own tree itself, then its guardian
(:func:`end_descendants`).
"""

from __future__ import annotations

import contextlib
import os
import signal

from .descriptors import readable
from .lineage import descendants, kill_all, subreaper

POLL = 0.25  # seconds between the guardian's looks at its parent


_made: list[int | None] = []  # the guardian this process forked (once)


def guard_group() -> int | None:
    """Fork the guardian (once: a second call gives the first one's answer); its pid, or None
    where there is no fork or no group of our own."""
    if _made:
        return _made[0]
    _made.append(_fork_guardian())
    return _made[0]


def _fork_guardian() -> int | None:
    if not hasattr(os, "fork"):
        return None
    rank = os.getpid()
    if os.getpgrp() != rank:
        with contextlib.suppress(OSError):
            os.setpgid(0, 0)
    if os.getpgrp() != rank:  # killing a group we do not lead could hit the launcher
        return None
    subreaper()
    r, w = os.pipe()  # not inherited across exec; the rank holds w until it dies
    pid = os.fork()
    if pid:
        os.close(r)
        return pid
    try:  # the guardian: no Python cleanup of the rank's state ever runs here
        os.close(w)
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        kill_all(_watch(rank, r))
        os.killpg(rank, signal.SIGKILL)
    finally:
        os._exit(0)


def end_descendants(guardian: int | None) -> None:
    """At the rank's normal end, while it is still the root of its tree: kill what is below it,
    wherever its sessions went (registered first with ``atexit``, so it runs after the user's
    own ``atexit`` work), then the guardian, which has nothing left to do: it is not woken to
    look at a tree that is already gone (hundreds of ranks stopping at once on a few cores
    each paid that look and the group's kill on top of their own exit)."""
    kill_all(descendants([os.getpid()], skip=guardian or 0))
    if guardian:
        with contextlib.suppress(OSError):
            os.kill(guardian, signal.SIGKILL)


def _watch(rank: int, pipe: int) -> dict[int, bytes]:
    """Wait for the rank to be gone; what was below it at the last look (pid → start time)."""
    known: dict[int, bytes] = {}
    me = os.getpid()
    while True:
        seen = descendants([rank], skip=me)
        if os.getppid() != rank:  # the rank died during this look: its tree may be torn
            return {**known, **seen}
        known = seen
        if readable([pipe], POLL) and not os.read(pipe, 1):
            return known
