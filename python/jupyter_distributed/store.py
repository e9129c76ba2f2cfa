"""The durable history of runs: one SQLite file in WAL mode.

Kernels append while the server extension reads, from other processes. Each batch of events is
one transaction, so a kernel that dies loses nothing it had received. Every event gets a global,
increasing ``seq``: readers page and follow the history by that cursor. Nothing is held in memory.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .events import ErrorEvent, Event, MetricEvent, OutputEvent, RankEvent, RunEvent
from .pids import pid_alive
from .queries import Queries
from .records import Control, LogLine, RankRecord, RunRecord

__all__ = [
    "Control",
    "LogLine",
    "RankRecord",
    "RunRecord",
    "Store",
    "default_store_path",
    "pid_alive",
]

STORE_ENV = "JUPYTER_DISTRIBUTED_STORE"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY, cluster_id TEXT, backend TEXT, world_size INTEGER, ranks TEXT,
    state TEXT, spec TEXT, source TEXT, notebook TEXT, cell_id TEXT, host TEXT,
    kernel_pid INTEGER, external_id TEXT, started REAL, ended REAL, message TEXT,
    summary TEXT
);
CREATE INDEX IF NOT EXISTS runs_started ON runs (started);
CREATE TABLE IF NOT EXISTS ranks (
    run_id TEXT, rank INTEGER, host TEXT, pid INTEGER, state TEXT, coords TEXT,
    updated REAL, heartbeat REAL, PRIMARY KEY (run_id, rank)
);
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT, kind TEXT, rank INTEGER,
    t REAL, stream TEXT, text TEXT, data TEXT
);
CREATE INDEX IF NOT EXISTS events_kind ON events (run_id, kind, seq);
CREATE INDEX IF NOT EXISTS events_rank ON events (run_id, kind, rank, seq);
CREATE INDEX IF NOT EXISTS events_run ON events (run_id, seq);
CREATE TABLE IF NOT EXISTS controls (
    id INTEGER PRIMARY KEY AUTOINCREMENT, cluster_id TEXT, target TEXT, action TEXT,
    t REAL, taken REAL
);
CREATE INDEX IF NOT EXISTS controls_open ON controls (cluster_id, taken);
CREATE TABLE IF NOT EXISTS follows (
    run_id TEXT PRIMARY KEY, host TEXT, pid INTEGER, heartbeat REAL
);
"""

#: A follow lease whose holder has not renewed it for this long may be taken over.
LEASE_STALE_AFTER = 30.0


CONTROL_ACTIONS = ("cancel", "stop")


def default_store_path() -> Path:
    """``$JUPYTER_DISTRIBUTED_STORE``, else ``<jupyter data dir>/distributed/history.sqlite3``."""
    env = os.environ.get(STORE_ENV)
    if env:
        return Path(env)
    from jupyter_core.paths import jupyter_data_dir

    return Path(jupyter_data_dir()) / "distributed" / "history.sqlite3"


class Store(Queries):
    """Thread-safe; one connection per store object. Open one per process."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path) if path is not None else default_store_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(
            self.path, timeout=10, check_same_thread=False, isolation_level=None
        )
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        with self._tx() as db:
            for stmt in filter(str.strip, _SCHEMA.split(";")):
                db.execute(stmt)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def _query(self, sql: str, args: Iterable[Any] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._db.execute(sql, tuple(args)).fetchall()

    # -- writing ---------------------------------------------------------------------------

    def create_run(self, run: RunRecord, coords: dict[int, dict[str, Any]] | None = None) -> None:
        with self._tx() as db:
            db.execute(
                "INSERT INTO runs VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    run.id,
                    run.cluster_id,
                    run.backend,
                    run.world_size,
                    json.dumps(run.ranks),
                    run.state.value,
                    json.dumps(run.spec),
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
                ),
            )
            for rank in run.ranks:
                c = (coords or {}).get(rank, {})
                db.execute(
                    "INSERT INTO ranks VALUES (?,?,?,?,?,?,?,?)",
                    (
                        run.id,
                        rank,
                        c.get("host", ""),
                        c.get("pid"),
                        "starting",
                        json.dumps(c),
                        run.started,
                        None,
                    ),
                )
            db.execute(
                "INSERT INTO events (run_id, kind, t, data) VALUES (?,?,?,?)",
                (
                    run.id,
                    "run",
                    run.started,
                    json.dumps(RunEvent(run.id, run.started, run.state).to_json()),
                ),
            )

    def update_summary(self, run_id: str, **values: Any) -> None:
        with self._tx() as db:
            row = db.execute("SELECT summary FROM runs WHERE id=?", (run_id,)).fetchone()
            summary = json.loads(row[0]) if row and row[0] else {}
            summary.update(values)
            db.execute("UPDATE runs SET summary=? WHERE id=?", (json.dumps(summary), run_id))

    def set_external_id(self, run_id: str, external_id: str) -> None:
        with self._tx() as db:
            db.execute("UPDATE runs SET external_id=? WHERE id=?", (external_id, run_id))

    # -- who follows an external job (one follower per run: a kernel or the server) -------

    def claim_follow(
        self, run_id: str, host: str, pid: int, stale_after: float = LEASE_STALE_AFTER
    ) -> tuple[str, int] | None:
        """Take (or renew) the lease on following ``run_id``, atomically. Returns None when
        ``(host, pid)`` holds it now, else the live holder's ``(host, pid)``."""
        now = time.time()
        with self._tx() as db:
            row = db.execute(
                "SELECT host, pid, heartbeat FROM follows WHERE run_id=?", (run_id,)
            ).fetchone()
            if row is not None and (row[0], row[1]) != (host, pid):
                stale = now - float(row[2]) > stale_after
                dead = row[0] == host and not pid_alive(int(row[1]))
                if not (stale or dead):
                    return str(row[0]), int(row[1])
            db.execute(
                "INSERT OR REPLACE INTO follows (run_id, host, pid, heartbeat) VALUES (?,?,?,?)",
                (run_id, host, pid, now),
            )
        return None

    def release_follow(self, run_id: str, host: str, pid: int) -> None:
        with self._tx() as db:
            db.execute(
                "DELETE FROM follows WHERE run_id=? AND host=? AND pid=?", (run_id, host, pid)
            )

    def follower(self, run_id: str) -> tuple[str, int, float] | None:
        """``(host, pid, heartbeat)`` of the lease on ``run_id``, if any."""
        rows = self._query("SELECT host, pid, heartbeat FROM follows WHERE run_id=?", (run_id,))
        return (str(rows[0][0]), int(rows[0][1]), float(rows[0][2])) if rows else None

    def append(self, events: Iterable[Event]) -> int:
        """Write a batch of events in one transaction; returns how many."""
        n = 0
        beats: dict[tuple[str, int], float] = {}
        lines: list[tuple[str, str, int, float, str, str]] = []
        samples: list[tuple[str, str, int, float, str]] = []
        with self._tx() as db:
            for ev in events:
                n += 1
                # Output lines and metric samples, the bulk of a batch, are inserted in
                # runs (executemany), in order with the other events.
                if isinstance(ev, OutputEvent):
                    if samples:
                        self._insert_samples(db, samples)
                    lines.append((ev.run_id, ev.kind, ev.rank, ev.t, ev.stream.value, ev.text))
                    continue
                if lines:
                    self._insert_lines(db, lines)
                if isinstance(ev, MetricEvent):  # the ranks' heartbeats: once per batch
                    key = (ev.run_id, ev.rank)
                    beats[key] = max(ev.t, beats.get(key, ev.t))
                    samples.append((ev.run_id, ev.kind, ev.rank, ev.t, json.dumps(ev.to_json())))
                    continue
                if samples:
                    self._insert_samples(db, samples)
                self._insert(db, ev)
            self._insert_lines(db, lines)
            self._insert_samples(db, samples)
            db.executemany(
                "UPDATE ranks SET heartbeat=? WHERE run_id=? AND rank=?",
                [(t, run_id, rank) for (run_id, rank), t in beats.items()],
            )
        return n

    @staticmethod
    def _insert_lines(
        db: sqlite3.Connection, rows: list[tuple[str, str, int, float, str, str]]
    ) -> None:
        db.executemany(
            "INSERT INTO events (run_id, kind, rank, t, stream, text) VALUES (?,?,?,?,?,?)", rows
        )
        rows.clear()

    @staticmethod
    def _insert_samples(
        db: sqlite3.Connection, rows: list[tuple[str, str, int, float, str]]
    ) -> None:
        db.executemany("INSERT INTO events (run_id, kind, rank, t, data) VALUES (?,?,?,?,?)", rows)
        rows.clear()

    def _insert(self, db: sqlite3.Connection, ev: Event) -> None:
        if isinstance(ev, OutputEvent):
            db.execute(
                "INSERT INTO events (run_id, kind, rank, t, stream, text) VALUES (?,?,?,?,?,?)",
                (ev.run_id, ev.kind, ev.rank, ev.t, ev.stream.value, ev.text),
            )
            return
        data = json.dumps(ev.to_json())
        rank = None if isinstance(ev, RunEvent) else ev.rank
        db.execute(
            "INSERT INTO events (run_id, kind, rank, t, data) VALUES (?,?,?,?,?)",
            (ev.run_id, ev.kind, rank, ev.t, data),
        )
        if isinstance(ev, RunEvent):
            ended = ev.t if ev.state.finished else None
            db.execute(
                "UPDATE runs SET state=?, ended=COALESCE(?, ended), message=? WHERE id=?",
                (ev.state.value, ended, ev.message, ev.run_id),
            )
        elif isinstance(ev, RankEvent):
            db.execute(
                "UPDATE ranks SET state=?, updated=?, host=CASE WHEN ?='' THEN host ELSE ? END,"
                " pid=COALESCE(?, pid) WHERE run_id=? AND rank=?",
                (ev.state.value, ev.t, ev.host, ev.host, ev.pid, ev.run_id, ev.rank),
            )
        elif isinstance(ev, ErrorEvent):
            db.execute(
                "UPDATE ranks SET state='failed', updated=? WHERE run_id=? AND rank=?",
                (ev.t, ev.run_id, ev.rank),
            )

    def heartbeat(self, run_id: str, beats: dict[int, float]) -> None:
        with self._tx() as db:
            db.executemany(
                "UPDATE ranks SET heartbeat=? WHERE run_id=? AND rank=?",
                [(t, run_id, rank) for rank, t in beats.items()],
            )

    def request_control(self, target_id: str, action: str) -> Control:
        """Queue ``cancel`` (target: a run id) or ``stop`` (target: a cluster id) for the kernel
        that owns the cluster; it polls :meth:`take_controls`. Raises KeyError if the run or
        cluster is not in the history, ValueError for an unknown action."""
        if action not in CONTROL_ACTIONS:
            raise ValueError(f"unknown control action {action!r}; use one of {CONTROL_ACTIONS}")
        sql = (
            "SELECT cluster_id FROM runs WHERE id=?"
            if action == "cancel"
            else "SELECT cluster_id FROM runs WHERE cluster_id=? LIMIT 1"
        )
        with self._tx() as db:
            row = db.execute(sql, (target_id,)).fetchone()
            if row is None:
                what = "run" if action == "cancel" else "cluster"
                raise KeyError(f"no {what} {target_id!r} in the history")
            now = time.time()
            cur = db.execute(
                "INSERT INTO controls (cluster_id, target, action, t) VALUES (?,?,?,?)",
                (row[0], target_id, action, now),
            )
            return Control(int(cur.lastrowid or 0), row[0], target_id, action, now)

    def take_controls(self, cluster_id: str) -> list[Control]:
        """The requests for ``cluster_id`` not taken yet, oldest first; marks them taken.
        Cheap when there are none (a read, no write lock): kernels poll it."""
        if not self._query(
            "SELECT 1 FROM controls WHERE cluster_id=? AND taken IS NULL LIMIT 1", (cluster_id,)
        ):
            return []
        with self._tx() as db:
            rows = db.execute(
                "SELECT id, cluster_id, target, action, t FROM controls"
                " WHERE cluster_id=? AND taken IS NULL ORDER BY id",
                (cluster_id,),
            ).fetchall()
            if rows:
                db.execute(
                    "UPDATE controls SET taken=? WHERE cluster_id=? AND taken IS NULL AND id<=?",
                    (time.time(), cluster_id, rows[-1][0]),
                )
        return [Control(*row) for row in rows]
