"""One order for a rank's two connections (I/O thread only).

A rank sends its cells' ends (and its hello) on the socket its main thread owns and everything
else on its control channel (``worker/cellsocket.py``). A message of the first kind names, as
``after``, the counter of the last message the rank queued on the control channel before it;
it is taken only once that message arrived, so a cell's output always precedes its end.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Any

from ..protocol.header import Message
from ..protocol.signing import Buffer

Waiting = tuple[int, Message, list[Buffer]]  # (after, message, buffers)


def after(header: dict[str, Any]) -> int:
    """The control counter a cell-socket message must wait for (0: none); ``ValueError`` for
    anything but a non-negative integer."""
    value = header.get("after", 0)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"bad 'after' {value!r}")
    return value


class CellOrder:
    """Cell-socket messages that came before the control messages they follow."""

    def __init__(self) -> None:
        self._waiting: dict[int, deque[Waiting]] = {}

    def wait(self, rank: int, waiting: Waiting) -> None:
        self._waiting.setdefault(rank, deque()).append(waiting)

    def ready(self, rank: int, after: int, accepted: int) -> bool:
        """Whether a message that names ``after`` may be taken now (``accepted``: the
        highest control counter taken from the rank), behind none that still waits."""
        return after <= accepted and rank not in self._waiting

    def waiting(self, ranks: Sequence[int]) -> set[int]:
        """Which of ``ranks`` have messages waiting (what comes from them now waits too)."""
        if not self._waiting:
            return set()
        return self._waiting.keys() & set(ranks)

    def release(self, rank: int, accepted: int) -> list[Waiting]:
        """The waiting messages of ``rank`` that may now be taken, in the order they came."""
        queue = self._waiting.get(rank)
        out: list[Waiting] = []
        while queue and queue[0][0] <= accepted:
            out.append(queue.popleft())
        if queue is not None and not queue:
            del self._waiting[rank]
        return out
