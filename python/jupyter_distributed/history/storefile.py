"""The history's SQLite file: private to its owner, created whole, and a clear error when broken.

The store holds every cell's source and output, so its directory is 0700 and the database with its
``-wal``/``-shm`` files 0600 (SQLite gives those the database file's mode).

A new store is initialised under a temporary name and linked into place only once its schema is
written, so a file at the store's path is never legitimately empty. SQLite itself would accept a
0-byte file as an empty database; we refuse it instead, because here it means the history was
truncated (a full disk, a copy cut short) or something else wrote the file, and silently starting
a new history over it would hide that every earlier run is gone.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import urllib.parse
from pathlib import Path

from ..errors import StoreError

STORE_ENV = "JUPYTER_DISTRIBUTED_STORE"


def default_store_path() -> Path:
    """``$JUPYTER_DISTRIBUTED_STORE``, else ``<jupyter data dir>/distributed/history.sqlite3``."""
    env = os.environ.get(STORE_ENV)
    if env:
        return Path(env)
    from jupyter_core.paths import jupyter_data_dir

    return Path(jupyter_data_dir()) / "distributed" / "history.sqlite3"


#: Seconds a statement waits for another process's write lock before "database is locked".
BUSY_TIMEOUT = 10.0
DIR_MODE = 0o700
FILE_MODE = 0o600

#: SQLite's primary result codes that mean the file itself is damaged or not a database.
_NOTADB = 26
_BROKEN_CODES = {11, _NOTADB}  # SQLITE_CORRUPT, SQLITE_NOTADB


#: The layout of the tables; an older store is migrated on open (:mod:`.migrate`).
SCHEMA_VERSION = 8

#: The history's tables; run on every open, so an older store gains what it lacks.
SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY, cluster_id TEXT, backend TEXT, world_size INTEGER, ranks TEXT,
    state TEXT, spec TEXT, source TEXT, notebook TEXT, cell_id TEXT, host TEXT,
    kernel_pid INTEGER, external_id TEXT, started REAL, ended REAL, message TEXT,
    summary TEXT, sweep_id TEXT, kernel_id TEXT
);
CREATE INDEX IF NOT EXISTS runs_started ON runs (started);
-- A row per rank, or per span of ranks rank..last (see rankspans.py): their host, pid and
-- coordinates are then in the rank_sets row set_id, written once per cluster.
CREATE TABLE IF NOT EXISTS ranks (
    run_id TEXT, rank INTEGER, host TEXT, pid INTEGER, state TEXT, coords TEXT,
    updated REAL, heartbeat REAL, last INTEGER, set_id INTEGER, PRIMARY KEY (run_id, rank)
);
CREATE TABLE IF NOT EXISTS rank_sets (id INTEGER PRIMARY KEY, data TEXT);
-- The events, output lines and metric samples grouped (see eventrows.py): run, kind and stream
-- are integer codes of run_keys and codes.
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY, span INTEGER, run INTEGER, kind INTEGER, rank INTEGER,
    stream INTEGER, t REAL, gaps BLOB, text TEXT, data TEXT
);
CREATE INDEX IF NOT EXISTS events_run ON events (run, seq);
CREATE TABLE IF NOT EXISTS run_keys (key INTEGER PRIMARY KEY, id TEXT UNIQUE);
CREATE TABLE IF NOT EXISTS codes (code INTEGER PRIMARY KEY, name TEXT UNIQUE);
CREATE TABLE IF NOT EXISTS controls (
    id INTEGER PRIMARY KEY AUTOINCREMENT, cluster_id TEXT, target TEXT, action TEXT,
    t REAL, taken REAL, rank INTEGER
);
CREATE INDEX IF NOT EXISTS controls_open ON controls (cluster_id, taken);
-- A probe's pairs (megabytes at 256 ranks), apart from the run's summary (see probestore.py).
CREATE TABLE IF NOT EXISTS probe_pairs (run_id TEXT PRIMARY KEY, pairs TEXT);
CREATE TABLE IF NOT EXISTS follows (
    run_id TEXT PRIMARY KEY, host TEXT, pid INTEGER, heartbeat REAL
);
-- What the size budget pruned, shown once by the next cell (see budget.py), and when.
CREATE TABLE IF NOT EXISTS notices (id INTEGER PRIMARY KEY, t REAL, text TEXT, shown REAL);
"""


def statements(schema: str = SCHEMA) -> list[str]:
    return [stmt for stmt in schema.split(";") if stmt.strip()]


def broken(path: Path, cause: str) -> StoreError:
    return StoreError(
        f"history store at {path} is unreadable ({cause}); move it aside "
        f"(mv {path} {path}.broken) and a new, empty history is created on the next start"
    )


def failed(path: Path, exc: sqlite3.Error) -> StoreError:
    """Our error for what SQLite raised, naming the store's path."""
    code = getattr(exc, "sqlite_errorcode", 0) & 0xFF
    if code == _NOTADB:
        return broken(path, "not an SQLite database")
    if code in _BROKEN_CODES:
        return broken(path, str(exc))
    return StoreError(f"history store at {path}: {exc}")


def connect(path: Path) -> sqlite3.Connection:
    """A connection in autocommit mode whose reads survive invalid UTF-8 in a row.

    Its commits are ``synchronous=NORMAL``, SQLite's setting for WAL mode: a committed
    transaction is in the WAL before the commit returns, so it survives the kernel's crash or
    SIGKILL (what the history promises: every line is recorded before the cell is told); only a
    power loss or an OS crash may take back the last transactions, never corrupt the file.
    FULL would also fsync the WAL at every commit: 150-200 µs on these machines, three times
    per warm cell and once per batch of output. ``mode=rw``: a store is never created here
    (only whole, by :func:`prepare`)."""
    uri = f"file:{urllib.parse.quote(os.fspath(path))}?mode=rw"
    db = sqlite3.connect(
        uri, timeout=BUSY_TIMEOUT, check_same_thread=False, isolation_level=None, uri=True
    )
    db.text_factory = lambda raw: raw.decode("utf-8", "replace")
    db.execute("PRAGMA synchronous=NORMAL")
    return db


def prepare(path: Path, schema: str, own_dir: bool) -> None:
    """Make sure ``path`` holds a history: create it whole if absent.

    The file itself is never opened here: closing any descriptor of a file drops every POSIX
    lock this process holds on it, SQLite's included, and another process's last close would
    then delete the ``-wal`` and ``-shm`` under this one's connections. Its header is checked
    through SQLite instead (:func:`check`)."""
    parent = path.parent
    if not parent.is_dir():
        parent.mkdir(parents=True, mode=DIR_MODE, exist_ok=True)
        own_dir = True
    if own_dir:
        with contextlib.suppress(OSError):
            parent.chmod(DIR_MODE)
    try:
        path.stat()
    except FileNotFoundError:
        _create(path, schema)
        return
    except OSError as exc:
        raise broken(path, exc.strerror or str(exc)) from None
    make_private(path)


def check(db: sqlite3.Connection, path: Path) -> None:
    """Refuse, through ``db`` (SQLite reads the header), a file that is not a history."""
    try:
        pages = int(db.execute("PRAGMA page_count").fetchone()[0])
    except sqlite3.Error as exc:
        raise failed(path, exc) from None
    if pages == 0:
        raise broken(path, "the file is empty, not a history")


def _create(path: Path, schema: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.new")
    tmp.unlink(missing_ok=True)
    os.close(os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, FILE_MODE))
    try:
        db = connect(tmp)
        try:
            db.execute("PRAGMA auto_vacuum=INCREMENTAL")  # pruned space goes back (budget.py)
            db.execute("PRAGMA journal_mode=WAL")
            db.executescript(schema)
            db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        finally:
            db.close()
        with contextlib.suppress(FileExistsError):
            os.link(tmp, path)  # never replaces a store another process created meanwhile
    finally:
        tmp.unlink(missing_ok=True)


def make_private(path: Path) -> None:
    """0600 on the database and its WAL files, where this user owns them."""
    for p in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        with contextlib.suppress(OSError):
            if p.stat().st_mode & 0o777 != FILE_MODE:
                p.chmod(FILE_MODE)
