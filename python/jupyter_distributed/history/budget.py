"""A bounded history: deleting a run, and the size budget that prunes the oldest finished runs.

Past its budget (``Distributed.history_max_mb``), the history first takes the log lines (output
and rich displays) of its oldest finished runs, keeping their summary, errors and metrics; then, if
that is not enough, whole runs, oldest first. A running run is never touched. Pruning goes down
to :data:`LOW_WATER` of the budget, so it happens once in a while, not at every cell. Each
pruning is recorded: in the summary of every run that lost its lines (``summary["pruned"]``) and
as a row of ``notices``, which the next cell shows once (:func:`take_notices`).

The size is the pages in use. A store created with incremental auto-vacuum (every new one) gives
the freed pages back to the file system at once; an older store is converted (rewritten by
``VACUUM``) the first time it is pruned where its disk has room for the rewrite; until then its
freed pages are reused by later writes, not returned.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import sqlite3
import threading
import time
from collections.abc import Iterable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..events import RunState
from . import storefile

#: Pruning stops once the pages in use are under this share of the budget.
LOW_WATER = 0.9

#: The kinds of event a pruned run loses first (its log lines); the rest stay.
LINE_KINDS = ("output", "display")

_FINISHED = tuple(s.value for s in RunState if s.finished)

#: :meth:`Bounds.keep_within` looks at the history's size again after this many seconds, or
#: once this writer recorded this many events since its last look (or the budget changed);
#: between, a cell costs no look at the store (issue 26: ~0.1 ms of a trivial cell's CPU)
LOOK_EVERY_S = 2.0
LOOK_EVERY_EVENTS = 1000
_INCREMENTAL = 2  # PRAGMA auto_vacuum


class Running(Exception):
    """The run is still running: it cannot be deleted."""


def used_bytes(db: sqlite3.Connection) -> int:
    """The bytes of the pages in use (the file's size less its free pages)."""
    pages = int(db.execute("PRAGMA page_count").fetchone()[0])
    free = int(db.execute("PRAGMA freelist_count").fetchone()[0])
    return (pages - free) * int(db.execute("PRAGMA page_size").fetchone()[0])


def delete(db: sqlite3.Connection, run_id: str) -> bool:
    """Delete a finished run and all it holds (ranks, events, probe pairs, leases); False when
    there is no such run. Raises :class:`Running` for a run not finished."""
    row = db.execute("SELECT state FROM runs WHERE id=?", (run_id,)).fetchone()
    if row is None:
        return False
    if row[0] not in _FINISHED:
        raise Running(f"run {run_id} is {row[0]}; stop it (or wait for its end) to delete it")
    _remove(db, run_id)
    return True


def _remove(db: sqlite3.Connection, run_id: str) -> None:
    db.execute("DELETE FROM events WHERE run=(SELECT key FROM run_keys WHERE id=?)", (run_id,))
    for table, column in (("ranks", "run_id"), ("probe_pairs", "run_id"), ("follows", "run_id")):
        db.execute(f"DELETE FROM {table} WHERE {column}=?", (run_id,))  # noqa: S608 - ours
    db.execute("DELETE FROM controls WHERE target=?", (run_id,))
    db.execute("DELETE FROM runs WHERE id=?", (run_id,))
    db.execute(  # its ranks' coordinates, where no other run's spans name them
        "DELETE FROM rank_sets WHERE id NOT IN (SELECT set_id FROM ranks WHERE set_id IS NOT NULL)"
    )
    # (its run_keys row stays: keys are never reused, and writers keep them in memory)


def prune(db: sqlite3.Connection, max_bytes: int, now: float) -> str | None:
    """Within the open write transaction, bring the history under ``max_bytes``; returns the
    notice it recorded, or None when the history was within its budget."""
    if used_bytes(db) <= max_bytes:
        return None
    target = int(max_bytes * LOW_WATER)
    oldest = [
        str(r[0])
        for r in db.execute(
            f"SELECT id FROM runs WHERE state IN ({','.join('?' * len(_FINISHED))})"  # noqa: S608
            " ORDER BY started",
            _FINISHED,
        )
    ]
    stripped: list[str] = []
    for run_id in oldest:
        if used_bytes(db) <= target:
            break
        if _strip_lines(db, run_id, max_bytes, now):
            stripped.append(run_id)
    deleted: list[str] = []
    for run_id in oldest:
        if used_bytes(db) <= target:
            break
        _remove(db, run_id)
        deleted.append(run_id)
    stripped = [r for r in stripped if r not in deleted]
    text = _notice(stripped, deleted, max_bytes)
    db.execute("INSERT INTO notices (t, text, shown) VALUES (?, ?, NULL)", (now, text))
    return text


def _strip_lines(db: sqlite3.Connection, run_id: str, max_bytes: int, now: float) -> bool:
    marks = ",".join("?" * len(LINE_KINDS))
    sql = (
        "DELETE FROM events WHERE run=(SELECT key FROM run_keys WHERE id=?)"  # noqa: S608 - ours
        f" AND kind IN (SELECT code FROM codes WHERE name IN ({marks}))"
    )
    removed = db.execute(sql, (run_id, *LINE_KINDS)).rowcount
    if not removed:
        return False
    row = db.execute("SELECT summary FROM runs WHERE id=?", (run_id,)).fetchone()
    summary: dict[str, object] = {}
    with contextlib.suppress(ValueError, TypeError):
        loaded = json.loads(row[0] or "{}") if row else {}
        summary = loaded if isinstance(loaded, dict) else {}
    summary["pruned"] = {"t": now, "what": "log lines", "budget_mb": round(max_bytes / 2**20, 3)}
    db.execute("UPDATE runs SET summary=? WHERE id=?", (json.dumps(summary), run_id))
    return True


def _notice(stripped: list[str], deleted: list[str], max_bytes: int) -> str:
    def some(ids: list[str]) -> str:
        return ", ".join(ids[:3]) + (f" and {len(ids) - 3} more" if len(ids) > 3 else "")

    done = []
    if stripped:
        done.append(f"removed the log lines of {len(stripped)} old run(s) ({some(stripped)})")
    if deleted:
        done.append(f"deleted {len(deleted)} old run(s) ({some(deleted)})")
    what = "; ".join(done) or "found no finished run to prune"
    return (
        f"the history passed its {max_bytes / 2**20:.3g} MB budget "
        f"(%config Distributed.history_max_mb): {what}"
    )


def take_notices(db: sqlite3.Connection, now: float) -> list[str]:
    """The notices not shown yet, marked shown (within the open write transaction)."""
    rows = db.execute("SELECT id, text FROM notices WHERE shown IS NULL ORDER BY id").fetchall()
    if rows:
        db.execute("UPDATE notices SET shown=? WHERE shown IS NULL", (now,))
    return [str(text) for _, text in rows]


def give_back(db: sqlite3.Connection, path: Path) -> None:
    """After a pruning, outside any transaction: return the freed pages to the file system
    (converting an older store to incremental auto-vacuum where the disk has room)."""
    with contextlib.suppress(sqlite3.Error):
        if int(db.execute("PRAGMA auto_vacuum").fetchone()[0]) == _INCREMENTAL:
            db.executescript("PRAGMA incremental_vacuum;")  # (execute frees one page a step)
        elif has_room(path):
            db.execute("PRAGMA auto_vacuum=INCREMENTAL")
            db.execute("VACUUM")  # the rewrite: a copy of the store, in the WAL


def has_room(path: Path) -> bool:
    """Whether the store's disk can hold its rewrite (a copy of it, twice for the WAL)."""
    try:
        size = path.stat().st_size
        return shutil.disk_usage(path.parent).free > 2 * size + 64 * 2**20
    except OSError:
        return False


class Bounds:
    """Mixed into :class:`~.store.Store`, which provides what is declared here."""

    if TYPE_CHECKING:  # provided by Store
        path: Path
        _db: sqlite3.Connection
        _lock: threading.Lock
        recorded: int
        _looked: tuple[float, int, int]

        def _tx(self) -> AbstractContextManager[sqlite3.Connection]: ...

        def _reader(self) -> sqlite3.Connection: ...

        def _query(self, sql: str, args: Iterable[Any] = ()) -> list[tuple[Any, ...]]: ...

    def keep_within(self, max_bytes: int) -> list[str]:
        """Before a cell: :meth:`enforce_budget`, then :meth:`take_notices` (what any kernel's
        pruning did, said once); done at most every :data:`LOOK_EVERY_S` seconds unless this
        writer recorded :data:`LOOK_EVERY_EVENTS` events since, or the budget changed."""
        now = time.monotonic()
        last_t, last_count, last_max = self._looked
        if (
            now - last_t < LOOK_EVERY_S
            and self.recorded - last_count < LOOK_EVERY_EVENTS
            and max_bytes == last_max
        ):
            return []
        self._looked = (now, self.recorded, max_bytes)
        self.enforce_budget(max_bytes)
        return self.take_notices()

    def delete_run(self, run_id: str) -> bool:
        """Delete a finished run and all it holds; False when unknown. Raises
        :class:`Running` for a run not finished."""
        with self._tx() as db:
            return delete(db, run_id)

    def enforce_budget(self, max_bytes: int) -> str | None:
        """Prune the oldest finished runs when the history is past ``max_bytes``; returns the
        notice recorded, or None when it was within its budget (a read, no write lock)."""
        try:
            if used_bytes(self._reader()) <= max_bytes:
                return None
        except sqlite3.Error as exc:
            raise storefile.failed(self.path, exc) from exc
        with self._tx() as db:
            notice = prune(db, max_bytes, time.time())
        if notice is not None:
            with self._lock:
                give_back(self._db, self.path)
        return notice

    def take_notices(self) -> list[str]:
        """What the budget pruned since the last call (by any kernel), each said once."""
        if not self._query("SELECT 1 FROM notices WHERE shown IS NULL LIMIT 1"):
            return []
        with self._tx() as db:
            return take_notices(db, time.time())
