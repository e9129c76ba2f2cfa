"""What a batch of events changes in the ``runs`` and ``ranks`` rows (the history's summary of
each run and rank, beside the events themselves).

Changes are applied in the batch's order; consecutive changes of one kind go to SQLite as one
statement (a cell's end on 8 ranks is one ``executemany``, not 8 statements). A rank's state
that a later state of the same batch sets again is not applied at all (its event is kept): a
cell's ``running`` and ``done`` arriving together are one row update.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from ..events import ErrorEvent, Event, RankEvent, RunEvent

_RUN = "UPDATE runs SET state=?, ended=COALESCE(?, ended), message=? WHERE id=?"
_RANK = (
    "UPDATE ranks SET state=?, updated=?, host=CASE WHEN ?='' THEN host ELSE ? END,"
    " pid=COALESCE(?, pid) WHERE run_id=? AND rank=?"
)
_FAILED = "UPDATE ranks SET state='failed', updated=? WHERE run_id=? AND rank=?"


class RowUpdates:
    def __init__(self, events: Sequence[object]) -> None:
        self._last = {(e.run_id, e.rank): e for e in events if isinstance(e, RankEvent)}
        self._ops: list[tuple[str, list[tuple[Any, ...]]]] = []

    def add(self, ev: Event) -> None:
        """Note what ``ev`` changes (nothing for most kinds)."""
        if isinstance(ev, RunEvent):
            ended = ev.t if ev.state.finished else None
            self._op(_RUN, (ev.state.value, ended, ev.message, ev.run_id))
        elif isinstance(ev, RankEvent):
            if not self._overwritten(ev):
                row = (ev.state.value, ev.t, ev.host, ev.host, ev.pid, ev.run_id, ev.rank)
                self._op(_RANK, row)
        elif isinstance(ev, ErrorEvent):
            self._op(_FAILED, (ev.t, ev.run_id, ev.rank))

    def apply(self, db: sqlite3.Connection) -> None:
        for sql, rows in self._ops:
            db.executemany(sql, rows)

    def _op(self, sql: str, row: tuple[Any, ...]) -> None:
        if self._ops and self._ops[-1][0] == sql:
            self._ops[-1][1].append(row)
        else:
            self._ops.append((sql, [row]))

    def _overwritten(self, ev: RankEvent) -> bool:
        """Whether the batch's last state of ``ev``'s rank leaves its row as if ``ev`` had been
        applied before it (same host and pid: every column ``ev`` sets is set again)."""
        final = self._last[ev.run_id, ev.rank]
        return final is not ev and final.host == ev.host and final.pid == ev.pid
