"""Bring a history written by an older version to today's layout, keeping every event.

``PRAGMA user_version`` holds the layout's version (:data:`.storefile.SCHEMA_VERSION`); 0 is the
first layout, one ``events`` row per event with the run id, kind and stream as text. Migrating
happens once, in the transaction that opens the store, so a crash leaves the old layout whole;
every event keeps its ``seq``, so a reader's cursor stays valid. The space the old rows took is
given back afterwards (``VACUUM``), where no other connection is reading. Columns added later
(``runs.sweep_id``, ``controls.rank``, and ``runs.kernel_id``, version 3) are added where a table
lacks them; a jupyter-distributed of layout 2 then refuses the file as newer, not misreading it.
Version 4 keeps a probe's pairs apart from its run's summary (:mod:`.probestore`). Version 5 adds
the ``notices`` of what the size budget pruned (:mod:`.budget`), which the schema creates.
Version 6 records a run's ranks as spans (:mod:`.rankspans`): ``ranks`` gains ``last`` and
``set_id`` (NULL in every older row: a rank's own row, as before). Version 7 lets a row of
rank states (``staterows.States``) hold spans, ``ranks 0-124: running, done``, which an older
reader would misread: nothing to migrate (older rows read as before), the version refuses
older readers. Version 8 writes a run's ``ranks`` and a span's pids as runs of numbers,
``[[0, 999]]`` (:mod:`.numruns`), and a row of rank states' ``gaps`` (all zeros) as an empty
blob: older rows read as before, the version refuses older readers.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Iterator

from . import eventrows, probestore, storefile
from .grouprows import Item


class NewerStore(Exception):
    """The store was written by a newer version of jupyter-distributed."""


def upgrade(db: sqlite3.Connection) -> bool:
    """Migrate inside the open write transaction; True when something was migrated."""
    version = int(db.execute("PRAGMA user_version").fetchone()[0])
    if version > storefile.SCHEMA_VERSION:
        raise NewerStore(
            f"its layout is version {version}, newer than this jupyter-distributed "
            f"understands ({storefile.SCHEMA_VERSION}); upgrade jupyter-distributed"
        )
    columns = {row[1] for row in db.execute("PRAGMA table_info(events)")}
    migrated = "run_id" in columns
    if migrated:
        _from_v1(db)
    runs = {row[1] for row in db.execute("PRAGMA table_info(runs)")}
    if runs and "sweep_id" not in runs:  # a history written before --sweep
        db.execute("ALTER TABLE runs ADD COLUMN sweep_id TEXT")
    if runs and "kernel_id" not in runs:  # a history written before runs named their kernel
        db.execute("ALTER TABLE runs ADD COLUMN kernel_id TEXT")
    ranks = {row[1] for row in db.execute("PRAGMA table_info(ranks)")}
    for column in ("last", "set_id"):  # before a run's ranks were recorded as spans
        if ranks and column not in ranks:
            db.execute(f"ALTER TABLE ranks ADD COLUMN {column} INTEGER")
    controls = {row[1] for row in db.execute("PRAGMA table_info(controls)")}
    if controls and "rank" not in controls:  # before the stacks of one rank could be asked
        db.execute("ALTER TABLE controls ADD COLUMN rank INTEGER")
    if runs and version < 4:  # a probe's pairs were kept in its run's summary
        probestore.move_out(db)
    if version != storefile.SCHEMA_VERSION:
        db.execute(f"PRAGMA user_version={storefile.SCHEMA_VERSION}")
    return migrated


def _from_v1(db: sqlite3.Connection) -> None:
    db.execute("ALTER TABLE events RENAME TO events_v1")
    for index in ("events_run", "events_kind", "events_rank"):
        db.execute(f"DROP INDEX IF EXISTS {index}")
    for stmt in storefile.statements():
        db.execute(stmt)
    eventrows.write(db, _v1_items(db))
    db.execute("DROP TABLE events_v1")


def _v1_items(db: sqlite3.Connection) -> Iterator[tuple[int, Item]]:
    rows = db.execute(
        "SELECT seq, run_id, kind, rank, t, stream, text, data FROM events_v1 ORDER BY seq"
    )
    for seq, run_id, kind, rank, t, stream, text, data in rows:
        if kind == "metric":
            with contextlib.suppress(ValueError, TypeError, KeyError):
                data = json.dumps(json.loads(data)["values"])
        yield seq, Item(str(run_id), str(kind), rank, float(t or 0.0), stream, text, data)


def reclaim(db: sqlite3.Connection) -> None:
    """Give the old layout's pages back to the file system; skipped while others read."""
    with contextlib.suppress(sqlite3.Error):
        db.execute("VACUUM")
