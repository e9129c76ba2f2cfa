"""Read queries on the history: what the line magic, the server and the panel ask for.

Mixed into :class:`~jupyter_distributed.store.Store`, which provides ``_query``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from .errors import RankFailure
from .events import ErrorEvent, MetricEvent
from .records import LogLine, RankRecord, RunRecord, _run


class Queries:
    if TYPE_CHECKING:  # provided by Store

        def _query(self, sql: str, args: Iterable[Any] = ()) -> list[tuple[Any, ...]]: ...

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
