"""How events lie in the ``events`` table: output lines and metric samples in groups, the rest
one row each.

Every event has its own ``seq`` (global, increasing): readers page and follow by it. A row holds
the events of one run, kind, rank and stream that one batch wrote, in seq order; its ``seq`` (the
rowid) is its last event's and ``span`` how far before that its first one is. The events of
different rows interleave (rank 0's lines and rank 1's alternate), so readers merge rows in
seq order (:mod:`.eventmerge`); no row spans more than :data:`SPAN` seqs, which tells a reader
when no row it has not read yet can hold an earlier event. Grouping is what keeps the history
small: the run, kind, rank and stream are written once per row (as integer codes, see
:mod:`.rowkeys`) instead of once per line, and one row costs one index entry.

In a group row, ``text`` is the lines joined by ``\\n`` (a line holding ``\\n`` gets a row of its
own), ``data`` a JSON list of the metric samples' values and ``gaps`` one pair of varints per
event after the first: the seq step minus one, and the time step in microseconds (zigzag). ``t``
is the first event's time, exact; the others' are kept to the microsecond.

A new kind of event needs nothing here: :func:`item` stores it one row per event, its JSON in
``data``, and the live stream gives that JSON back. A kind that also shows in the logs gets a
``stream`` and ``text`` in :func:`item` and its name in ``queries.LOG_KINDS``.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, NamedTuple

from ..events import DisplayEvent, Event, MetricEvent, OutputEvent, Stream
from .grouprows import ROW_BYTES, Group, Item
from .rowkeys import Codes, Keys
from .staterows import States, write_states

#: The most seqs one row's events span. Readers rely on it: never lower it.
SPAN = 4096

#: Kinds whose events of one rank (and stream) are grouped into rows.
GROUPED = ("output", "metric")

#: The columns readers select, in :class:`Row`'s order.
COLUMNS = "seq, span, run, kind, rank, stream, t, gaps, text, data"
_INSERT = f"INSERT INTO events ({COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?)"  # noqa: S608 - ours


def item(ev: Event) -> Item:
    if isinstance(ev, OutputEvent):
        return Item(ev.run_id, ev.kind, ev.rank, ev.t, ev.stream.value, ev.text)
    if isinstance(ev, MetricEvent):
        return Item(ev.run_id, ev.kind, ev.rank, ev.t, data=json.dumps(ev.values))
    if isinstance(ev, DisplayEvent):  # the bundle in data, its mark as a log line
        data = json.dumps(ev.to_json())
        return Item(ev.run_id, ev.kind, ev.rank, ev.t, Stream.DISPLAY.value, ev.mark, data)
    return Item(ev.run_id, ev.kind, getattr(ev, "rank", None), ev.t, data=ev.to_json_text())


# -- writing ---------------------------------------------------------------------------------


class Lines(NamedTuple):
    """A message's output lines of one run, rank and stream (the hot path of a flood): written
    into group rows at once, one seq per line, without an :class:`Item` per line."""

    run_id: str
    rank: int
    stream: str
    lines: Sequence[tuple[float, str]]


class Shared(NamedTuple):
    """The same lines of several ranks of one run and stream (a relay sent them once): each
    rank's lines, with its own times, written as :class:`Lines` would write them, one rank
    after the other; the common case (a rank's lines at one time, in one row) made once."""

    run_id: str
    ranks: Sequence[int]
    stream: str
    texts: Sequence[str]
    times: Sequence[Sequence[float]]  # each rank's times of its lines


class Batch(NamedTuple):
    """Several ranks' messages of output lines of one run, as a relay's batch brought them:
    each message written as its :class:`Lines` would be, the common case (its lines at one
    time, in one row, its rank's only message in the batch) made into its row at once."""

    run_id: str
    ranks: Sequence[int]
    streams: Sequence[str]
    texts: Sequence[Sequence[str]]
    times: Sequence[Sequence[float]]  # each message's: one per line, or one for all


Written = Item | Lines | States | Shared | Batch


def append(db: sqlite3.Connection, items: Iterable[Written], keys: Keys | None = None) -> None:
    """Write ``items`` with the seqs after the last one; ``db`` is in a write transaction."""
    top = db.execute("SELECT COALESCE(MAX(seq), 0) FROM events").fetchone()[0]
    write(db, _numbered(top + 1, items), keys)


def _numbered(seq: int, items: Iterable[Written]) -> Iterator[tuple[int, Written]]:
    for it in items:
        yield seq, it
        seq += (
            len(it.lines)
            if isinstance(it, Lines)
            else it.size()
            if isinstance(it, States)
            else len(it.ranks) * len(it.texts)
            if isinstance(it, Shared)
            else sum(map(len, it.texts))
            if isinstance(it, Batch)
            else 1
        )


def write(
    db: sqlite3.Connection, numbered: Iterable[tuple[int, Written]], keys: Keys | None = None
) -> None:
    """Write items at the given (increasing) seqs, grouped into rows no wider than SPAN; the
    lines of :class:`Lines` take one seq each from theirs on. ``keys``: those known already."""
    codes = Codes(db, keys)
    groups: dict[tuple[str, str, int | None, str | None], Group] = {}
    rows: list[tuple[Any, ...]] = []
    start = -SPAN
    for seq, it in numbered:
        if isinstance(it, Lines):
            start = _write_lines(db, seq, it, start, groups, rows, codes)
            continue
        if isinstance(it, States):
            flush = lambda: _flush(db, groups, rows, codes)  # noqa: E731
            start = write_states(seq, it, start, SPAN, flush, rows, codes)
            continue
        if isinstance(it, Shared):
            start = _write_shared(db, seq, it, start, groups, rows, codes)
            continue
        if isinstance(it, Batch):
            start = _write_batch(db, seq, it, start, groups, rows, codes)
            continue
        if seq - start >= SPAN:
            _flush(db, groups, rows, codes)
            start = seq
        if it.kind in GROUPED and not (it.text and "\n" in it.text):
            key = (it.run_id, it.kind, it.rank, it.stream)
            group = groups.get(key)
            if group is not None and not group.add(seq, it):
                rows.append(group.row(codes))
                group = None
            if group is None:
                groups[key] = Group(seq, it)
        else:  # (a row of its own: what Group(seq, it).row gives, without the group)
            stream = codes.code(it.stream) if it.stream is not None else None
            head = (seq, 0, codes.run(it.run_id), codes.code(it.kind), it.rank, stream, it.t)
            rows.append((*head, None, it.text, it.data))
    _flush(db, groups, rows, codes)


def _write_lines(
    db: sqlite3.Connection,
    seq: int,
    it: Lines,
    start: int,
    groups: dict[Any, Group],
    rows: list[tuple[Any, ...]],
    codes: Codes,
) -> int:
    """:func:`write`'s work for the lines of ``it`` (at ``seq`` on), a row at a time: the same
    rows as for one :class:`Item` per line. Returns where the current span starts."""
    i, count = 0, len(it.lines)
    key = (it.run_id, "output", it.rank, it.stream)
    if count > 1 and key not in groups and seq + count - 1 - start < SPAN:
        # (one read of a rank's pipe: one time, one row)
        group = Group.joined(seq, it.run_id, it.rank, it.stream, it.lines)
        if group is not None:
            groups[key] = group
            return start
    while i < count:  # (a row ends at its size, a span's end, or a line with a \n)
        if seq + i - start >= SPAN:
            _flush(db, groups, rows, codes)
            start = seq + i
        group = groups.get(key)
        if group is not None:
            added = group.extend(seq + i, it.lines, i, start + SPAN - seq)
            if added > i:
                i = added
                continue
            if "\n" not in it.lines[i][1]:  # the row is full: a new one
                rows.append(groups.pop(key).row(codes))
        t, text = it.lines[i]
        line = Item(it.run_id, "output", it.rank, t, it.stream, text)
        if "\n" in text:  # a row of its own
            rows.append(Group(seq + i, line).row(codes))
        else:
            groups[key] = Group(seq + i, line)
        i += 1
    return start


def _write_shared(
    db: sqlite3.Connection,
    seq: int,
    it: Shared,
    start: int,
    groups: dict[Any, Group],
    rows: list[tuple[Any, ...]],
    codes: Codes,
) -> int:
    """:func:`write`'s work for ``it``: each rank's lines as :func:`_write_lines` writes them;
    where a rank's lines are at one time, fit one row and start it, that row is made from the
    text joined once for every rank. Returns where the current span starts."""
    texts, n = it.texts, len(it.texts)
    size = sum(len(t) if t.isascii() else len(t.encode()) for t in texts) + 3 * (n - 1)
    joined = "\n".join(texts) if size <= ROW_BYTES - 16 and "\n" not in "".join(texts) else None
    run, kind, stream = codes.run(it.run_id), codes.code("output"), codes.code(it.stream)
    for i, (rank, times) in enumerate(zip(it.ranks, it.times, strict=True)):
        first = seq + i * n
        key = (it.run_id, "output", rank, it.stream)
        if (
            joined is None
            or key in groups
            or n < 2
            or times[0] != times[-1]
            or min(times) != max(times)
        ):
            lines = list(zip(times, texts, strict=True))
            start = _write_lines(
                db, first, Lines(it.run_id, rank, it.stream, lines), start, groups, rows, codes
            )
            continue
        if first + n - 1 - start >= SPAN:
            _flush(db, groups, rows, codes)
            start = first
        gaps = bytes(2 * (n - 1))  # (the next seq, the same time: zeros)
        rows.append((first + n - 1, n - 1, run, kind, rank, stream, times[0], gaps, joined, None))
    return start


def _write_batch(
    db: sqlite3.Connection,
    seq: int,
    it: Batch,
    start: int,
    groups: dict[Any, Group],
    rows: list[tuple[Any, ...]],
    codes: Codes,
) -> int:
    """:func:`write`'s work for ``it``: each message as :func:`_write_lines` writes it, the
    row of one whose lines are at one time and fit (its rank's only message in the batch)
    made from their text joined, at once. Returns where the current span starts."""
    run_id, run, kind = it.run_id, codes.run(it.run_id), codes.code("output")
    keys = list(zip(it.ranks, it.streams, strict=True))
    again = set() if len(set(keys)) == len(keys) else {k for k in keys if keys.count(k) > 1}
    for (rank, stream), texts, times in zip(keys, it.texts, it.times, strict=True):
        n, t = len(texts), times[0]
        joined = None
        if (run_id, "output", rank, stream) not in groups and (rank, stream) not in again:
            joined = "\n".join(texts)
            size = (len(joined) if joined.isascii() else len(joined.encode())) + 2 * (n - 1)
            if n > 1 and (
                times.count(t) != len(times) or size > ROW_BYTES or joined.count("\n") >= n
            ):
                joined = None
        if joined is None:
            at = times if len(times) == n else [t] * n
            lines = list(zip(at, texts, strict=True))
            start = _write_lines(
                db, seq, Lines(run_id, rank, stream, lines), start, groups, rows, codes
            )
        else:
            if seq + n - 1 - start >= SPAN:
                _flush(db, groups, rows, codes)
                start = seq
            gaps = bytes(2 * (n - 1)) if n > 1 else None  # (the next seq, the same time: zeros)
            rows.append(
                (seq + n - 1, n - 1, run, kind, rank, codes.code(stream), t, gaps, joined, None)
            )
        seq += n
    return start


def _flush(
    db: sqlite3.Connection,
    groups: dict[Any, Group],
    rows: list[tuple[Any, ...]],
    codes: Codes,
) -> None:
    rows.extend(group.row(codes) for group in groups.values())
    if not rows:
        return
    rows.sort(key=lambda r: int(r[0]))  # rowid order: appended to the table's end
    db.executemany(_INSERT, rows)
    groups.clear()
    rows.clear()
