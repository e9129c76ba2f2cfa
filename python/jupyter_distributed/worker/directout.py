"""``sys.stdout`` and ``sys.stderr`` whose whole lines skip the pipe when nothing is on the way.

:class:`~.capture.FdCapture` reads file descriptors 1 and 2 through pipes, one thread each: a
line a rank's code prints wakes that thread (and takes the GIL from the main thread) before it
leaves, ~3 wake-ups of a thread on a core the rank's training step is using (issue 26: the cost
we add to a training step). Once the rank's output goes on its Unix cell socket (any thread may
send there, ``worker/cellsocket.py``), :func:`install` puts new ``sys.stdout`` and
``sys.stderr`` objects in place, on the same descriptors, whose raw writes go through
:meth:`~.capture.FdCapture.hand`: whole lines, when that stream's pipe is empty, its reader holds
nothing and it is not flooding, are handed on by the writing thread itself; anything else (a
partial line, a carriage return, a flood, what C code or a child writes to the descriptors) goes
to the pipe as before, so the order of one thread's output is kept.
"""

from __future__ import annotations

import contextlib
import io
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer

Hand = Callable[[str, bytes], bool]  # (stream, bytes) -> whether they were handed on


class _Raw(io.FileIO):
    """File descriptor ``fd``, whose writes are first offered to ``hand``, unless the stream
    had lines handed on within ``gather`` seconds (``handed``, by stream: a flood, which the
    pipe's reader gathers; checked first, so that a flood's prints pay little for it)."""

    def __init__(
        self, fd: int, stream: str, hand: Hand, most: int, handed: dict[str, float], gather: float
    ) -> None:
        super().__init__(fd, "w", closefd=False)
        self._stream, self._hand, self._most = stream, hand, most
        self._handed, self._gather = handed, gather

    def write(self, b: ReadableBuffer) -> int:
        if time.monotonic() - self._handed[self._stream] >= self._gather:
            view = memoryview(b)
            if view.nbytes <= self._most:
                data = view.tobytes()
                if self._hand(self._stream, data):
                    return len(data)
        return super().write(b)


def install(hand: Hand, most: int, handed: dict[str, float], gather: float) -> None:
    """New ``sys.stdout`` and ``sys.stderr`` (line-buffered, with the old ones' encoding),
    whose writes of up to ``most`` bytes are offered to ``hand`` first, unless lines were
    handed on within ``gather`` seconds (``handed``: when, by stream)."""
    for fd, name in ((1, "stdout"), (2, "stderr")):
        old = getattr(sys, name)
        if old is None:
            continue
        with contextlib.suppress(OSError, ValueError):
            old.flush()
        stream = io.TextIOWrapper(
            io.BufferedWriter(_Raw(fd, name, hand, most, handed, gather)),
            encoding=getattr(old, "encoding", None) or "utf-8",
            errors=getattr(old, "errors", None) or "strict",
            line_buffering=True,
            write_through=True,
        )
        setattr(sys, name, stream)
