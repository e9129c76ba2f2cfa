"""Coordination through the history: who follows an external job, and control requests.

Mixed into :class:`~jupyter_distributed.history.store.Store`, which provides ``_tx`` and ``_query``.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from ..errors import NotFound
from ..pids import pid_alive
from .records import Control

#: A follow lease whose holder has not renewed it for this long may be taken over.
LEASE_STALE_AFTER = 30.0

CONTROL_ACTIONS = ("cancel", "stop", "stacks")  # stacks: of a running run's ranks


class Coordination:
    if TYPE_CHECKING:  # provided by Store

        def _tx(self) -> AbstractContextManager[sqlite3.Connection]: ...

        def _query(self, sql: str, args: Iterable[Any] = ()) -> list[tuple[Any, ...]]: ...

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

    def request_control(self, target_id: str, action: str, rank: int | None = None) -> Control:
        """Queue ``cancel`` or ``stacks`` (target: a run id; ``rank``: the one rank whose stacks
        to take) or ``stop`` (target: a cluster id) for the kernel that owns the cluster; it
        polls :meth:`take_controls`. Raises NotFound if the run or cluster is not in the
        history, ValueError for an unknown action."""
        if action not in CONTROL_ACTIONS:
            raise ValueError(f"unknown control action {action!r}; use one of {CONTROL_ACTIONS}")
        sql = (
            "SELECT cluster_id FROM runs WHERE id=?"
            if action in ("cancel", "stacks")
            else "SELECT cluster_id FROM runs WHERE cluster_id=? LIMIT 1"
        )
        with self._tx() as db:
            row = db.execute(sql, (target_id,)).fetchone()
            if row is None:
                what = "cluster" if action == "stop" else "run"
                raise NotFound(f"no {what} {target_id!r} in the history")
            now = time.time()
            cur = db.execute(
                "INSERT INTO controls (cluster_id, target, action, t, rank) VALUES (?,?,?,?,?)",
                (row[0], target_id, action, now, rank),
            )
            return Control(int(cur.lastrowid or 0), row[0], target_id, action, now, rank)

    def take_controls(self, cluster_id: str) -> list[Control]:
        """The requests for ``cluster_id`` not taken yet, oldest first; marks them taken.
        Cheap when there are none (a read, no write lock): kernels poll it."""
        if not self._query(
            "SELECT 1 FROM controls WHERE cluster_id=? AND taken IS NULL LIMIT 1", (cluster_id,)
        ):
            return []
        with self._tx() as db:
            rows = db.execute(
                "SELECT id, cluster_id, target, action, t, rank FROM controls"
                " WHERE cluster_id=? AND taken IS NULL ORDER BY id",
                (cluster_id,),
            ).fetchall()
            if rows:
                db.execute(
                    "UPDATE controls SET taken=? WHERE cluster_id=? AND taken IS NULL AND id<=?",
                    (time.time(), cluster_id, rows[-1][0]),
                )
        return [Control(*row) for row in rows]
