"""How events lie in the ``events`` table: output lines and metric samples in groups, the rest
one row each.

Every event has its own ``seq`` (global, increasing): readers page and follow by it. A row holds
the events of one run, kind, rank and stream that one batch wrote, in seq order; its ``seq`` (the
rowid) is its last event's and ``span`` how far before that its first one is. The events of
different rows interleave (rank 0's lines and rank 1's alternate), so readers merge rows in
seq order (:mod:`.eventmerge`); no row spans more than :data:`SPAN` seqs, which tells a reader
when no row it has not read yet can hold an earlier event. Grouping is what keeps the history
small: the run, kind, rank and stream are written once per row (as integer codes, see
``run_keys`` and ``codes``) instead of once per line, and one row costs one index entry.

In a group row, ``text`` is the lines joined by ``\\n`` (a line holding ``\\n`` gets a row of its
own), ``data`` a JSON list of the metric samples' values and ``gaps`` one pair of varints per
event after the first: the seq step minus one, and the time step in microseconds (zigzag). ``t``
is the first event's time, exact; the others' are kept to the microsecond.

A new kind of event needs nothing here: :func:`item` stores it one row per event, its JSON in
``data``, and the live stream gives that JSON back. A kind that also shows in the logs gets a
``stream`` and ``text`` in :func:`item` and its name in ``queries.LOG_KINDS``.
"""

from __future__ import annotations

import itertools
import json
import sqlite3
from collections.abc import Iterable
from typing import Any, NamedTuple

from .events import DisplayEvent, Event, MetricEvent, OutputEvent, Stream

#: The most seqs one row's events span. Readers rely on it: never lower it.
SPAN = 4096

#: The most bytes of text (or metric JSON) and gaps in one row, about: two such rows fill a
#: 4 KiB page (SQLite's), where a longer row would spill into overflow pages and leave much of
#: its own page empty, and shorter ones cost more in their own keys and index entries.
ROW_BYTES = 2000

#: Kinds whose events of one rank (and stream) are grouped into rows.
GROUPED = ("output", "metric")

#: The columns readers select, in :class:`Row`'s order.
COLUMNS = "seq, span, run, kind, rank, stream, t, gaps, text, data"
_INSERT = f"INSERT INTO events ({COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?)"  # noqa: S608 - ours


class Item(NamedTuple):
    """One event as the table keeps it."""

    run_id: str
    kind: str
    rank: int | None
    t: float
    stream: str | None = None
    text: str | None = None
    data: str | None = None  # metric: the values' JSON; other kinds: the event's JSON


def item(ev: Event) -> Item:
    if isinstance(ev, OutputEvent):
        return Item(ev.run_id, ev.kind, ev.rank, ev.t, ev.stream.value, ev.text)
    if isinstance(ev, MetricEvent):
        return Item(ev.run_id, ev.kind, ev.rank, ev.t, data=json.dumps(ev.values))
    if isinstance(ev, DisplayEvent):  # the bundle in data, its mark as a log line
        data = json.dumps(ev.to_json())
        return Item(ev.run_id, ev.kind, ev.rank, ev.t, Stream.DISPLAY.value, ev.mark, data)
    return Item(ev.run_id, ev.kind, getattr(ev, "rank", None), ev.t, data=json.dumps(ev.to_json()))


# -- writing ---------------------------------------------------------------------------------


def append(db: sqlite3.Connection, items: Iterable[Item]) -> None:
    """Write ``items`` with the seqs after the last one; ``db`` is in a write transaction."""
    top = db.execute("SELECT COALESCE(MAX(seq), 0) FROM events").fetchone()[0]
    write(db, zip(itertools.count(top + 1), items))


def write(db: sqlite3.Connection, numbered: Iterable[tuple[int, Item]]) -> None:
    """Write items at the given (increasing) seqs, grouped into rows no wider than SPAN."""
    codes = _Codes(db)
    groups: dict[tuple[str, str, int | None, str | None], _Group] = {}
    rows: list[tuple[Any, ...]] = []
    start = None
    for seq, it in numbered:
        if start is None or seq - start >= SPAN:
            _flush(db, groups, rows, codes)
            start = seq
        if it.kind in GROUPED and not (it.text and "\n" in it.text):
            key = (it.run_id, it.kind, it.rank, it.stream)
            group = groups.get(key)
            if group is not None and not group.add(seq, it):
                rows.append(group.row(codes))
                group = None
            if group is None:
                groups[key] = _Group(seq, it)
        else:
            rows.append(_Group(seq, it).row(codes))
    _flush(db, groups, rows, codes)


def _flush(
    db: sqlite3.Connection,
    groups: dict[Any, _Group],
    rows: list[tuple[Any, ...]],
    codes: _Codes,
) -> None:
    rows.extend(group.row(codes) for group in groups.values())
    rows.sort(key=lambda r: int(r[0]))  # rowid order: appended to the table's end
    db.executemany(_INSERT, rows)
    groups.clear()
    rows.clear()


class _Group:
    """The events of one row being made."""

    __slots__ = ("first", "first_seq", "gaps", "items", "last_seq", "last_us", "size")

    def __init__(self, seq: int, it: Item) -> None:
        self.first, self.first_seq, self.last_seq = it, seq, seq
        self.last_us = round(it.t * 1e6)
        self.items = [it]
        self.gaps = bytearray()
        self.size = len((it.text or it.data or "").encode())

    def add(self, seq: int, it: Item) -> bool:
        """Add ``it`` unless the row would pass ROW_BYTES."""
        us = round(it.t * 1e6)
        mark = len(self.gaps)
        _varint(self.gaps, seq - self.last_seq - 1)
        _varint(self.gaps, _zigzag(us - self.last_us))
        size = self.size + len((it.text or it.data or "").encode()) + 1 + len(self.gaps) - mark
        if size > ROW_BYTES:
            del self.gaps[mark:]
            return False
        self.items.append(it)
        self.size, self.last_seq, self.last_us = size, seq, us
        return True

    def row(self, codes: _Codes) -> tuple[Any, ...]:
        first = self.first
        stream = codes.code(first.stream) if first.stream is not None else None
        run, kind = codes.run(first.run_id), codes.code(first.kind)
        span = self.last_seq - self.first_seq
        head = (self.last_seq, span, run, kind, first.rank, stream, first.t)
        if len(self.items) == 1:
            return (*head, None, first.text, first.data)
        if first.kind == "metric":
            data = "[" + ",".join(it.data or "{}" for it in self.items) + "]"
            return (*head, bytes(self.gaps), None, data)
        return (*head, bytes(self.gaps), "\n".join(it.text or "" for it in self.items), None)


def _zigzag(step: int) -> int:
    return step * 2 if step >= 0 else -step * 2 - 1


def _varint(out: bytearray, value: int) -> None:
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)


class _Codes:
    """The integer keys of run ids and of kind and stream names, made on first use."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db
        self.runs: dict[str, int] = {}
        self.names: dict[str, int] = {}

    def run(self, run_id: str) -> int:
        return self._key(self.runs, "run_keys", "key", "id", run_id)

    def code(self, name: str) -> int:
        return self._key(self.names, "codes", "code", "name", name)

    def _key(self, cache: dict[str, int], table: str, key: str, col: str, value: str) -> int:
        if value not in cache:
            sql = f"SELECT {key} FROM {table} WHERE {col}=?"  # noqa: S608 - our own names
            row = self.db.execute(sql, (value,)).fetchone()
            if row is None:
                self.db.execute(f"INSERT INTO {table} ({col}) VALUES (?)", (value,))  # noqa: S608
                row = self.db.execute(sql, (value,)).fetchone()
            cache[value] = int(row[0])
        return cache[value]
