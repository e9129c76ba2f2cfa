"""The integer keys that a history row holds instead of names (see :mod:`.eventrows`): a run's
key (``run_keys``), and the codes of kind and stream names (``codes``), each made on first use
and kept by the writer between transactions."""

from __future__ import annotations

import sqlite3


class Keys:
    """Integer keys already read or made, kept between transactions by one writer (a
    :class:`~.store.Store`): keys are never changed nor removed, so only a rolled-back
    transaction can take one back, and the writer then forgets them all (:meth:`clear`)."""

    def __init__(self) -> None:
        self.runs: dict[str, int] = {}
        self.names: dict[str, int] = {}

    def clear(self) -> None:
        self.runs.clear()
        self.names.clear()


def new_run_key(db: sqlite3.Connection, run_id: str, keys: Keys) -> None:
    """Make the key of a run created in this transaction: one statement, not a look-up first
    (a key left by an earlier run of the same id is looked up all the same)."""
    cursor = db.execute("INSERT OR IGNORE INTO run_keys (id) VALUES (?)", (run_id,))
    if cursor.rowcount == 1 and cursor.lastrowid is not None:
        keys.runs[run_id] = cursor.lastrowid


class Codes:
    """The integer keys of run ids and of kind and stream names, made on first use."""

    def __init__(self, db: sqlite3.Connection, keys: Keys | None = None) -> None:
        self.db = db
        keys = keys or Keys()
        self.runs, self.names = keys.runs, keys.names

    def run(self, run_id: str) -> int:
        return self._key(self.runs, "run_keys", "key", "id", run_id)

    def code(self, name: str) -> int:
        return self._key(self.names, "codes", "code", "name", name)

    def _key(self, cache: dict[str, int], table: str, key: str, col: str, value: str) -> int:
        if value not in cache:
            sql = f"SELECT {key} FROM {table} WHERE {col}=?"  # noqa: S608 - our own names
            row = self.db.execute(sql, (value,)).fetchone()
            if row is None:
                insert = f"INSERT INTO {table} ({col}) VALUES (?)"  # noqa: S608 - our own names
                row = (self.db.execute(insert, (value,)).lastrowid,)
            cache[value] = int(row[0])
        return cache[value]
