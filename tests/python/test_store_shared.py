"""One store per file per process, and a history that another process may open and close (H1).

Closing any descriptor of a file drops every POSIX lock the process holds on it, SQLite's
included: a server that read the header with ``open()``/``close()`` beside its own connections
lost its locks, and the next process to close its connection (a terminal IPython, the
``sqlite3`` tool) deleted the ``-wal`` and ``-shm`` under the server, which then saw no new run.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from jupyter_distributed.history.store import RunRecord, Store

PACKAGE = Path(__file__).resolve().parents[2] / "python" / "jupyter_distributed"

# Another process that opens the history, reads it, writes to it and closes it.
_PYTHON = """
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
print(db.execute("SELECT summary FROM runs WHERE id='r1'").fetchone()[0])
db.execute("UPDATE runs SET message=? WHERE id='r1'", (sys.argv[2],))
db.commit()
db.close()
"""


def _python(path: Path, message: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", _PYTHON, str(path), message],
        capture_output=True, text=True, check=True, timeout=60,
    )  # fmt: skip
    return done.stdout.strip()


def _cli(path: Path, message: str) -> str:
    if shutil.which("sqlite3") is None:
        pytest.skip("the sqlite3 command-line tool is not installed (make test installs it)")
    sql = (
        "SELECT summary FROM runs WHERE id='r1';"  # noqa: S608 - a test's own text
        f" UPDATE runs SET message='{message}' WHERE id='r1';"
    )
    done = subprocess.run(
        ["sqlite3", str(path), sql], capture_output=True, text=True, check=True, timeout=60
    )
    return done.stdout.strip()


Outside = Callable[[Path, str], str]


@pytest.mark.parametrize("outside", [_python, _cli], ids=["python-sqlite3", "sqlite3-tool"])
@pytest.mark.parametrize("second", ["open", "own"], ids=["shared", "second-store"])
def test_the_wal_survives_another_process_closing_the_history(
    tmp_path: Path, outside: Outside, second: str
) -> None:
    path = tmp_path / "history.sqlite3"
    server = Store.open(path)  # the server extension's store
    try:
        server.create_run(RunRecord(id="r1", backend="local", world_size=1, ranks=[0],
                                    started=time.time()))  # fmt: skip
        # The follower's and a followed job's store: the same one; or (as a test or a plug-in
        # may do) a second store of its own.
        other = Store.open(path) if second == "open" else Store(path)
        assert (other is server) == (second == "open")
        assert [r.id for r in other.runs()] == ["r1"]
        for round_ in range(3):
            server.update_summary("r1", round=round_)
            assert f'"round": {round_}' in outside(path, f"outside {round_}")  # ours, seen there
            assert Path(f"{path}-wal").exists() and Path(f"{path}-shm").exists()
            for store in (server, other):  # theirs, seen here by every reader
                run = store.run("r1")
                assert run is not None and run.message == f"outside {round_}"
        other.close()
    finally:
        server.close()


def test_open_gives_one_store_per_file_until_its_last_close(tmp_path: Path) -> None:
    path = tmp_path / "history.sqlite3"
    first = Store.open(path)
    same = Store.open(tmp_path / "." / "history.sqlite3")  # the same file, another spelling
    assert same is first
    same.close()
    assert first.runs() == []  # still open for its other user
    first.close()
    again = Store.open(path)
    assert again is not first and again.runs() == []
    again.close()


def test_the_package_opens_stores_only_through_open() -> None:
    """The kernel, the server, the follower and followed jobs: no second connection set."""
    made = [
        f"{module.relative_to(PACKAGE)}:{n + 1}"
        for module in PACKAGE.rglob("*.py")
        for n, line in enumerate(module.read_text().splitlines())
        if re.search(r"\bStore\((?!Queries)", line)
    ]
    assert made == []
