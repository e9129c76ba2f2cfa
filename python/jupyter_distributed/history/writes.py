"""Writing the history: a run's rows, its cluster, summary and external id, and batches of
events (see :mod:`.eventrows`), each in one transaction.

Mixed into :class:`~jupyter_distributed.history.store.Store`, which provides what is declared
here: ``_tx`` and the writer's memos of keys, JSON and rank sets.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from ..events import (
    MetricEvent,
    OutputBatch,
    OutputEvent,
    OutputLines,
    RankStates,
    Recorded,
    RunEvent,
    SharedLines,
)
from . import eventrows, numruns, probestore, rankshape, rankspans, rowkeys, staterows
from .grouprows import Item
from .records import JsonMemo, RunRecord
from .rowupdates import RowUpdates


class Writes:
    if TYPE_CHECKING:  # provided by Store
        _keys: rowkeys.Keys
        _json: JsonMemo
        _sets: rankshape.Sets
        recorded: int

        def _tx(self) -> AbstractContextManager[sqlite3.Connection]: ...

    def create_run(self, run: RunRecord, coords: dict[int, dict[str, Any]] | None = None) -> None:
        with self._tx() as db:
            eventrows.append(db, [self._create(db, run, coords)], self._keys)

    def _create(
        self,
        db: sqlite3.Connection,
        run: RunRecord,
        coords: dict[int, dict[str, Any]] | None,
        updates: RowUpdates | None = None,
    ) -> Item:
        """Insert the run's and its ranks' rows; returns its first event, to append. With
        ``updates`` (the rest of the transaction's changes), a run whose spans and own state
        only end in them is inserted as it ends (see ``RowUpdates.fold``)."""
        dumps = self._json.dumps
        ended: tuple[str, Any, str] | None = None

        def fold(spans: rankshape.Spans) -> dict[tuple[int, int], tuple[str, Any]]:
            nonlocal ended
            folded = updates.fold(run.id, spans) if updates is not None else None
            if folded is None:
                return {}
            states, ended = folded
            return states

        rankspans.create(db, run.id, run.ranks, coords, run.started, self._sets, fold)
        state, until, message = ended or (run.state.value, None, run.message)
        until = run.ended if until is None else until  # (as COALESCE(?, ended) would)
        db.execute(
            "INSERT INTO runs VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                run.id,
                run.cluster_id,
                run.backend,
                run.world_size,
                dumps("ranks", run.ranks, numruns.pack),
                state,
                dumps("spec", run.spec),
                run.source,
                run.notebook,
                run.cell_id,
                run.host,
                run.kernel_pid,
                run.external_id,
                run.started,
                until,
                message,
                json.dumps(run.summary),
                run.sweep_id,
                run.kernel_id,
            ),
        )
        rowkeys.new_run_key(db, run.id, self._keys)
        return eventrows.item(RunEvent(run.id, run.started, run.state))

    def set_cluster(self, run_id: str, cluster_id: str, coords: dict[int, dict[str, Any]]) -> None:
        """Where a run's ranks are once its cluster runs (the run is recorded before launch)."""
        with self._tx() as db:
            db.execute("UPDATE runs SET cluster_id=? WHERE id=?", (cluster_id, run_id))
            rankspans.single(db, self._sets, ((run_id, rank) for rank in coords))
            db.executemany(
                "UPDATE ranks SET host=?, pid=?, coords=? WHERE run_id=? AND rank=?",
                [
                    (c.get("host", ""), c.get("pid"), json.dumps(c), run_id, rank)
                    for rank, c in coords.items()
                ],
            )

    def update_summary(self, run_id: str, **values: Any) -> None:
        """Set ``values`` in the run's summary (a probe's pairs beside it, see
        :mod:`.probestore`)."""
        with self._tx() as db:
            values = probestore.write(db, run_id, values)
            row = db.execute("SELECT summary FROM runs WHERE id=?", (run_id,)).fetchone()
            summary = json.loads(row[0]) if row and row[0] else {}
            summary.update(values)
            db.execute("UPDATE runs SET summary=? WHERE id=?", (json.dumps(summary), run_id))

    def set_external_id(self, run_id: str, external_id: str) -> None:
        with self._tx() as db:
            db.execute("UPDATE runs SET external_id=? WHERE id=?", (external_id, run_id))

    def append(
        self,
        events: Iterable[Recorded],
        run: tuple[RunRecord, dict[int, dict[str, Any]] | None] | None = None,
    ) -> int:
        """Write a batch of events in one transaction; returns how many (each line of an
        :class:`~.events.OutputLines` is one). With ``run`` (a record and its ranks'
        coordinates, as for :meth:`create_run`) the run is created first, in the same
        transaction."""
        items: list[eventrows.Written] = []
        beats: dict[tuple[str, int], float] = {}
        events = list(events)
        updates = RowUpdates(events)
        count = compact = 0
        with self._tx() as db:
            for ev in events:
                if isinstance(ev, OutputLines):  # a flood's bulk: straight into rows
                    items.append(eventrows.Lines(ev.run_id, ev.rank, ev.stream.value, ev.lines))
                    count += len(ev.lines)
                    continue
                if isinstance(ev, SharedLines):  # a relay's collapsed lines: each rank's
                    stream = ev.stream.value
                    items.append(eventrows.Shared(ev.run_id, ev.ranks, stream, ev.texts, ev.times))
                    count += len(ev.ranks) * len(ev.texts)
                    continue
                if isinstance(ev, OutputBatch):  # a relay's batch: each message's rows
                    streams = [stream.value for stream in ev.streams]
                    batch = eventrows.Batch(ev.run_id, ev.ranks, streams, ev.texts, ev.times)
                    items.append(batch)
                    count += sum(map(len, ev.texts))
                    continue
                if isinstance(ev, RankStates):  # a relay's reduction: one row
                    items.append(staterows.States(ev.run_id, ev.t, ev.rows(), ev.span_rows()))
                    count += ev.count
                    compact += ev.count - 1  # (for the budget's look: one small row)
                    updates.add(ev)
                    continue
                count += 1
                items.append(eventrows.item(ev))
                if type(ev) is OutputEvent:
                    continue
                if isinstance(ev, MetricEvent):  # the ranks' heartbeats: once per batch
                    key = (ev.run_id, ev.rank)
                    beats[key] = max(ev.t, beats.get(key, ev.t))
                else:
                    updates.add(ev)
            if run is not None:  # (first: what the batch sets on it is known by now)
                items.insert(0, self._create(db, *run, updates))
            updates.apply(db, self._sets)
            eventrows.append(db, items, self._keys)
            if beats:
                rankspans.single(db, self._sets, beats)
                db.executemany(
                    "UPDATE ranks SET heartbeat=? WHERE run_id=? AND rank=?",
                    [(t, run_id, rank) for (run_id, rank), t in beats.items()],
                )
            self.recorded += count - compact  # (under the store's lock)
        return count
