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

The guardian looks only while something may change below the rank: while the rank runs cells
(it writes ``b`` to the pipe as a cell starts after a rest, and ``i`` once it rests: no cell
for a second, see :func:`note_busy`, :func:`note_idle`), while a thread the rank's code started
is alive, and while the rank's tree holds a process. An idle rank with nothing below it, as
hundreds of idle ranks are, has a guardian asleep in ``poll`` on the pipe and the rank's pidfd:
never woken until the rank ends or runs a cell (it looked 4 times a second: 1.4 ms of CPU a
second per rank). Cells that follow each other closely write nothing to the pipe.

The guardian also holds the read ends of the two pipes the rank's output capture reads
(:func:`capture_pipes`, made before its fork). What the rank wrote just before it died and its
capture threads had not read yet (a print, then ``os._exit``, an ``abort()`` or a SIGKILL) is
still in those pipes once the rank is gone: the guardian writes it to the file the rank named
(:func:`leave_leftovers`, in the cluster's 0700 directory) before it kills the group, and the
kernel shows it as the rank's last output (``cluster/leftovers.py``). At a normal end the rank
kills its guardian first, which so writes nothing.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path

from .descriptors import readable
from .lineage import descendants, kill_all, subreaper

POLL = 0.25  # seconds between the guardian's looks at its parent
LEFT_MOST = 1 << 18  # bytes at most taken from each pipe after the rank's death (a pipe: 64 KiB)


_made: list[int | None] = []  # the guardian this process forked (once)
_pipe: list[int] = []  # the rank's end of the pipe to its guardian
_told = ["b"]  # what the rank last told its guardian: b(usy) or i(dle)
_busy_at = [0.0]  # when the rank last started a cell (monotonic)
_lock = threading.Lock()  # the main thread tells b, the I/O thread i: in the order they decide
_ours: set[int] = set()  # the rank's own threads (its I/O, its capture): not the user's
_capture: list[tuple[int, int]] = []  # the capture's pipes (read, write) the guardian reads too


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
    pipes = [os.pipe(), os.pipe()]  # (stdout's and stderr's capture: see capture_pipes)
    pid = os.fork()
    if pid:
        os.close(r)
        _pipe.append(w)
        _capture.extend(pipes)
        return pid
    try:  # the guardian: no Python cleanup of the rank's state ever runs here
        os.close(w)
        for _, end in pipes:
            os.close(end)
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        known, path = _watch(rank, r)
        if path:
            _leave([end for end, _ in pipes], path)
        kill_all(known)
        os.killpg(rank, signal.SIGKILL)
    finally:
        os._exit(0)


def capture_pipes() -> list[tuple[int, int]]:
    """(Once, by the output capture.) Two pipes, stdout's and stderr's, as ``(read, write)``:
    those the guardian reads too once the rank is gone, or new ones where there is none."""
    if _capture:
        pipes = list(_capture)
        _capture.clear()
        return pipes
    return [os.pipe(), os.pipe()]


def leave_leftovers(path: str) -> None:
    """(The rank, set up.) Where its guardian writes what the rank's capture had not read
    when the rank died: ``<stdout bytes> <stderr bytes>\n``, then both (see ``left_file``).
    The guardian's pid goes to ``path.guard`` at once: the kernel waits for ``path`` while
    that process lives."""
    if not path or "\n" in path or not _made or not _made[0] or not _pipe:
        return
    _tell_now(b"f" + path.encode() + b"\n")
    with contextlib.suppress(OSError):
        Path(path + ".guard").write_text(str(_made[0]))


def _leave(reads: list[int], path: bytes) -> None:
    """(The guardian, the rank gone.) What is left in the capture's pipes, to ``path``."""
    got: list[bytes] = []
    for fd in reads:
        data = b""
        with contextlib.suppress(OSError):  # (BlockingIOError: nothing left)
            os.set_blocking(fd, False)
            while len(data) < LEFT_MOST:
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    break
                data += chunk
        got.append(data)
    part = path + b".part"
    with contextlib.suppress(OSError):
        fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        try:
            os.write(fd, b"%d %d\n" % (len(got[0]), len(got[1])) + b"".join(got))
        finally:
            os.close(fd)
        os.rename(part, path)  # noqa: PTH104 (a bytes path) (whole or not at all: the kernel waits for this name)


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


def settled() -> None:
    """(The rank, once set up, before its first wait for a cell.) Its threads now are its own:
    any other alive at the end of a cell is the user's, and may start a process later."""
    _ours.update(t.ident or 0 for t in threading.enumerate())


def note_busy() -> None:
    """(The rank's main thread, as a cell starts.) The guardian looks at the tree again, every
    ``POLL`` (nothing is written where it already does)."""
    with _lock:
        _busy_at[0] = time.monotonic()
        _tell("b")


def note_idle(quiet: float, in_cell: Callable[[], bool]) -> None:
    """(The rank's I/O thread, resting.) Where no cell started for ``quiet`` seconds, none runs
    and no thread of the user's is alive, the guardian may sleep once it has seen nothing below
    the rank."""
    with _lock:
        if time.monotonic() - _busy_at[0] < quiet or in_cell():
            return
        if all(t.ident in _ours for t in threading.enumerate()):
            _tell("i")


def _tell(what: str) -> None:
    if _told[0] == what or not _pipe:
        return
    _told[0] = what
    _tell_now(what.encode() + b"\n")


def _tell_now(message: bytes) -> None:
    """One line to the guardian (written whole: under ``PIPE_BUF``)."""
    if _pipe:
        with contextlib.suppress(OSError):
            os.write(_pipe[0], message)


def _pidfd(pid: int) -> list[int]:
    """A descriptor readable once ``pid`` ends (Linux 5.3+), or none."""
    with contextlib.suppress(OSError, AttributeError):
        return [os.pidfd_open(pid)]
    return []


def last_pid() -> bytes | None:
    """The pid most recently given out in this pid namespace (``/proc/loadavg``'s last field:
    threads count too), or None where it cannot be read. Every new process takes a pid, so
    while it stays the same nothing new can be below the rank: a look needs no walk of the
    rank's tree (~0.4 ms a look on a 2-core guest, 4 looks a second while a cell runs)."""
    try:
        fd = os.open("/proc/loadavg", os.O_RDONLY)
        try:
            return os.read(fd, 128).split()[-1]
        finally:
            os.close(fd)
    except (OSError, IndexError):
        return None


def _watch(rank: int, pipe: int) -> tuple[dict[int, bytes], bytes]:
    """Wait for the rank to be gone; what was below it at the last look (pid → start time),
    and where to leave what its capture had not read (:func:`leave_leftovers`). Looks every
    ``POLL`` while the rank is busy or has something below it, else only waits."""
    known: dict[int, bytes] = {}
    me = os.getpid()
    ended = _pidfd(rank)  # (the pipe alone: a child forked by the rank may hold its end)
    busy = True
    due: float | None = 0.0  # the next look (set-up may start processes: at once)
    path = rest = b""
    walked: bytes | None = None  # the system's last pid as the last walk of the tree began
    seen: dict[int, bytes] = {}
    while True:
        wait = None if due is None else max(0.0, due - time.monotonic())
        ready = readable([pipe, *ended], wait)
        if pipe in ready:  # (first: what the rank said before it ended)
            read = os.read(pipe, 4096)
            if not read:
                return known, path
            *lines, rest = (rest + read).split(b"\n")
            for line in lines:  # b(usy), i(dle), f<path>
                if line.startswith(b"f"):
                    path = line[1:]
                elif line:
                    busy = line == b"b"
            if due is None:  # (what the rank starts now is seen within POLL)
                due = time.monotonic() + POLL
            continue
        if ended and ended[0] in ready:
            return known, path
        latest = last_pid()  # (the same: nothing is new below the rank since the last walk)
        if latest is None or latest != walked or (seen and not busy):  # (resting: gone yet?)
            walked, seen = latest, descendants([rank], skip=me)
        if os.getppid() != rank:  # the rank died during this look: its tree may be torn
            return {**known, **seen}, path
        known = seen  # (without a pidfd, the rank's end is seen by the next look's parent)
        due = time.monotonic() + POLL if busy or seen or not ended else None
