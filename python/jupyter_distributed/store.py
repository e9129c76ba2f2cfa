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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .events import ErrorEvent, Event, MetricEvent, OutputEvent, RankEvent, RunEvent, RunState

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


def pid_alive(pid: int | None) -> bool:
    """Whether process ``pid`` exists on this host (a zombie counts as gone)."""
    if not pid or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return True  # no /proc: kill(0) said it exists


CONTROL_ACTIONS = ("cancel", "stop")


def default_store_path() -> Path:
    """``$JUPYTER_DISTRIBUTED_STORE``, else ``<jupyter data dir>/distributed/history.sqlite3``."""
    env = os.environ.get(STORE_ENV)
    if env:
        return Path(env)
    from jupyter_core.paths import jupyter_data_dir

    return Path(jupyter_data_dir()) / "distributed" / "history.sqlite3"


@dataclass
class RunRecord:
    id: str
    backend: str
    world_size: int
    ranks: list[int]
    state: RunState = RunState.RUNNING
    cluster_id: str = ""
    spec: dict[str, Any] = field(default_factory=dict)
    source: str = ""
    notebook: str = ""
    cell_id: str = ""
    host: str = ""
    kernel_pid: int | None = None
    external_id: str = ""
    started: float = 0.0
    ended: float | None = None
    message: str = ""
    summary: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "backend": self.backend,
            "world_size": self.world_size,
            "ranks": self.ranks,
            "state": self.state.value,
            "cluster_id": self.cluster_id,
            "spec": self.spec,
            "source": self.source,
            "notebook": self.notebook,
            "cell_id": self.cell_id,
            "host": self.host,
            "kernel_pid": self.kernel_pid,
            "external_id": self.external_id,
            "started": self.started,
            "ended": self.ended,
            "message": self.message,
            "summary": self.summary,
        }


@dataclass
class RankRecord:
    rank: int
    host: str
    pid: int | None
    state: str
    coords: dict[str, Any]
    updated: float
    heartbeat: float | None

    def to_json(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "host": self.host,
            "pid": self.pid,
            "state": self.state,
            "coords": self.coords,
            "updated": self.updated,
            "heartbeat": self.heartbeat,
        }


@dataclass
class LogLine:
    seq: int
    rank: int
    t: float
    stream: str
    text: str

    def to_json(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "rank": self.rank,
            "t": self.t,
            "stream": self.stream,
            "text": self.text,
        }


@dataclass
class Control:
    """A request from outside the kernel (the server extension) to a live cluster: ``cancel``
    a run (``target`` is its id) or ``stop`` the cluster (``target`` is the cluster id)."""

    id: int
    cluster_id: str
    target: str
    action: str
    t: float

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "cluster_id": self.cluster_id,
            "target": self.target,
            "action": self.action,
            "t": self.t,
        }


class Store:
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
        with self._tx() as db:
            for ev in events:
                n += 1
                self._insert(db, ev)
        return n

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
        elif isinstance(ev, MetricEvent):
            db.execute(
                "UPDATE ranks SET heartbeat=? WHERE run_id=? AND rank=?",
                (ev.t, ev.run_id, ev.rank),
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

    # -- reading ---------------------------------------------------------------------------

    def runs(self, limit: int = 50, before: float | None = None) -> list[RunRecord]:
        """Newest first; ``before`` pages by start time."""
        sql = "SELECT * FROM runs"
        args: list[Any] = []
        if before is not None:
            sql += " WHERE started < ?"
            args.append(before)
        sql += " ORDER BY started DESC LIMIT ?"
        args.append(limit)
        return [_run(row) for row in self._query(sql, args)]

    def run(self, run_id: str) -> RunRecord | None:
        rows = self._query("SELECT * FROM runs WHERE id=?", (run_id,))
        if not rows:
            rows = self._query(
                "SELECT * FROM runs WHERE id LIKE ? ORDER BY started DESC LIMIT 2",
                (run_id.replace("%", "") + "%",),
            )
            if len(rows) != 1:
                return None
        return _run(rows[0])

    def ranks(self, run_id: str) -> list[RankRecord]:
        rows = self._query(
            "SELECT rank, host, pid, state, coords, updated, heartbeat FROM ranks"
            " WHERE run_id=? ORDER BY rank",
            (run_id,),
        )
        return [
            RankRecord(r[0], r[1] or "", r[2], r[3], json.loads(r[4] or "{}"), r[5], r[6])
            for r in rows
        ]

    def logs(
        self,
        run_id: str,
        *,
        ranks: Iterable[int] | None = None,
        stream: str | None = None,
        search: str | None = None,
        after: int = 0,
        before: int | None = None,
        limit: int = 500,
    ) -> list[LogLine]:
        """Output lines in ``seq`` order after the cursor ``after`` (or the last ``limit``
        before ``before``), filtered by rank, stream and a case-insensitive substring."""
        sql = "SELECT seq, rank, t, stream, text FROM events WHERE run_id=? AND kind='output'"
        args: list[Any] = [run_id]
        rank_list = list(ranks) if ranks is not None else None
        if rank_list is not None:
            sql += f" AND rank IN ({','.join('?' * len(rank_list)) or 'NULL'})"
            args += rank_list
        if stream:
            sql += " AND stream=?"
            args.append(stream)
        if search:
            escaped = search.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            sql += " AND text LIKE ? ESCAPE '\\'"
            args.append(f"%{escaped}%")
        if before is not None:
            sql += " AND seq < ? ORDER BY seq DESC LIMIT ?"
            args += [before, limit]
            rows = list(reversed(self._query(sql, args)))
        else:
            sql += " AND seq > ? ORDER BY seq LIMIT ?"
            args += [after, limit]
            rows = self._query(sql, args)
        return [LogLine(*row) for row in rows]

    def metrics(
        self, run_id: str, after: int = 0, limit: int = 10_000
    ) -> list[tuple[int, MetricEvent]]:
        rows = self._query(
            "SELECT seq, data FROM events WHERE run_id=? AND kind='metric' AND seq > ?"
            " ORDER BY seq LIMIT ?",
            (run_id, after, limit),
        )
        out: list[tuple[int, MetricEvent]] = []
        for seq, data in rows:
            d = json.loads(data)
            out.append((seq, MetricEvent(run_id, d["rank"], d["t"], d["values"])))
        return out

    def errors(self, run_id: str) -> list[ErrorEvent]:
        from .errors import RankFailure

        rows = self._query(
            "SELECT data FROM events WHERE run_id=? AND kind='error' ORDER BY t", (run_id,)
        )
        return [
            ErrorEvent(run_id, RankFailure.from_json(json.loads(r[0])["failure"])) for r in rows
        ]

    def events_after(
        self, seq: int, run_id: str | None = None, limit: int = 1000
    ) -> list[tuple[int, dict[str, Any]]]:
        """Every kind of event after ``seq``, as JSON dicts (the live stream's source)."""
        sql = "SELECT seq, run_id, kind, rank, t, stream, text, data FROM events WHERE seq > ?"
        args: list[Any] = [seq]
        if run_id is not None:
            sql += " AND run_id=?"
            args.append(run_id)
        sql += " ORDER BY seq LIMIT ?"
        args.append(limit)
        out: list[tuple[int, dict[str, Any]]] = []
        for s, rid, kind, rank, t, stream, text, data in self._query(sql, args):
            if kind == "output":
                out.append(
                    (
                        s,
                        {
                            "kind": kind,
                            "run_id": rid,
                            "rank": rank,
                            "t": t,
                            "stream": stream,
                            "text": text,
                        },
                    )
                )
            else:
                out.append((s, json.loads(data)))
        return out

    def last_seq(self) -> int:
        row = self._query("SELECT COALESCE(MAX(seq), 0) FROM events")
        return int(row[0][0])


def _run(row: tuple[Any, ...]) -> RunRecord:
    (
        id_,
        cluster_id,
        backend,
        world_size,
        ranks,
        state,
        spec,
        source,
        notebook,
        cell_id,
        host,
        kernel_pid,
        external_id,
        started,
        ended,
        message,
        summary,
    ) = row
    return RunRecord(
        id=id_,
        cluster_id=cluster_id or "",
        backend=backend,
        world_size=world_size,
        ranks=json.loads(ranks or "[]"),
        state=RunState(state),
        spec=json.loads(spec or "{}"),
        source=source or "",
        notebook=notebook or "",
        cell_id=cell_id or "",
        host=host or "",
        kernel_pid=kernel_pid,
        external_id=external_id or "",
        started=started,
        ended=ended,
        message=message or "",
        summary=json.loads(summary or "{}"),
    )
