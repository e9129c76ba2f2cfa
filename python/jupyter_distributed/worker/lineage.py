"""The processes below a rank, wherever their sessions went (Linux ``/proc``; standard library).

A child that starts its own session (``setsid``, ``Popen(start_new_session=True)``) leaves the
rank's process group, so killing the group misses it; once the rank is dead its children belong
to init and cannot be found from it any more. So the rank is a child subreaper
(:func:`subreaper`: what its descendants orphan comes back to it, not to init), and its guardian
(:mod:`.guard`) looks at the rank's tree every few hundred milliseconds, remembering each
descendant with its start time; when the rank is gone it stops what it remembered and what
those started since, then kills them, checking each start time so that a reused pid is never
hit. Elsewhere (no ``/proc``) nothing is found and only the group is killed.

A descendant the rank adopted stays a zombie in the rank once it exits, until the rank ends.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from pathlib import Path

PR_SET_CHILD_SUBREAPER = 36


def subreaper() -> None:
    """Make this process a child subreaper (Linux; elsewhere nothing)."""
    if sys.platform.startswith("linux"):
        import ctypes

        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def _started(pid: int) -> bytes | None:
    """``pid``'s start time (``/proc/PID/stat`` field 22), or None once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return fields[19] if len(fields) > 19 and fields[0] not in (b"Z", b"X") else None


def _children(pid: int) -> list[int]:
    """(Plain ``os`` calls, not ``pathlib``: half the CPU, in the rank's last look at a stop.)"""
    out: list[int] = []
    tasks = f"/proc/{pid}/task/"
    with contextlib.suppress(OSError):
        for task in os.listdir(tasks):  # noqa: PTH208
            with contextlib.suppress(OSError), open(f"{tasks}{task}/children", "rb") as f:  # noqa: PTH123
                out.extend(map(int, f.read().split()))
    return out


def descendants(roots: list[int], skip: int = 0) -> dict[int, bytes]:
    """Every live process below ``roots`` (pid → start time), but ``skip`` and its own."""
    found: dict[int, bytes] = {}
    todo = [c for r in roots for c in _children(r)]
    while todo:
        pid = todo.pop()
        if pid == skip or pid in found:
            continue
        start = _started(pid)
        if start is not None:
            found[pid] = start
            todo.extend(_children(pid))
    return found


def kill_all(known: dict[int, bytes]) -> None:
    """SIGKILL what ``known`` remembers (where it is still the same process) and all below it:
    stopped first, tree by tree, so none of them starts another on the way."""
    stopped: dict[int, bytes] = {}
    todo = {p: s for p, s in known.items() if _started(p) == s}
    while todo:
        for pid in todo:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGSTOP)
        stopped.update(todo)
        below = descendants(list(todo))
        todo = {p: s for p, s in below.items() if p not in stopped}
    for pid, start in stopped.items():
        if _started(pid) == start:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
