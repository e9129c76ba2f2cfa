"""A run's ``ranks`` rows as spans (issue 26): a cell on 1,000 ranks writes a row per node, not
one per rank.

A run's ranks are recorded, when it is created, as one row per span of consecutive ranks on
one host (``rank`` the first, ``last`` the last), in the same state; each rank's own host, pid
and coordinates are in a ``rank_sets`` row written once per cluster (its coordinates, which the
session makes once per cluster) and named by the span's ``set_id``. A rank whose row must
differ from its span's (its own state, a heartbeat, its coordinates set) is split out of the
span first, into a row of its own as it was always written (:func:`single`); a state set on a
whole span is one update (:func:`cut`). Readers get each rank's row back (:func:`expand`), the
same as when each rank had its own.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from . import rankshape

SPAN_MIN = 8  # the fewest ranks recorded as one span
_ANY = " WHERE run_id=? AND rank BETWEEN ? AND ? AND last IS NOT NULL"  # (on any host)
_WITHIN = _ANY + " AND host=?"
_HELD = "SELECT COALESCE(SUM(last - rank + 1), 0) FROM ranks" + _WITHIN  # noqa: S608 - ours
_SET = "UPDATE ranks SET state=?, updated=?" + _WITHIN  # noqa: S608 - ours
_HELD_ANY = "SELECT COALESCE(SUM(last - rank + 1), 0) FROM ranks" + _ANY  # noqa: S608 - ours
_SET_ANY = "UPDATE ranks SET state=?, updated=?" + _ANY  # noqa: S608 - ours
_SET_ONE = "UPDATE ranks SET state=?, updated=? WHERE run_id=? AND rank=? AND last=? AND host=?"
_COLUMNS = "run_id, rank, host, pid, state, coords, updated, heartbeat, last, set_id"
#: What a new run's spans are set to in its first transaction, given them (see rankshape.Spans).
Fold = Callable[[rankshape.Spans], dict[tuple[int, int], tuple[str, Any]] | None]
_INSERT = f"INSERT INTO ranks ({_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?)"  # noqa: S608 - ours


def create(
    db: sqlite3.Connection,
    run_id: str,
    ranks: list[int],
    coords: dict[int, dict[str, Any]] | None,
    started: float | None,
    sets: rankshape.Sets,
    fold: Fold | None = None,
) -> None:
    """Insert a new run's ``ranks`` rows: spans where :data:`SPAN_MIN` or more consecutive
    ranks share a host and a node, a row of its own for any other rank. A cluster's runs have
    the same rows but for their id and time: they are worked out once (kept in ``sets``).
    ``fold``, given the spans (kept with the rows' shapes), says the ``(state, updated)`` a span
    takes in the same transaction (by its ``(first, last)``; see ``RowUpdates.fold``): it is
    inserted in that state."""
    coords = coords or {}
    set_id = sets.of(db, coords) if coords and len(ranks) >= SPAN_MIN else None
    kept = sets.shapes
    if (
        kept is None
        or kept[0] is not coords
        or kept[2] != set_id
        or (kept[1] is not ranks and kept[1] != ranks)  # (a session gives the same list again)
    ):
        shapes = _shapes(ranks, coords, set_id)
        bounds = tuple((r[0], r[4]) for r in shapes if r[4] is not None)
        kept = sets.shapes = (coords, ranks, set_id, shapes, bounds, rankshape.Spans(shapes))
        sets.filled = False
    shapes = kept[3]
    ends = (fold(kept[5]) if fold else None) or {}
    start = ("starting", started)  # (a span that ends in the same transaction: as it ends)
    span = _one(ends, len(kept[4])) if ends else start
    if span is not None:  # (every span in one state: the rows copied from the template)
        if not sets.filled:
            rankshape.fill(db, shapes)
            sets.filled = True
        rankshape.copy(db, run_id, start, span)
    else:
        rows = []
        for r, h, p, c, la, s in shapes:
            state, updated = ends.get((r, la), start) if la is not None else start
            rows.append((run_id, r, h, p, state, c, updated, None, la, s))
        db.executemany(_INSERT, rows)
    sets.keep(run_id, kept[4])  # (the same tuple for a cluster's runs: never changed)


def _one(ends: dict[tuple[int, int], tuple[str, Any]], spans: int) -> tuple[str, Any] | None:
    """The one ``(state, updated)`` that ``ends`` give each of the ``spans`` spans, if so."""
    if len(ends) != spans:
        return None
    values = set(ends.values())
    return values.pop() if len(values) == 1 else None


def _shapes(
    ranks: list[int], coords: dict[int, dict[str, Any]], set_id: int | None
) -> list[tuple[Any, ...]]:
    """:func:`create`'s rows as ``(rank, host, pid, coords, last, set_id)``."""
    rows: list[tuple[Any, ...]] = []
    group: list[int] = []

    def flush() -> None:
        if len(group) >= SPAN_MIN and set_id is not None:
            host = coords.get(group[0], {}).get("host", "")
            rows.append((group[0], host, None, None, group[-1], set_id))
        else:
            rows.extend((r, *rankshape.coords_row(coords.get(r, {})), None, None) for r in group)

    def where(rank: int) -> tuple[Any, Any]:  # (a node's ranks are one span: its relay's)
        c = coords.get(rank, {})
        return c.get("host", ""), c.get("node_rank")

    for rank in ranks:
        if group and (rank != group[-1] + 1 or where(group[-1]) != where(rank)):
            flush()
            group = []
        group.append(rank)
    flush()
    return rows


def _own(
    run_id: str, rank: int, own: tuple[str, Any, str], state: str, updated: Any, heartbeat: Any
) -> tuple[Any, ...]:
    """A rank's row of its own, as every rank's was written before spans (``own``: its host,
    pid and coordinates' JSON)."""
    return (run_id, rank, own[0], own[1], state, own[2], updated, heartbeat, None, None)


def _spans(db: sqlite3.Connection, sets: rankshape.Sets, run_id: str) -> Sequence[tuple[int, int]]:
    """The run's spans' (first, last), in order (kept by the writer once read)."""
    bounds = sets.bounds.get(run_id)
    if bounds is None:
        sql = "SELECT rank, last FROM ranks WHERE run_id=? AND last IS NOT NULL ORDER BY rank"
        bounds = [(r[0], r[1]) for r in db.execute(sql, (run_id,))]
        sets.keep(run_id, bounds)
    return bounds


def _split(
    db: sqlite3.Connection,
    sets: rankshape.Sets,
    run_id: str,
    bounds: tuple[int, int],
    alone: set[int],
    starts: tuple[int, ...] = (),
) -> bool:
    """Replace ``span`` by a row of its own for each of ``alone`` and the pieces between them
    (a new piece also at each of ``starts``): spans, or rows of their own where shorter than
    :data:`SPAN_MIN`. False where the span is no longer there as kept (another writer
    split it): the run's spans are read again."""
    sql = "SELECT rank, last, host, state, updated, heartbeat, set_id FROM ranks"
    row = db.execute(sql + " WHERE run_id=? AND rank=?", (run_id, bounds[0])).fetchone()
    if row is None or row[1] != bounds[1]:
        sets.bounds.pop(run_id, None)
        return False
    first, last, host, state, updated, heartbeat, set_id = row
    rows: list[tuple[Any, ...]] = []
    piece: list[int] = []
    none = ("", None, "{}")

    def coords_of(rank: int) -> tuple[str, Any, str]:
        return sets.each(db, set_id).get(rank, none)

    def flush() -> None:
        if len(piece) >= SPAN_MIN:
            rows.append((run_id, piece[0], host, None, state, None, updated, heartbeat,
                         piece[-1], set_id))  # fmt: skip
        else:
            rows.extend(_own(run_id, r, coords_of(r), state, updated, heartbeat)
                        for r in piece)  # fmt: skip
        piece.clear()

    for rank in range(first, last + 1):
        if rank in alone:
            flush()
            rows.append(_own(run_id, rank, coords_of(rank), state, updated, heartbeat))
            continue
        if rank in starts:
            flush()
        piece.append(rank)
    flush()
    db.execute("DELETE FROM ranks WHERE run_id=? AND rank=?", (run_id, first))
    db.executemany(_INSERT, rows)
    kept = [b for b in sets.bounds.get(run_id, ()) if b != bounds]  # (a copy: see create)
    kept.extend((r[1], r[8]) for r in rows if r[8] is not None)
    kept.sort()
    sets.keep(run_id, kept)
    return True


def single(
    db: sqlite3.Connection, sets: rankshape.Sets, run_ranks: Iterable[tuple[str, int]]
) -> None:
    """Give each of these (run, rank) a row of its own, split out of its span if in one."""
    by_run: dict[str, set[int]] = {}
    for run_id, rank in run_ranks:
        by_run.setdefault(run_id, set()).add(rank)
    for run_id, ranks in by_run.items():
        order = sorted(ranks)
        for _ in range(2):  # (again where a span was not as kept)
            if all(
                _split(db, sets, run_id, span, alone)
                for span in list(_spans(db, sets, run_id))
                if (alone := set(order[bisect_left(order, span[0]) : bisect_right(order, span[1])]))
            ):
                break


def set_range(
    db: sqlite3.Connection,
    sets: rankshape.Sets,
    state: str,
    t: float,
    run_id: str,
    first: int,
    last: int,
    host: str | None,
) -> int:
    """Set the state of the spans within ``first..last`` on ``host`` (None: on any host, for
    an aggregator's span across its nodes: one statement for them all), after splitting any
    span that crosses either end; returns how many ranks they hold (the others in the range
    have rows of their own, or are on another host)."""
    for _ in range(2):  # (again where a span was not as kept)
        if all(
            _split(db, sets, run_id, span, set(), (first, last + 1))
            for span in _crossing(_spans(db, sets, run_id), first, last)
        ):
            break
    bounds = sets.bounds.get(run_id) or []
    if host is None:
        tiles = _tiles(bounds, first, last)  # (kept spans that hold every rank: one statement)
        if tiles and db.execute(_SET_ANY, (state, t, run_id, first, last)).rowcount == tiles:
            return last - first + 1
        ((held,),) = db.execute(_HELD_ANY, (run_id, first, last))
        if held:
            db.execute(_SET_ANY, (state, t, run_id, first, last))
        return int(held)
    args = (run_id, first, last, host)
    at = bisect_left(bounds, (first, last))
    kept = at < len(bounds) and bounds[at] == (first, last)  # one span: one statement
    if kept and db.execute(_SET_ONE, (state, t, *args)).rowcount == 1:
        return last - first + 1
    tiles = 0 if kept else _tiles(bounds, first, last)  # (several nodes' spans on one host)
    if tiles and db.execute(_SET, (state, t, *args)).rowcount == tiles:
        return last - first + 1
    ((held,),) = db.execute(_HELD, args)
    if held:
        db.execute(_SET, (state, t, *args))
    return int(held)


def _crossing(bounds: Sequence[tuple[int, int]], first: int, last: int) -> list[tuple[int, int]]:
    """The kept spans (``bounds``, sorted) that hold ``first`` or ``last`` and reach past it:
    at most two, found by bisection (a run's spans are one per node: 1,250 at 10,000 ranks)."""
    out: list[tuple[int, int]] = []
    for rank in (first, last):
        at = bisect_right(bounds, (rank, sys.maxsize)) - 1
        span = bounds[at] if at >= 0 else (rank + 1, rank)  # (none holds it)
        if span[0] <= rank <= span[1] and (span[0] < first or span[1] > last) and span not in out:
            out.append(span)
    return out


def _tiles(bounds: Sequence[tuple[int, int]], first: int, last: int) -> int:
    """How many of the kept spans ``bounds`` hold ``first..last`` exactly, one after the
    other (0: they do not)."""
    at = bisect_left(bounds, (first, first))
    expect, count = first, 0
    while at < len(bounds) and bounds[at][0] == expect and expect <= last:
        expect, count, at = bounds[at][1] + 1, count + 1, at + 1
    return count if expect == last + 1 else 0


def expand(
    rows: Iterable[tuple[Any, ...]], sets: dict[int, dict[str, Any]]
) -> list[tuple[Any, ...]]:
    """Each rank's ``(rank, host, pid, state, coords, updated, heartbeat)`` from rows of
    ``(rank, host, pid, state, coords, updated, heartbeat, last, set_id)``; ``sets``: the
    ``rank_sets`` rows' data by id."""
    out: list[tuple[Any, ...]] = []
    for rank, host, pid, state, coords, updated, heartbeat, last, set_id in rows:
        if last is None:
            out.append((rank, host, pid, state, coords, updated, heartbeat))
            continue
        data = sets.get(set_id, {})
        for r in range(rank, last + 1):
            c = data.get(str(r), {})
            out.append((r, c.get("host", ""), c.get("pid"), state, json.dumps(c), updated,
                        heartbeat))  # fmt: skip
    return out
