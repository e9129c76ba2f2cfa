"""The kernel's I/O thread's tick pace: how often it wakes with nothing to read, while a cell
runs and between cells (issue 26).

Its ticks look at the processes, the controls, the held replies and the run's record, and ping
the ranks. Where deaths wake the I/O thread themselves (pidfds), a long cell's ticks may be
slower than the usual pace, and the pace at rest between cells slower still, a cell then waking
the thread as it is sent (:attr:`.Outbox.wake_cells`). Set by the cluster
(:meth:`.Router.pace`), applied by the I/O thread as cells start and end (:meth:`Pace.again`).
"""

from __future__ import annotations

from ..ioloop import IoLoop
from .cellrun import CellRun
from .decode import Ranks
from .outbox import Outbox

PACE_MS = 50  # the I/O thread's tick, unless the cluster says otherwise (see Pace.set)


class Pace:
    """The pace of one router's I/O loop: set from any thread, applied on the I/O thread."""

    def __init__(self, loop: IoLoop, outbox: Outbox, ranks: Ranks, cell: CellRun) -> None:
        self._loop, self._outbox, self._ranks, self._cell = loop, outbox, ranks, cell
        self.poll_ms = PACE_MS
        self.running_ms = PACE_MS  # (the pace while a cell runs, see set)
        self.rest_ms = 0  # (the pace while no cell runs, if set: see set)

    def set(self, poll_ms: int, running_ms: int | None = None, rest_ms: int = 0) -> None:
        """Tick about every ``poll_ms`` (any thread, before the first cell; see
        :meth:`IoLoop.pace`), and every ``running_ms`` (if longer) while a cell's ranks are
        awaited and its record is written: where deaths wake the I/O thread (pidfds), a long
        cell's ticks (process watch, controls, pings: due every 0.25 s or less often) need not
        wake the kernel 20 times a second on its ranks' cores (issue 26). Between cells
        ``rest_ms`` if given, else ``poll_ms``: with ``rest_ms`` a cell wakes the I/O thread as
        it is sent (over the local cell sockets too, see :attr:`.Outbox.wake_cells`), which
        starts the run at once, not at the next tick."""
        self.poll_ms = poll_ms
        if running_ms is not None:
            self.running_ms = running_ms
        self.rest_ms = rest_ms
        self._outbox.wake_cells = bool(rest_ms)
        self._loop.pace(rest_ms or poll_ms)

    def resting(self) -> bool:
        """(I/O thread) Whether the pace at rest is set and no run is under way."""
        return bool(self.rest_ms) and not self._ranks.run_id

    def again(self, from_now: bool = False) -> None:
        """(I/O thread) The tick's pace: slower while a cell runs, or while none does where a
        pace at rest is set (see :meth:`set`); ``from_now``: see :meth:`IoLoop.pace`."""
        if self.resting():
            self._loop.pace(self.rest_ms)
            return
        running = bool(self._cell.awaited) and self._cell.writer is None
        pace = max(self.poll_ms, self.running_ms) if running else self.poll_ms
        self._loop.pace(pace, from_now)
