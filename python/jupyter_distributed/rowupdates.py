"""What a batch of events changes in the ``runs`` and ``ranks`` rows (the history's summary of
each run and rank, beside the events themselves).

Changes are applied in the batch's order; consecutive changes of one kind go to SQLite as one
statement (a cell's end on 8 ranks is one ``executemany``, not 8 statements). A rank's state
that a later state of the same batch sets again is not applied at all (its event is kept): a
cell's ``running`` and ``done`` arriving together are one row update. The changes to a run
whose rows are made in the same transaction are folded into those rows (:meth:`fold`) before
they are inserted: a short cell's record and its end are one insert per row, no update.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from .events import ErrorEvent, Event, RankEvent, RunEvent

_RUN = "UPDATE runs SET state=?, ended=COALESCE(?, ended), message=? WHERE id=?"
_RANK = (
    "UPDATE ranks SET state=?, updated=?, host=CASE WHEN ?='' THEN host ELSE ? END,"
    " pid=COALESCE(?, pid) WHERE run_id=? AND rank=?"
)
_FAILED = "UPDATE ranks SET state='failed', updated=? WHERE run_id=? AND rank=?"

# A change: (statement, run id, rank or None, its parameters).
_Op = tuple[str, str, int | None, tuple[Any, ...]]


class RowUpdates:
    def __init__(self, events: Sequence[object]) -> None:
        self._last = {(e.run_id, e.rank): e for e in events if isinstance(e, RankEvent)}
        self._ops: list[_Op] = []

    def add(self, ev: Event) -> None:
        """Note what ``ev`` changes (nothing for most kinds)."""
        if isinstance(ev, RunEvent):
            ended = ev.t if ev.state.finished else None
            params = (ev.state.value, ended, ev.message, ev.run_id)
            self._ops.append((_RUN, ev.run_id, None, params))
        elif isinstance(ev, RankEvent):
            if not self._overwritten(ev):
                row = (ev.state.value, ev.t, ev.host, ev.host, ev.pid, ev.run_id, ev.rank)
                self._ops.append((_RANK, ev.run_id, ev.rank, row))
        elif isinstance(ev, ErrorEvent):
            self._ops.append((_FAILED, ev.run_id, ev.rank, (ev.t, ev.run_id, ev.rank)))

    def fold(self, run_id: str, run: dict[str, Any], ranks: dict[int, dict[str, Any]]) -> None:
        """Apply the changes to ``run_id`` to its rows not inserted yet (``run``: its
        ``runs`` row's columns; ``ranks``: each rank's ``ranks`` row's), exactly as the
        statements would, and drop them from what :meth:`apply` writes."""
        rest: list[_Op] = []
        for sql, rid, rank, params in self._ops:
            row = run if rank is None else ranks.get(rank)
            if rid != run_id or row is None:
                rest.append((sql, rid, rank, params))
            elif sql is _RUN:
                state, ended, message, _ = params
                row.update(state=state, message=message)
                row["ended"] = row["ended"] if ended is None else ended
            elif sql is _RANK:
                state, t, host, _, pid, _, _ = params
                row.update(state=state, updated=t)
                row["host"] = row["host"] if host == "" else host
                row["pid"] = row["pid"] if pid is None else pid
            else:  # _FAILED
                row.update(state="failed", updated=params[0])
        self._ops = rest

    def apply(self, db: sqlite3.Connection) -> None:
        i = 0
        while i < len(self._ops):  # consecutive changes of one kind: one statement
            sql = self._ops[i][0]
            j = i
            while j < len(self._ops) and self._ops[j][0] is sql:
                j += 1
            db.executemany(sql, [op[3] for op in self._ops[i:j]])
            i = j

    def _overwritten(self, ev: RankEvent) -> bool:
        """Whether the batch's last state of ``ev``'s rank leaves its row as if ``ev`` had been
        applied before it (same host and pid: every column ``ev`` sets is set again)."""
        final = self._last[ev.run_id, ev.rank]
        return final is not ev and final.host == ev.host and final.pid == ev.pid
