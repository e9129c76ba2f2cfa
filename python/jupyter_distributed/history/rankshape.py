"""What the history's writer keeps of a cluster's runs' ``ranks`` rows (issue 26): the
``rank_sets`` row of its coordinates, the rows' shapes as a template in its memory, their
spans, and the spans of its latest runs (:class:`Sets`).

Each cell on a live cluster inserts the same ``ranks`` rows (:mod:`.rankspans`) but for the
run's id, state and time: a row per node's span, 1,250 at 10,000 ranks on 8-rank hosts. Made
in Python and bound row by row (``executemany``) they cost ~2.2 µs each; copied by SQLite from a
template that the writer keeps in an in-memory database attached to its connection, one
``INSERT … SELECT`` for them all costs ~0.3 µs each. The template is written again where the
rows' shapes change (a new cluster); it is written in the transaction that first needs it, so
it rolls back with it. The history file holds the same rows as before.

The spans' bounds are kept with them too (:class:`Spans`): a cell's ends set on a range of
ranks find the spans that hold it at once, not by a walk over the 1,250 spans each cell.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Any

SCHEMA = "jd_kept"  # the attached in-memory database's name on the writer's connection
_COLUMNS = "rank, host, pid, coords, last, set_id"
_FILL = f"INSERT INTO {SCHEMA}.shape ({_COLUMNS}) VALUES (?,?,?,?,?,?)"  # noqa: S608 - ours
# (a span takes the spans' state and time, a rank of its own the other pair)
_COPY = (
    "INSERT INTO main.ranks (run_id, rank, host, pid, state, coords, updated, heartbeat, last,"  # noqa: S608
    " set_id) SELECT ?, rank, host, pid, CASE WHEN last IS NULL THEN ? ELSE ? END, coords,"
    " CASE WHEN last IS NULL THEN ? ELSE ? END, NULL, last, set_id"
    f" FROM {SCHEMA}.shape ORDER BY rowid"
)

Bounds = tuple[tuple[int, int], ...]
BOUNDS_KEPT = 64  # the runs whose spans the writer keeps (the latest: a cell writes its own)

#: the most tilings a :class:`Spans` keeps (then all are dropped at once)
TILINGS_KEPT = 4096


class Spans:
    """A cluster's runs' spans, kept with their rows' shapes: each one's last rank and host
    by its first rank, and the tilings asked of them."""

    def __init__(self, shapes: Sequence[tuple[Any, ...]]) -> None:
        self.starts = {r[0]: (r[4], r[1]) for r in shapes if r[4] is not None}
        self._tilings: dict[tuple[int, int, str], tuple[tuple[int, int], ...] | None] = {}

    def __len__(self) -> int:
        return len(self.starts)

    def tiling(self, first: int, last: int, host: str) -> tuple[tuple[int, int], ...] | None:
        """The spans on ``host`` that hold ``first..last`` exactly, one after the other, as
        ``(first, last)`` each; None where they do not."""
        key = (first, last, host)
        if key in self._tilings:
            return self._tilings[key]
        tiles: list[tuple[int, int]] | None = []
        at = first
        while tiles is not None and at <= last:
            span = self.starts.get(at)
            if span is None or span[1] != host or span[0] > last:
                tiles = None
            else:
                tiles.append((at, span[0]))
                at = span[0] + 1
        if len(self._tilings) >= TILINGS_KEPT:
            self._tilings.clear()
        made = self._tilings[key] = tuple(tiles) if tiles is not None else None
        return made


def attach(db: sqlite3.Connection) -> None:
    """Give the writer's connection its template (outside any transaction)."""
    db.execute(f"ATTACH DATABASE ':memory:' AS {SCHEMA}")
    db.execute(f"CREATE TABLE {SCHEMA}.shape ({_COLUMNS})")


def fill(db: sqlite3.Connection, shapes: Sequence[tuple[Any, ...]]) -> None:
    """Make ``shapes`` (``(rank, host, pid, coords, last, set_id)`` each) the template."""
    db.execute(f"DELETE FROM {SCHEMA}.shape")  # noqa: S608 - ours
    db.executemany(_FILL, shapes)


def copy(db: sqlite3.Connection, run_id: str, own: tuple[str, Any], spans: tuple[str, Any]) -> None:
    """Insert the template's rows for ``run_id``: its spans in the ``(state, updated)``
    ``spans``, its ranks of their own in ``own``."""
    db.execute(_COPY, (run_id, own[0], spans[0], own[1], spans[1]))


class Sets:
    """(writer only) The ``rank_sets`` row of the coordinates given last (by identity: the
    session makes them once per cluster), and each rank's row of its own from it, kept."""

    def __init__(self) -> None:
        self._last: tuple[object, int] | None = None
        self._each: tuple[int, dict[int, tuple[str, Any, str]]] | None = None
        # a run's spans' (first, last), in order: of the latest BOUNDS_KEPT runs (see keep)
        self.bounds: dict[str, Sequence[tuple[int, int]]] = {}
        # a new run's rows but for its id and time, as made last (coordinates, ranks, set),
        # and their spans' (first, last)
        self.shapes: (
            tuple[object, list[int], int | None, list[tuple[Any, ...]], Bounds, Spans] | None
        )
        self.shapes = None
        self.filled = False  # whether the writer's template holds the shapes' rows (rankshape)

    def clear(self) -> None:  # (a transaction rolled back: the rows may be gone)
        self._last = self._each = self.shapes = None
        self.filled = False
        self.bounds.clear()

    def keep(self, run_id: str, bounds: Sequence[tuple[int, int]]) -> None:
        """Keep a run's spans: the latest :data:`BOUNDS_KEPT` runs' only, so that a kernel's
        writer does not grow with every cell (another run's are read again when needed)."""
        self.bounds[run_id] = bounds
        if len(self.bounds) > BOUNDS_KEPT:
            del self.bounds[next(iter(self.bounds))]

    def of(self, db: sqlite3.Connection, coords: dict[int, dict[str, Any]]) -> int:
        if self._last is not None and self._last[0] is coords:
            return self._last[1]
        each = {r: coords_row(c) for r, c in coords.items()}
        data = "{" + ", ".join(f'"{r}": {e[2]}' for r, e in each.items()) + "}"
        set_id = int(db.execute("INSERT INTO rank_sets (data) VALUES (?)", (data,)).lastrowid or 0)
        self._last, self._each = (coords, set_id), (set_id, each)
        return set_id

    def each(self, db: sqlite3.Connection, set_id: int) -> dict[int, tuple[str, Any, str]]:
        """Each rank's (host, pid, coordinates' JSON) in the set ``set_id``."""
        if self._each is None or self._each[0] != set_id:
            row = db.execute("SELECT data FROM rank_sets WHERE id=?", (set_id,)).fetchone()
            data = json.loads(row[0]) if row else {}
            each = {
                int(r): (c.get("host", ""), c.get("pid"), json.dumps(c)) for r, c in data.items()
            }
            self._each = (set_id, each)
        return self._each[1]


def coords_row(c: dict[str, Any]) -> tuple[str, Any, str]:
    """A rank's (host, pid, coordinates' JSON) as its row of its own holds them."""
    return c.get("host", ""), c.get("pid"), json.dumps(c)
