"""Read queries on the history: what the line magic, the server and the panel ask for.

Mixed into :class:`~.store.Store`, which provides ``_query`` and ``_rows``.
How the events lie in their table: :mod:`.eventrows`; how they are read back in order:
:mod:`.eventmerge`.
"""

from __future__ import annotations

import bisect
import dataclasses
import json
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from ..events import MetricEvent, StacksEvent
from . import eventrows, probestore, rankspans
from .eventmerge import FOLD, Stored, merged
from .records import LogLine, RankRecord, RunRecord, _run, loads

#: The kinds of event the logs show.
LOG_KINDS: tuple[str, ...] = ("output", "display")


class Queries:
    if TYPE_CHECKING:  # provided by Store

        def _query(self, sql: str, args: Iterable[Any] = ()) -> list[tuple[Any, ...]]: ...

        def _rows(
            self, sql: str, args: Iterable[Any] = ()
        ) -> AbstractContextManager[Iterator[tuple[Any, ...]]]: ...

    # -- reading ---------------------------------------------------------------------------

    def runs(
        self, limit: int = 50, before: float | None = None, sweep_id: str | None = None
    ) -> list[RunRecord]:
        """Newest first; ``before`` pages by start time; ``sweep_id``: one sweep's runs. A
        probe's pairs are counted, not read (``summary["probe"]["pair_count"]``); :meth:`run`
        reads them."""
        sql = "SELECT * FROM runs WHERE 1=1"
        args: list[Any] = []
        if before is not None:
            sql += " AND started < ?"
            args.append(before)
        if sweep_id is not None:
            sql += " AND sweep_id = ?"
            args.append(sweep_id)
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
        run = _run(rows[0])
        if probestore.counted(run.summary):  # the one run: its probe whole, pairs and all
            pairs = self._query("SELECT pairs FROM probe_pairs WHERE run_id=?", (run.id,))
            if pairs:
                run = dataclasses.replace(run, summary=probestore.whole(run.summary, pairs[0][0]))
        return run

    def ranks(self, run_id: str) -> list[RankRecord]:
        rows = self._query(
            "SELECT rank, host, pid, state, coords, updated, heartbeat, last, set_id FROM ranks"
            " WHERE run_id=? ORDER BY rank",
            (run_id,),
        )
        ids = {r[8] for r in rows if r[7] is not None}
        sets = {
            i: json.loads(data)
            for i, data in self._query(
                f"SELECT id, data FROM rank_sets WHERE id IN ({','.join('?' * len(ids))})",  # noqa: S608
                ids,
            )
        }
        rows = rankspans.expand(rows, sets) if ids else [r[:7] for r in rows]
        return [
            RankRecord(r[0], r[1] or "", r[2], r[3], loads(r[4], {}, [], "coords"), r[5], r[6])
            for r in rows
        ]

    def rank_hosts(self, run_id: str) -> dict[int, str]:
        """Each rank's host where known (the live stream's nodes): :meth:`ranks`' hosts without
        reading the rest (a span of ranks is on one host, :mod:`.rankspans`)."""
        rows = self._query("SELECT rank, last, host FROM ranks WHERE run_id=?", (run_id,))
        return {
            rank: host
            for first, last, host in rows
            if host
            for rank in range(first, (first if last is None else last) + 1)
        }

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
        before ``before``), filtered by rank, stream and a case-insensitive substring. A rich
        display is one line of stream ``display``: its mark ("image/png 640×480")."""
        where, args = self._of_run(run_id, LOG_KINDS)
        rank_list = list(ranks) if ranks is not None else None
        if rank_list is not None:
            where += f" AND rank IN ({','.join('?' * len(rank_list)) or 'NULL'})"
            args += rank_list
        if stream:
            where += " AND stream=(SELECT code FROM codes WHERE name=?)"
            args.append(stream)
        needle = None
        if search:  # rows holding it somewhere, then the lines that hold it (ASCII case folded)
            escaped = search.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            where += " AND text LIKE ? ESCAPE '\\'"
            args.append(f"%{escaped}%")
            needle = search.translate(FOLD)
        events = self._merged(where, args, limit, after=after, before=before, needle=needle)
        return [LogLine(e.seq, e.rank or 0, e.t, e.stream, e.text) for e in events]

    def display(self, run_id: str, seq: int) -> dict[str, Any] | None:
        """The rich display recorded as event ``seq`` of a run (its bundle and mark)."""
        where, args = self._of_run(run_id, ("display",))
        rows = self._query(f"SELECT data FROM events WHERE {where} AND seq=?", [*args, seq])  # noqa: S608
        found = loads(rows[0][0], {}, [], "display") if rows else None
        return found or None  # (a damaged one is not found)

    def metrics(
        self, run_id: str, after: int = 0, limit: int = 10_000
    ) -> list[tuple[int, MetricEvent]]:
        where, args = self._of_run(run_id, ("metric",))
        return [
            (e.seq, MetricEvent(run_id, e.rank or 0, e.t, e.data))
            for e in self._merged(where, args, limit, after=after)
        ]

    def stacks(self, run_id: str, after: int = 0) -> list[tuple[int, StacksEvent]]:
        """The run's stack snapshots (diagnosis and every thread of each rank), oldest first."""
        where, args = self._of_run(run_id, ("stacks",))
        out = []
        for e in self._merged(where, args, 1000, after=after):
            d = dict(e.data or {})
            ranks = {int(r): dict(s) for r, s in dict(d.get("ranks") or {}).items()}
            event = StacksEvent(run_id, e.t, str(d["reason"]), str(d["diagnosis"]), ranks)
            out.append((e.seq, event))
        return out

    def events_after(
        self, seq: int, run_id: str | None = None, limit: int = 1000
    ) -> list[tuple[int, dict[str, Any]]]:
        """Every kind of event after ``seq``, as JSON dicts (the live stream's source)."""
        return [(e.seq, event_json(e, rid)) for rid, e in self.stored_after(seq, run_id, limit)]

    def stored_after(
        self, seq: int, run_id: str | None = None, limit: int = 1000
    ) -> list[tuple[str, Stored]]:
        """The events of :meth:`events_after` as read, each with its run's id (for a reader
        that writes them as it likes: the live stream's batches per node)."""
        where, args = self._of_run(run_id, ()) if run_id is not None else ("1", [])
        events = self._merged(where, args, limit, after=seq)
        if run_id is not None:
            return [(run_id, e) for e in events]
        return [(self._run_id(e.run), e) for e in events]

    def _of_run(self, run_id: str, kinds: tuple[str, ...]) -> tuple[str, list[Any]]:
        """A WHERE clause for a run's events of ``kinds`` (all kinds if empty)."""
        where = "run=(SELECT key FROM run_keys WHERE id=?)"
        if kinds:
            marks = ",".join("?" * len(kinds))
            where += f" AND kind IN (SELECT code FROM codes WHERE name IN ({marks}))"  # noqa: S608
        return where, [run_id, *kinds]

    def _merged(
        self,
        where: str,
        args: list[Any],
        limit: int,
        *,
        after: int = 0,
        before: int | None = None,
        needle: str | None = None,
    ) -> list[Stored]:
        """The events of the rows matching ``where``, in seq order (see eventmerge.merged).

        Rows that hold no event of the range asked are left to SQLite to skip (their first
        seq, ``seq - span``, is past it): the merge must see every row that may hold an
        earlier event, up to :data:`~.eventrows.SPAN` seqs ahead, and where each row holds
        one event (thousands of ranks, a line or a sample each now and then) that was ~4
        rows read and decoded for each event given. Going up, the seqs are read in windows
        (of ``limit`` seqs, then twice as many each time) up to the last seq there was at
        the start, as one statement at that moment would have read them."""
        cols = f"SELECT {eventrows.COLUMNS} FROM events WHERE {where}"  # noqa: S608
        if before is not None:
            sql = f"{cols} AND seq < ? AND seq - span < ? ORDER BY seq DESC"
            with self._rows(sql, [*args, before + eventrows.SPAN, before]) as rows:
                return merged(rows, self._name, limit, after=after, before=before, needle=needle)
        top = self.last_seq()
        sql = f"{cols} AND seq > ? AND seq < ? AND seq - span <= ? ORDER BY seq"
        out: list[Stored] = []
        window = max(limit, 1)
        while len(out) < limit and after < top:
            end = min(after + window, top)
            with self._rows(sql, [*args, after, end + eventrows.SPAN, end]) as rows:
                got = merged(rows, self._name, limit - len(out), after=after, needle=needle)
            # rows that begin past ``end`` were not read: their events may come first there
            out.extend(got[: bisect.bisect_right([e.seq for e in got], end)])
            after, window = end, 2 * window
        return out

    def _name(self, code: int) -> str:
        """The kind or stream name of a code (codes are never changed, only added)."""
        names: dict[int, str] = getattr(self, "_names", {})
        if code not in names:
            names = dict(self._query("SELECT code, name FROM codes"))
            self._names = names
        return names.get(code, "")

    def _run_id(self, key: int) -> str:
        """The id of a run key (keys are never changed, only added)."""
        ids: dict[int, str] = getattr(self, "_run_ids", {})
        if key not in ids:
            ids = {**ids, **dict(self._query("SELECT key, id FROM run_keys WHERE key=?", (key,)))}
            self._run_ids = ids
        return ids.get(key, "")

    def last_seq(self) -> int:
        row = self._query("SELECT COALESCE(MAX(seq), 0) FROM events")
        return int(row[0][0])


def event_json(e: Stored, run_id: str) -> dict[str, Any]:
    """An event read back as its JSON (``events.py``'s ``to_json``); a display as its mark, a
    log line of stream ``display``."""
    if e.kind in LOG_KINDS:
        event = {"kind": "output", "run_id": run_id, "rank": e.rank, "t": e.t}
        return {**event, "stream": e.stream, "text": e.text}
    if e.kind == "metric":
        return {"kind": e.kind, "run_id": run_id, "rank": e.rank, "t": e.t, "values": e.data}
    if e.kind == "rank" and e.data and "run_id" not in e.data:  # (staterows.States)
        return {"kind": "rank", "run_id": run_id, **e.data}
    return dict(e.data or {})
