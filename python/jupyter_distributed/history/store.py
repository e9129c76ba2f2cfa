"""The durable history of runs: one SQLite file in WAL mode.

Kernels append while the server extension reads, from other processes. Each batch of events is
one transaction, so a kernel that dies loses nothing it had received. Every event gets a global,
increasing ``seq``: readers page and follow the history by that cursor. Nothing is held in memory.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sqlite3
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..errors import StoreError
from ..events import (
    MetricEvent,
    OutputEvent,
    OutputLines,
    RankStates,
    Recorded,
    RunEvent,
    SharedLines,
)
from ..pids import pid_alive
from . import eventrows, migrate, probestore, rankspans, reaper, rowkeys, staterows, storefile
from .budget import Bounds
from .coordination import Coordination
from .grouprows import Item
from .queries import Queries
from .records import Control, JsonMemo, LogLine, RankRecord, RunRecord
from .rowupdates import RowUpdates
from .storefile import SCHEMA, STORE_ENV, default_store_path

__all__ = [
    "STORE_ENV",
    "Control",
    "LogLine",
    "RankRecord",
    "RunRecord",
    "Store",
    "default_store_path",
    "pid_alive",
]


#: The stores this process opened with Store.open, by their file's real path.
_SHARED: dict[str, Store] = {}
_SHARED_LOCK = threading.Lock()


class Store(Queries, Coordination, Bounds):
    """Thread-safe. Writes go through one connection, one transaction at a time; each reading
    thread has its own connection (WAL lets readers run beside the writer and each other), so a
    slow search never stalls the live stream. Every SQLite error is raised as :class:`StoreError`
    naming the file. Opening a store ends the runs of dead kernels on this host (:mod:`.reaper`)."""

    @classmethod
    def open(cls, path: str | os.PathLike[str] | None = None) -> Store:
        """This process's one store of ``path`` (default: :func:`default_store_path`), opened
        on first use: the kernel, the server, its follower and each followed job share one
        connection set per file. Each :meth:`open` is paired with a :meth:`close`; the
        connections close with the last one."""
        key = os.path.realpath(path if path is not None else default_store_path())
        with _SHARED_LOCK:
            store = _SHARED.get(key)
            if store is None or store._closed:
                store = cls(path)
                store._key = key
                _SHARED[key] = store
            else:
                store._users += 1
            return store

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        """A store of its own; code outside tests uses :meth:`open`."""
        own_dir = path is None and not os.environ.get(STORE_ENV)
        self.path = Path(path) if path is not None else default_store_path()
        self._lock = threading.Lock()
        self._keys = rowkeys.Keys()  # run and name keys this writer knows (see Keys)
        self._json = JsonMemo()  # (writer only) a run's spec and coords as the last run's
        self._sets = rankspans.Sets()  # (writer only) the rank_sets row of the last coords
        self._local = threading.local()
        self._readers_lock = threading.Lock()  # never the writer's: readers do not wait for it
        self._readers: list[tuple[threading.Thread, sqlite3.Connection]] = []
        self._closed = False
        self._key, self._users = "", 1  # (see open)
        db: sqlite3.Connection | None = None
        try:
            storefile.prepare(self.path, SCHEMA, own_dir)
            db = self._db = storefile.connect(self.path)
            storefile.check(db, self.path)  # (through SQLite: the file is never opened here)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            with self._tx() as tx:
                migrated = migrate.upgrade(tx)
                for stmt in storefile.statements(SCHEMA):
                    tx.execute(stmt)  # an older store gains what it lacks
            if migrated:
                migrate.reclaim(db)
            storefile.make_private(self.path)
        except (sqlite3.Error, StoreError, migrate.NewerStore) as exc:
            if db is not None:
                db.close()
            if isinstance(exc, sqlite3.Error):
                raise storefile.failed(self.path, exc) from None
            if isinstance(exc, migrate.NewerStore):
                raise StoreError(f"history store at {self.path}: {exc}") from None
            raise
        self.reap()

    def close(self) -> None:
        """Close this user's hold; the connections close with the last (see :meth:`open`)."""
        with _SHARED_LOCK:
            self._users -= 1
            if self._users > 0:
                return
            if self._key and _SHARED.get(self._key) is self:
                del _SHARED[self._key]
        with self._lock, self._readers_lock:
            self._closed = True
            self._db.close()
            for _, reader in self._readers:
                reader.close()
            self._readers.clear()

    def reap(self) -> list[str]:
        """Mark this host's runs of dead kernels failed and sweep their files (see
        :mod:`.reaper`); returns the ids of the runs ended."""
        with self._tx() as db:
            dead = reaper.mark_dead_kernels(db, socket.gethostname())
        reaper.sweep_leftovers()
        return dead

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            db = self._db
            try:
                db.execute("BEGIN IMMEDIATE")
                try:
                    yield db
                except BaseException:
                    self._keys.clear()  # (keys made in it are gone with it)
                    self._sets.clear()
                    if db.in_transaction:  # a failed COMMIT may have ended it already
                        db.execute("ROLLBACK")
                    raise
                db.execute("COMMIT")
            except sqlite3.Error as exc:
                self._keys.clear()
                self._sets.clear()
                if db.in_transaction:
                    with contextlib.suppress(sqlite3.Error):
                        db.execute("ROLLBACK")
                raise storefile.failed(self.path, exc) from exc

    def _reader(self) -> sqlite3.Connection:
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is None:
            with self._readers_lock:
                if self._closed:
                    raise StoreError(f"history store at {self.path} is closed")
                db = storefile.connect(self.path)
                kept = []
                for thread, reader in self._readers:
                    if thread.is_alive():
                        kept.append((thread, reader))
                    else:
                        reader.close()  # its thread ended (a stopped cluster's I/O thread)
                self._readers = [*kept, (threading.current_thread(), db)]
            self._local.db = db
        return db

    def _query(self, sql: str, args: Iterable[Any] = ()) -> list[tuple[Any, ...]]:
        try:
            return self._reader().execute(sql, tuple(args)).fetchall()
        except sqlite3.Error as exc:
            raise storefile.failed(self.path, exc) from exc

    @contextmanager
    def _rows(self, sql: str, args: Iterable[Any] = ()) -> Iterator[Iterator[tuple[Any, ...]]]:
        """Rows read as they are needed; the statement ends with the block."""
        cursor = None
        try:
            cursor = self._reader().execute(sql, tuple(args))
            yield cursor
        except sqlite3.Error as exc:
            raise storefile.failed(self.path, exc) from exc
        finally:
            if cursor is not None:
                cursor.close()

    # -- writing ---------------------------------------------------------------------------

    def create_run(self, run: RunRecord, coords: dict[int, dict[str, Any]] | None = None) -> None:
        with self._tx() as db:
            eventrows.append(db, [self._create(db, run, coords)], self._keys)

    def _create(
        self, db: sqlite3.Connection, run: RunRecord, coords: dict[int, dict[str, Any]] | None
    ) -> Item:
        """Insert the run's and its ranks' rows; returns its first event, to append."""
        dumps = self._json.dumps
        db.execute(
            "INSERT INTO runs VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                run.id,
                run.cluster_id,
                run.backend,
                run.world_size,
                json.dumps(run.ranks),
                run.state.value,
                dumps("spec", run.spec),
                run.source,
                run.notebook,
                run.cell_id,
                run.host,
                run.kernel_pid,
                run.external_id,
                run.started,
                run.ended,
                run.message,
                json.dumps(run.summary),
                run.sweep_id,
                run.kernel_id,
            ),
        )
        rankspans.create(db, run.id, run.ranks, coords, run.started, self._sets)
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
        count = 0
        with self._tx() as db:
            if run is not None:
                items.append(self._create(db, *run))
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
                if isinstance(ev, RankStates):  # a relay's reduction: one row
                    items.append(staterows.States(ev.run_id, ev.t, ev.rows(), ev.span_rows()))
                    count += ev.count
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
            updates.apply(db, self._sets)
            eventrows.append(db, items, self._keys)
            if beats:
                rankspans.single(db, self._sets, beats)
                db.executemany(
                    "UPDATE ranks SET heartbeat=? WHERE run_id=? AND rank=?",
                    [(t, run_id, rank) for (run_id, rank), t in beats.items()],
                )
        return count
