"""What the kernel's I/O thread knows of the cell its ranks run (I/O thread only).

- the ranks the cell was sent to that have not answered yet (``awaited``);
- quiet replies held back while others are awaited, so that a cell's replies are recorded in
  one transaction (:data:`HOLD`; relays' reductions :data:`HOLD_RELAYED`);
- the run's record, when it is not written yet (a cell on a live cluster): it goes with the
  first of the run's events that are recorded, or after :data:`RECORD_AFTER`;
- whether every rank finished cleanly: the run's ``completed`` end is then recorded with the
  last replies, and the main thread does not record it again.

A short cell on a live cluster thus costs one store transaction: its record, its ranks' replies
and its end together.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from ..events import ErrorEvent, MetricEvent, RankEvent, RankStates, Recorded, RunEvent, RunState
from ..interface import RunWriter
from .fanin import HOLD_S
from .inbox import Ended, Exited, Finished, Item, SetupFailed, Show
from .rankset import RankSet

# seconds a rank's quiet reply to a cell (its state and end, nothing to show) waits for the
# other ranks' before it is recorded: a cell's replies in one transaction, not one per rank
HOLD = 0.005
# ... where they are relays' reductions (a node's ranks' ends each): held until the last
# awaited one comes, which is recorded at once with them and the run's end (so the end is never
# later), or this long after the first: a cell's nodes' ends that come within it are ONE store
# transaction (each alone costs ~0.3 ms), however far apart they come (tens to hundreds of ms
# where relays share cores with their ranks). What a kernel that dies meanwhile loses: the
# states of the nodes' ranks that ended in the last HOLD_RELAYED seconds (the run's record is
# written by RECORD_AFTER all the same, and ended as failed when the history is next opened)
HOLD_RELAYED = HOLD_S
# seconds a cell on a live cluster may run before its run's record is written, if nothing of
# the run was recorded before (checked when the I/O thread next wakes: a cell's send wakes it
# where it rests between cells, else at its next tick, at most 50 ms after the send)
RECORD_AFTER = 0.02
# ... where the cell's ends come from relays (held up to HOLD_RELAYED already, see above): a
# cell that ends within it is then ONE transaction, record and ends together, not two (~0.65 ms
# of the kernel's CPU per cell at 1,000 ranks where the relays share its cores, issue 26). What a
# kernel that dies meanwhile loses: the record of a run started in the last 0.5 s
RECORD_AFTER_RELAYED = HOLD_RELAYED


class CellRun:
    def __init__(self) -> None:
        self.awaited: RankSet | set[int] = RankSet()  # (runs of ranks, see .rankset)
        self.held: tuple[list[Recorded], list[Item]] = ([], [])
        self.held_since = self.held_until = 0.0  # (monotonic) the first held came, it is due
        self.writer: RunWriter | None = None  # the run's, while its record is not written
        self.record_by = 0.0
        self.clean = True  # nothing of the run failed so far
        self.completed: RunEvent | None = None  # the end recorded with the ranks' replies

    def start(self, writer: RunWriter | None, record_by: float) -> None:
        """A run starts; its record (``writer``'s) is due by ``record_by`` (monotonic)."""
        self.writer, self.clean, self.completed = writer, True, None
        self.record_by = record_by

    def sent_to(self, ranks: RankSet | set[int]) -> None:
        """The cell left for ``ranks``: their answers are awaited."""
        self.awaited = ranks

    def end(self) -> None:
        self.awaited = RankSet()
        self.writer = None  # (the recorder writes the record with the end, if still due)

    def took(self, events: Sequence[Recorded], item: Item | None) -> None:
        """A rank's message gave ``events`` and ``item``: note answers and failures."""
        if isinstance(item, Ended):
            self.awaited.difference_update(item.ranks)
        elif isinstance(item, Finished):
            self.awaited.discard(item.rank)
            self.clean = self.clean and item.done.status == "ok"
        if isinstance(item, Exited | SetupFailed) or any(isinstance(e, ErrorEvent) for e in events):
            self.clean = False

    def end_if_complete(self, run_id: str, awaited_before: bool) -> RunEvent | None:
        """The run's ``completed`` end, if the last awaited rank just finished and every one
        finished cleanly; None otherwise."""
        if not (awaited_before and not self.awaited and self.clean and run_id):
            return None
        self.completed = RunEvent(run_id, time.time(), RunState.COMPLETED)
        return self.completed

    def hold(self, events: Sequence[Recorded], items: list[Item]) -> float | None:
        """Hold back a batch of quiet replies (rank states, samples; no output, no failure)
        while other ranks of the cell have not answered, for at most :data:`HOLD` seconds
        (:data:`HOLD_RELAYED` from a relay's reduction on): it is then recorded with theirs.
        Returns how long until it is due (None: not held)."""
        if not self.awaited or not all(
            isinstance(e, RankEvent | RankStates | MetricEvent) for e in events
        ):
            return None
        if not all(isinstance(i, Show | Finished | Ended) for i in items):
            return None
        now = time.monotonic()
        if (events or items) and not (self.held[0] or self.held[1]):
            self.held_since, self.held_until = now, now + HOLD
        # a relay's, the others' may be far; not once a rank failed (the cell ends early, and
        # a dead node's ranks, still awaited, never answer)
        if self.clean and any(isinstance(e, RankStates) for e in events):
            self.held_until = max(self.held_until, self.held_since + HOLD_RELAYED)
        self.held[0].extend(events)
        self.held[1].extend(items)
        return max(0.0, self.held_until - now)

    def take_held(
        self, events: Sequence[Recorded], items: list[Item]
    ) -> tuple[Sequence[Recorded], list[Item]]:
        """``events`` and ``items`` with what is held back before them (no longer held)."""
        if any(isinstance(i, Exited) for i in items):  # (a death the process watch saw)
            self.clean = False
        if self.held[0] or self.held[1]:
            events, items = [*self.held[0], *events], handed(self.held[1] + items)
            self.held = ([], [])
        return events, items

    def held_due(self) -> bool:
        return bool(self.held[0] or self.held[1]) and time.monotonic() >= self.held_until

    def record_due(self) -> RunWriter | None:
        """The writer whose record must be written now (the cell runs on), once."""
        if self.writer is None or time.monotonic() < self.record_by:
            return None
        writer, self.writer = self.writer, None
        return writer


def handed(items: list[Item]) -> list[Item]:
    """What a cell's held replies give the main thread, in fewer hand-offs: where they are
    only quiet ones (:class:`Show` of states and samples, :class:`Finished`,
    :class:`Ended`), their events as ONE ``Show`` (in order) and the ends of consecutive ranks
    as one ``Ended`` (8 nodes' reductions: 2 items, not 12). The main thread does the same with
    them: the states are shown, the ranks are no longer pending; nothing of either depends on
    the order between the two."""
    if len(items) < 3 or not all(isinstance(i, Show | Finished | Ended) for i in items):
        return items
    shown = [e for i in items if isinstance(i, Show) for e in i.events]
    out: list[Item] = [Show(tuple(shown))] if shown else []
    out += [i for i in items if isinstance(i, Finished)]
    ended = sorted(
        (i for i in items if isinstance(i, Ended)),
        key=lambda i: (i.run_id, isinstance(i.ranks, range), i.ranks[0] if i.ranks else -1),
    )
    for item in ended:
        last = out[-1] if out else None
        if (
            isinstance(last, Ended)
            and last.run_id == item.run_id
            and isinstance(last.ranks, range)
            and isinstance(item.ranks, range)
            and last.ranks.step == item.ranks.step == 1
            and last.ranks.stop == item.ranks.start
        ):
            out[-1] = Ended(item.run_id, range(last.ranks.start, item.ranks.stop))
        else:
            out.append(item)
    return out
