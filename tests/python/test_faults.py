"""Faults in the kernel's control thread, through a real shell, real ranks and a real store.

A run whose history store fails mid-cell (full, or locked by another process) must end
``failed`` with that cause, raise :class:`RunFailed` naming it, and never claim that every line
was kept. SQLite gives both faults for real without root: ``PRAGMA max_page_count`` on the
kernel's connection fills the database; a second connection holding ``BEGIN EXCLUSIVE`` locks it.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from jupyter_distributed.errors import RunFailed
from jupyter_distributed.events import RunState
from jupyter_distributed.session import Session

pytestmark = pytest.mark.timeout(120)


def _session(shell: Any) -> Session:
    session: Session = shell.user_ns["_jd_session"]
    return session


def _pragma(session: Session, sql: str) -> Any:
    store = session.store
    with store._lock:  # the kernel's own connection: the limit applies to its writes
        return store._db.execute(sql).fetchone()


def test_a_full_history_store_fails_the_run_with_its_cause(shell: Any, capsys: Any) -> None:
    session = _session(shell)
    assert shell.run_cell("%%distributed -n 2\nx = rank").success
    (pages,) = _pragma(session, "PRAGMA page_count")
    # Room for the run's record and its end, never for a message of output: each rank writes
    # its lines at once, so every message carries a full 64 KiB read of them (17+ pages).
    _pragma(session, f"PRAGMA max_page_count={pages + 16}")
    try:
        res = shell.run_cell(
            "%%distributed -n 2\nprint('\\n'.join(f'line {i} ' + 'x' * 95 for i in range(5000)))"
        )
    finally:
        _pragma(session, "PRAGMA max_page_count=1073741823")
    captured = capsys.readouterr()
    err = captured.err
    assert isinstance(res.error_in_exec, RunFailed), err
    assert "] line 0 x" in captured.out  # what could not be stored is still shown
    cause = f"history store at {session.store.path}: database or disk is full"
    assert cause in str(res.error_in_exec)
    assert "all are kept" not in err
    assert "could not be written to the history" in err
    run = session.store.runs(limit=1)[0]
    assert run.state is RunState.FAILED  # the failed batch was rolled back: the end fits
    assert cause in run.message
    assert not session.live["local"].cluster.alive  # the next cell starts a new cluster
    assert shell.run_cell("%%distributed -n 2\nprint('fine again')").success


def test_a_locked_history_store_fails_the_run_with_its_cause(
    shell: Any, capsys: Any, tmp_path: Path
) -> None:
    session = _session(shell)
    assert shell.run_cell("%%distributed -n 2\nx = rank").success
    _pragma(session, "PRAGMA busy_timeout=300")  # the real wait, shortened from 10 s
    flag = tmp_path / "started"
    released = threading.Event()

    def hold_lock() -> None:
        other = sqlite3.connect(session.store.path, isolation_level=None)
        deadline = time.monotonic() + 60
        while not flag.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        other.execute("BEGIN EXCLUSIVE")
        cluster = session.live["local"].cluster
        while cluster.alive and time.monotonic() < deadline:
            time.sleep(0.01)
        other.execute("ROLLBACK")
        other.close()
        released.set()

    holder = threading.Thread(target=hold_lock, daemon=True)
    holder.start()
    res = shell.run_cell(
        "%%distributed -n 2\n"
        "import pathlib, time\n"
        f"pathlib.Path({str(flag)!r}).touch()\n"
        "for i in range(600):\n"
        "    print('line', i)\n"
        "    time.sleep(0.05)"
    )
    holder.join(10)
    err = capsys.readouterr().err
    assert released.is_set()
    assert isinstance(res.error_in_exec, RunFailed), err
    cause = f"history store at {session.store.path}: database is locked"
    assert cause in str(res.error_in_exec)
    run = session.store.runs(limit=1)[0]
    assert run.state is RunState.FAILED
    assert cause in run.message
    assert "all are kept" not in err


def test_a_malformed_message_fails_the_run_instead_of_completing_it(shell: Any) -> None:
    """A correctly signed message the kernel cannot decode (here a ``done`` whose failure has
    no rank) kills the kernel's I/O thread: the run must fail with that cause."""
    session = _session(shell)
    res = shell.run_cell(
        "%%distributed -n 2\n"
        "import gc, time\n"
        "from jupyter_distributed.worker.channel import Channel\n"
        "from jupyter_distributed.worker.runtime import Runtime\n"
        "if rank == 1:\n"
        "    ch = next(o for o in gc.get_objects() if isinstance(o, Channel))\n"
        "    rt = next(o for o in gc.get_objects() if isinstance(o, Runtime))\n"
        "    bad = {'type': 'done', 'run_id': rt.run_id, 'status': 'error'}\n"
        "    bad['failure'] = {'t': 1.0}\n"
        "    with ch._lock:\n"  # (counters leave in order: the held state may leave now)
        "        ch._loop.put(ch._signer.pack(bad))\n"
        "time.sleep(30)"
    )
    assert isinstance(res.error_in_exec, RunFailed)
    assert "the control channel failed: KeyError" in str(res.error_in_exec)
    run = session.store.runs(limit=1)[0]
    assert run.state is RunState.FAILED and "KeyError" in run.message
