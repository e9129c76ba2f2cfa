"""Reading the ``events`` table back in seq order: rows decoded, their events merged.

The layout is :mod:`.eventrows`'s: a row holds one run's events of one kind, rank and stream, its
``seq`` is its last event's and no row spans more than :data:`~.eventrows.SPAN` seqs.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import json
import string
from collections.abc import Callable, Iterable, Iterator
from typing import Any, NamedTuple

from . import numruns
from .eventrows import SPAN

#: Searching ignores the case of ASCII letters, as SQLite's LIKE (which finds the rows) does.
FOLD = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)


class Stored(NamedTuple):
    """One event as read back; ``data`` is the decoded JSON (a metric sample: its values)."""

    seq: int
    run: int
    kind: str
    rank: int | None
    t: float
    stream: str
    text: str
    data: Any


class Row(NamedTuple):
    seq: int
    span: int
    run: int
    kind: int
    rank: int | None
    stream: int | None
    t: float
    gaps: bytes | None
    text: str | None
    data: str | None


def expand(
    row: Row,
    names: Callable[[int], str],
    after: int | None = None,
    before: int | None = None,
    needle: str | None = None,
) -> list[Stored]:
    """The events of one row between ``after`` and ``before`` (exclusive), in seq order; with
    ``needle`` (case folded by :data:`FOLD`), only the lines that hold it."""
    kind = names(row.kind)
    stream = names(row.stream) if row.stream is not None else ""
    if row.gaps is None:
        seqs, times = [row.seq], [row.t]
    else:
        # (no gaps in a row of many: consecutive seqs at one time, layout 8's rank states)
        steps = _varints(row.gaps) if row.gaps or not row.span else [0] * (2 * row.span)
        seqs, times = [row.seq - row.span], [row.t]
        seq, us = seqs[0], round(row.t * 1e6)
        for i in range(0, len(steps), 2):
            seq += steps[i] + 1
            step = steps[i + 1]
            us += -(step >> 1) - 1 if step & 1 else step >> 1
            seqs.append(seq)
            times.append(us / 1e6)
    lo = bisect.bisect_right(seqs, after) if after is not None else 0
    hi = bisect.bisect_left(seqs, before) if before is not None else len(seqs)
    if lo >= hi:
        return []
    texts = row.text.split("\n") if row.text is not None and row.gaps is not None else []
    chosen: Iterable[int] = range(lo, hi)
    if needle is not None:
        folded = (row.text or "").translate(FOLD)
        if needle not in folded:
            return []
        if texts:
            lines = folded.split("\n")
            chosen = [i for i in chosen if needle in lines[i]]
    if row.gaps is None:
        data = _json(row.data)
        if row.data and data is None:
            return []  # a damaged row: its event is skipped, the others are read
        return [Stored(row.seq, row.run, kind, row.rank, row.t, stream, row.text or "", data)]
    datas: list[Any] = _json(row.data) or [] if row.data else []
    if row.rank is None and kind == "rank" and isinstance(datas, list):
        datas = _spread(datas)
    if row.data and len(datas) != len(seqs):
        return []  # a damaged group of metric samples
    if row.rank is None and kind == "rank":  # rank states of several ranks (staterows.States)
        return [_state(seqs[i], row.run, times[i], datas[i]) for i in chosen]
    return [
        Stored(
            seqs[i],
            row.run,
            kind,
            row.rank,
            times[i],
            stream,
            texts[i] if texts else "",
            datas[i] if datas else None,
        )
        for i in chosen
    ]


def _spread(states: list[Any]) -> list[Any]:
    """An ``staterows.States`` row's states, each span's (``{"first", "last", "states",
    "host", "pids"}``, layout 7; its pids as runs of numbers from layout 8) spread into each
    of its ranks' ``[rank, state, host, pid]``, rank by rank; a damaged span is left as it is
    (read as an event of no rank)."""
    if not any(isinstance(s, dict) for s in states):
        return states
    out: list[Any] = []
    for s in states:
        try:
            first, host, pids = s["first"], s["host"], numruns.unpack(s["pids"])
            if len(pids) != s["last"] - first + 1:
                raise ValueError(s)
            out.extend([first + i, state, host, pid] for i, pid in enumerate(pids)
                       for state in s["states"])  # fmt: skip
        except (TypeError, KeyError, ValueError):  # (an old state's list, or a damaged span)
            out.append(s)
    return out


def _state(seq: int, run: int, t: float, state: Any) -> Stored:
    """One state of an ``staterows.States`` row, ``[rank, state, host, pid]``, as its rank
    event's JSON would be read back (its ``run_id`` left to the reader, who knows the run)."""
    try:
        rank, value, host, pid = state
        data = {"kind": "rank", "rank": rank, "t": t, "state": value, "host": host, "pid": pid}
    except (TypeError, ValueError):  # a damaged state: read as an event of no rank
        rank, data = None, None
    return Stored(seq, run, "rank", rank if isinstance(rank, int) else None, t, "", "", data)


def _json(text: str | None) -> Any:
    """A row's JSON; None where it is damaged (not JSON)."""
    try:
        return json.loads(text) if text else None
    except (ValueError, RecursionError):
        return None


def _varints(blob: bytes) -> list[int]:
    out: list[int] = []
    value = shift = 0
    for b in blob:
        value |= (b & 0x7F) << shift
        if b & 0x80:
            shift += 7
        else:
            out.append(value)
            value = shift = 0
    return out


def merged(
    rows: Iterator[tuple[Any, ...]],
    names: Callable[[int], str],
    limit: int,
    *,
    after: int = 0,
    before: int | None = None,
    needle: str | None = None,
) -> list[Stored]:
    """The first ``limit`` events after ``after`` (``rows`` by ascending ``seq``, all with
    ``seq > after``) or, with ``before``, the last ``limit`` before it (``rows`` by descending
    ``seq``, all with ``seq < before + SPAN``), in seq order; with ``needle``, only the lines
    holding it (see :func:`expand`).

    A k-way merge of the rows' events: a row is decoded only once its first event is next, and
    an event is given once no row not read yet can hold an earlier one."""
    down = before is not None
    sign = -1 if down else 1
    heap: list[tuple[int, int, Any]] = []  # (signed seq, tiebreak, Row | decoded events)
    tie = itertools.count()
    horizon = 0  # signed seqs below it can come from no row not read yet
    exhausted = False
    out: list[Stored] = []
    while len(out) < limit:
        if heap and (exhausted or heap[0][0] < horizon):
            _, _, entry = heapq.heappop(heap)
            if isinstance(entry, Row):
                lo, hi = (None, before) if down else (after, None)
                events = expand(entry, names, lo, hi, needle)
                if down:
                    events.reverse()
                if events:
                    heapq.heappush(heap, (sign * events[0].seq, next(tie), (events, 0)))
                continue
            events, i = entry
            # give this row's events while they come first
            while i < len(events) and len(out) < limit:
                key = sign * events[i].seq
                if (heap and key > heap[0][0]) or not (exhausted or key < horizon):
                    heapq.heappush(heap, (key, next(tie), (events, i)))
                    break
                out.append(events[i])
                i += 1
        elif exhausted:
            break
        else:
            raw = next(rows, None)
            if raw is None:
                exhausted = True
                continue
            row = Row(*raw)
            key = -row.seq if down else row.seq - row.span
            heapq.heappush(heap, (key, next(tie), row))
            # rows not read yet end before this one (going down), or begin at most SPAN - 1
            # seqs before their end, which is after this one's (going up)
            horizon = -row.seq + 1 if down else row.seq - SPAN + 2
    if down:
        out.reverse()
    return out
