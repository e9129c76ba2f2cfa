"""The durable history of runs: one SQLite file in WAL mode.

Kernels append while the server extension reads, from other processes. Each batch of events is
one transaction, so a kernel that dies loses nothing it had received. Every event gets a global,
increasing ``seq``: readers page and follow the history by that cursor. Nothing is held in memory.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sqlite3
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..errors import StoreError
from ..pids import pid_alive
from . import migrate, rankshape, reaper, rowkeys, storefile
from .budget import Bounds
from .coordination import Coordination
from .queries import Queries
from .records import Control, JsonMemo, LogLine, RankRecord, RunRecord
from .storefile import SCHEMA, STORE_ENV, default_store_path
from .writes import Writes

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


class Store(Queries, Coordination, Bounds, Writes):
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
        self._sets = rankshape.Sets()  # (writer only) the rank_sets row of the last coords
        self._local = threading.local()
        self._readers_lock = threading.Lock()  # never the writer's: readers do not wait for it
        self._readers: list[tuple[threading.Thread, sqlite3.Connection]] = []
        self._closed = False
        self._key, self._users = "", 1  # (see open)
        self.recorded = 0  # events this writer recorded (a relay's states: 1), see Writes.append
        self._looked = (-float("inf"), 0, 0)  # the budget's last look: when, recorded, budget
        db: sqlite3.Connection | None = None
        try:
            storefile.prepare(self.path, SCHEMA, own_dir)
            db = self._db = storefile.connect(self.path)
            storefile.check(db, self.path)  # (through SQLite: the file is never opened here)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            rankshape.attach(db)  # (the writer's template of a cluster's runs' rows)
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
