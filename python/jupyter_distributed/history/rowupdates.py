"""What a batch of events changes in the ``runs`` and ``ranks`` rows (the history's summary of
each run and rank, beside the events themselves).

Changes are applied in the batch's order; consecutive changes of one kind go to SQLite as one
statement (a cell's end on 8 ranks is one ``executemany``, not 8 statements). A rank's state
that a later state of the same batch sets again is not applied at all (its event is kept): a
cell's ``running`` and ``done`` arriving together are one row update.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from ..events import ErrorEvent, Event, RankEvent, RankStates, RunEvent, StateSpan
from ..kept import Kept
from . import rankspans
from .rankshape import Sets, Spans

_RUN = "UPDATE runs SET state=?, ended=COALESCE(?, ended), message=? WHERE id=?"
_RANK = (
    "UPDATE ranks SET state=?, updated=?, host=CASE WHEN ?='' THEN host ELSE ? END,"
    " pid=COALESCE(?, pid) WHERE run_id=? AND rank=?"
)
_FAILED = "UPDATE ranks SET state='failed', updated=? WHERE run_id=? AND rank=?"
#: A run of ranks' rows whose host and pid are known (see RowUpdates._states).
_RANGE = (
    "UPDATE ranks SET state=?, updated=? WHERE run_id=? AND rank BETWEEN ? AND ?"
    " AND host=? AND pid IS NOT NULL AND last IS NULL"
)
RANGE_MIN = 8  # the fewest ranks set by one range statement


class RowUpdates:
    def __init__(self, events: Sequence[object]) -> None:
        # each rank's last state in the batch: (what set it, its host, its pid)
        self._last: dict[tuple[str, int], tuple[object, str, int | None]] = {}
        for e in events:
            if isinstance(e, RankEvent):
                self._last[e.run_id, e.rank] = (e, e.host, e.pid)
            elif isinstance(e, RankStates):  # (each state: its own tuple; spans: not kept)
                self._last.update(((e.run_id, s[0]), (s, s[2], s[3])) for s in e.states)
        self._ops: list[tuple[str, list[tuple[Any, ...]]]] = []

    def add(self, ev: Event | RankStates) -> None:
        """Note what ``ev`` changes (nothing for most kinds)."""
        if isinstance(ev, RankStates):
            self._states(ev)
            return
        if isinstance(ev, RunEvent):
            ended = ev.t if ev.state.finished else None
            self._op(_RUN, (ev.state.value, ended, ev.message, ev.run_id))
        elif isinstance(ev, RankEvent):
            if not self._overwritten(ev.run_id, ev.rank, ev, ev.host, ev.pid):
                row = (ev.state.value, ev.t, ev.host, ev.host, ev.pid, ev.run_id, ev.rank)
                self._op(_RANK, row)
        elif isinstance(ev, ErrorEvent):
            self._op(_FAILED, (ev.t, ev.run_id, ev.rank))

    def fold(
        self, run_id: str, spans: Spans
    ) -> tuple[dict[tuple[int, int], tuple[str, float]], tuple[str, Any, str] | None] | None:
        """What this batch sets on ``run_id``, a run created in the same transaction with the
        spans ``spans`` (see :class:`~.rankshape.Spans`), where that is only whole spans' states
        and the run's own: each span's last ``(state, updated)`` by its ``(first, last)``, and
        the run's last ``(state, ended, message)`` (None: unchanged). Those changes are then
        taken out of what :meth:`apply` does: the caller inserts the rows as they end (a
        cell's record written with its ends: inserts, no update of the rows just made).
        Anything else on the run (a rank of its own, an error): None, nothing taken. A range
        set on one host may cover several spans there (the root aggregator's one span over
        the nodes of one machine): each of them takes its state."""
        states: dict[tuple[int, int], tuple[str, float]] = {}
        run: tuple[str, Any, str] | None = None
        ops: list[tuple[str, list[tuple[Any, ...]]]] = []
        for sql, rows in self._ops:
            others = []
            for row in rows:
                if sql == _RUN and row[3] == run_id:
                    ended = row[1] if row[1] is not None else (run[1] if run else None)
                    run = (row[0], ended, row[2])
                elif sql == _RANGE and row[2] == run_id:
                    state, t, _, first, last, host, count, each = row
                    if host is None and isinstance(each, _Parts) and each.fold(spans, states):
                        continue  # (an aggregator's span across hosts: a span per node each)
                    parts = (  # (an aggregator's span across hosts: each of its spans)
                        [(first, last, host, count)]
                        if host is not None
                        else [(a[3], a[4], a[5], n) for a, n, _ in each()]
                    )
                    for first, last, host, count in parts:
                        tiles = spans.tiling(first, last, host)
                        if tiles is None or count != last - first + 1:
                            return None
                        states.update(dict.fromkeys(tiles, (state, t)))
                elif sql in (_RANK, _FAILED) and row[-2] == run_id:
                    return None
                else:
                    others.append(row)
            if others:
                ops.append((sql, others))
        self._ops = ops
        return states, run

    def apply(self, db: sqlite3.Connection, sets: Sets) -> None:
        """Apply the changes; a rank set alone is first split out of its span, if in one
        (see :mod:`.rankspans`)."""
        for sql, rows in self._ops:
            if sql != _RANGE:
                if sql != _RUN:
                    rankspans.single(db, sets, ((row[-2], row[-1]) for row in rows))
                db.executemany(sql, rows)
                continue
            for *args, count, each in rows:  # a range's rows as one statement, where it can
                if args[-1] is not None:
                    _set_range(db, sets, args, count, each)
                elif rankspans.set_range(db, sets, *args) != count:  # (across hosts: .parts)
                    for part in each():  # (a rank of it has a row of its own: host by host)
                        _set_range(db, sets, *part)

    def _states(self, ev: RankStates) -> None:
        """A reduction's states: a run of consecutive ranks ending in one state on one host
        is one statement (a node's ranks' ends: one, not one per rank). Where a rank's row
        lacks its pid or names another host, the range's ranks are set one by one instead. A
        row's pid is not compared: it came from the same :class:`~..interface.RankInfo` as
        the state's (a live rank's pid never changes: a rank started again loses the
        cluster, and its new process is not adopted)."""
        run_id, t = ev.run_id, ev.t
        run: list[tuple[Any, ...]] = []
        for state in ev.states:
            rank, value, host, pid = state
            if self._overwritten(run_id, rank, state, host, pid):
                continue
            row = (value.value, t, host, host, pid, run_id, rank)
            if run and (rank != run[-1][6] + 1 or row[:3] != run[-1][:3] or pid is None):
                self._range(run)
                run = []
            run.append(row)
        if run:
            self._range(run)
        spans = ev.spans  # (a tuple: a kept chunk, the same each cell; its shape kept too)
        shape = _SHAPES.get(spans, None, _shape) if type(spans) is tuple else _shape(spans, None)
        for start, stop, touching in shape:  # a span's last state, at once
            if touching:
                self._touching(run_id, t, list(spans[start:stop]))
                continue
            for one in _span_rows(run_id, t, spans[start]):
                self._op(_RANK, one)

    def _touching(self, run_id: str, t: float, spans: list[StateSpan]) -> None:
        """Spans of ranks that touch and end in one state (a node's each, of an aggregator's
        span across its nodes): one statement on any host, or where a rank of them has a row
        of its own, one per span (see :func:`_set_range`). ``spans`` is emptied."""
        if len(spans) == 1:
            args, count, each = _part(run_id, t, spans[0])
            self._op(_RANGE, (*args, count, each))
        elif spans:
            value, first, last = spans[0][2][-1].value, spans[0][0], spans[-1][1]
            parts = _Parts(run_id, t, list(spans))
            self._op(_RANGE, (value, t, run_id, first, last, None, last - first + 1, parts))
        spans.clear()

    def _range(self, rows: list[tuple[Any, ...]]) -> None:
        if len(rows) < RANGE_MIN:
            for row in rows:
                self._op(_RANK, row)
            return
        value, t, host, _, _, run_id, first = rows[0]
        self._op(_RANGE, (value, t, run_id, first, rows[-1][6], host, len(rows), lambda: rows))

    def _op(self, sql: str, row: tuple[Any, ...]) -> None:
        if self._ops and self._ops[-1][0] == sql:
            self._ops[-1][1].append(row)
        else:
            self._ops.append((sql, [row]))

    def _overwritten(self, run_id: str, rank: int, ev: object, host: str, pid: int | None) -> bool:
        """Whether the batch's last state of ``rank`` leaves its row as if ``ev`` (setting
        ``host`` and ``pid``) had been applied before it: every column ``ev`` sets is set again."""
        final, final_host, final_pid = self._last[run_id, rank]
        return final is not ev and final_host == host and final_pid == pid


def _shape(spans: Sequence[StateSpan], _: None) -> tuple[tuple[int, int, bool], ...]:
    """How a reduction's spans are set: ``(start, stop, True)`` for the spans ``start`` to
    ``stop`` (excluded) that touch and end in one state (one statement), ``(i, i + 1,
    False)`` for a span set rank by rank (under RANGE_MIN ranks, or a pid unknown)."""
    out: list[tuple[int, int, bool]] = []
    start = 0  # (the touching spans held: start to i)
    for i, (first, last, states, _host, pids) in enumerate(spans):
        if last - first + 1 < RANGE_MIN or None in pids:
            if start < i:
                out.append((start, i, True))
            out.append((i, i + 1, False))
            start = i + 1
            continue
        if start < i and (first != spans[i - 1][1] + 1 or states[-1] != spans[i - 1][2][-1]):
            out.append((start, i, True))
            start = i
    if start < len(spans):
        out.append((start, len(spans), True))
    return tuple(out)


#: a kept chunk's shape (see RowUpdates._states and :mod:`..kept`)
_SHAPES: Kept[Sequence[StateSpan], None, tuple[tuple[int, int, bool], ...]] = Kept()


class _Parts:
    """The spans of an aggregator's span across hosts (touching, ending in one state): each
    one's statement, made only where it is needed (called)."""

    __slots__ = ("run_id", "spans", "t")

    def __init__(self, run_id: str, t: float, spans: list[StateSpan]) -> None:
        self.run_id, self.t, self.spans = run_id, t, spans

    def __call__(self) -> list[tuple[tuple[Any, ...], int, Callable[[], list[tuple[Any, ...]]]]]:
        return [_part(self.run_id, self.t, span) for span in self.spans]

    def fold(self, spans: Spans, states: dict[tuple[int, int], tuple[str, float]]) -> bool:
        """Where each of these is one of a new run's ``spans`` (a node's on its host, 1,250
        at 10,000 ranks: no statement made of each), set each one's state in ``states``;
        False where one is not (the caller then looks at them one by one)."""
        starts = spans.starts
        if not all(starts.get(s[0]) == (s[1], s[3]) for s in self.spans):
            return False
        end = (self.spans[0][2][-1].value, self.t)  # (all end in one state)
        states.update(dict.fromkeys([(s[0], s[1]) for s in self.spans], end))
        return True


def _part(
    run_id: str, t: float, span: StateSpan
) -> tuple[tuple[Any, ...], int, Callable[[], list[tuple[Any, ...]]]]:
    """A span's range statement's arguments, its count of ranks, its ranks' rows one by one."""
    first, last, states, host, _ = span
    args = (states[-1].value, t, run_id, first, last, host)
    return args, last - first + 1, partial(_span_rows, run_id, t, span)


def _set_range(
    db: sqlite3.Connection,
    sets: Sets,
    args: Sequence[Any],
    count: int,
    each: Callable[[], list[tuple[Any, ...]]],
) -> None:
    """A span's ranks on one host set in one statement where spans hold them, else in one for
    the rows of their own, else one by one."""
    held = rankspans.set_range(db, sets, *args)
    if held == count:  # (spans hold every rank of it: no row of its own is left)
        return
    if held + db.execute(_RANGE, args).rowcount != count:
        one_by_one = each()
        rankspans.single(db, sets, ((row[-2], row[-1]) for row in one_by_one))
        db.executemany(_RANK, one_by_one)


def _span_rows(run_id: str, t: float, span: StateSpan) -> list[tuple[Any, ...]]:
    """A span's ranks' rows set one by one, each to the span's last state."""
    first, _last, states, host, pids = span
    value = states[-1].value
    return [(value, t, host, host, pid, run_id, first + i) for i, pid in enumerate(pids)]
