"""A bounded history: deleting runs, the size budget, and damaged rows named (real writes)."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError

from jupyter_distributed.events import MetricEvent, OutputLines, RunEvent, RunState, Stream
from jupyter_distributed.history import budget, storefile
from jupyter_distributed.history.store import RunRecord, Store

LINE = "x" * 90


def _run(store: Store, run_id: str, started: float, lines: int, finished: bool = True) -> None:
    store.create_run(RunRecord(id=run_id, backend="local", world_size=1, ranks=[0],
                               started=started))  # fmt: skip
    store.update_summary(run_id, samples_per_s=42.0)
    batch = [(started + i * 1e-3, f"{run_id} {i} {LINE}") for i in range(lines)]
    store.append([OutputLines(run_id, 0, Stream.STDOUT, batch),
                  MetricEvent(run_id, 0, started, {"loss": 1.0})])  # fmt: skip
    if finished:
        store.append([RunEvent(run_id, started + 1, RunState.COMPLETED, "")])


def _pages(store: Store, pragma: str) -> int:
    """As another connection reads it (a reader's cached header could be stale)."""
    db = sqlite3.connect(store.path)
    try:
        return int(db.execute(f"PRAGMA {pragma}").fetchone()[0])
    finally:
        db.close()


def _history(store: Store) -> None:
    for i in range(6):  # about 190 KB of lines each, oldest first
        _run(store, f"old{i}", 1000.0 + i, 2000)
    _run(store, "live", 2000.0, 2000, finished=False)


def test_past_its_budget_the_oldest_runs_lose_their_lines_first(tmp_path: Path) -> None:
    store = Store(tmp_path / "h.sqlite3")
    _history(store)
    used = budget.used_bytes(store._reader())
    assert store.enforce_budget(used) is None  # within its budget: nothing happens
    notice = store.enforce_budget(used * 2 // 3)
    assert notice is not None and "removed the log lines of" in notice and "old0" in notice
    assert budget.used_bytes(store._reader()) <= used * 2 // 3
    stripped = [r for r in store.runs() if "pruned" in r.summary]
    assert "old0" in {r.id for r in stripped} and "old5" not in {r.id for r in stripped}
    old0 = store.run("old0")
    assert old0 is not None and old0.summary["samples_per_s"] == 42.0  # the summary stays
    assert store.logs("old0") == [] and len(store.metrics("old0")) == 1  # metrics stay
    assert len(store.logs("old5", limit=5000)) == 2000 and len(store.logs("live")) == 500
    # A new store shrinks in place: its freed pages went back at once.
    assert _pages(store, "auto_vacuum") == 2 and _pages(store, "freelist_count") == 0
    # Said once, by whichever kernel asks first.
    assert store.take_notices() == [notice] and store.take_notices() == []


def test_then_whole_runs_go_oldest_first_never_a_running_one(tmp_path: Path) -> None:
    store = Store(tmp_path / "h.sqlite3")
    _history(store)
    notice = store.enforce_budget(300 * 1024)
    assert notice is not None and "deleted" in notice
    ids = [r.id for r in store.runs()]
    assert "live" in ids and "old0" not in ids and len(store.logs("live", limit=5000)) == 2000
    assert budget.used_bytes(store._reader()) <= 300 * 1024 or ids == ["live"]


def test_an_older_store_is_migrated_and_converted_only_with_room(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "h.sqlite3"
    db = sqlite3.connect(path)  # a layout-4 store as an older version made it: no auto-vacuum
    db.execute("PRAGMA journal_mode=WAL")
    db.executescript(storefile.SCHEMA.split("-- What the size budget")[0])
    db.execute("PRAGMA user_version=4")
    db.close()
    store = Store(path)
    assert _pages(store, "user_version") == storefile.SCHEMA_VERSION
    assert store._query("SELECT * FROM notices") == []
    _history(store)
    monkeypatch.setattr(budget, "has_room", lambda path: False)
    assert store.enforce_budget(budget.used_bytes(store._reader()) // 2) is not None
    assert _pages(store, "auto_vacuum") == 0 and _pages(store, "freelist_count") > 0
    size = _pages(store, "page_count")
    _run(store, "after", 3000.0, 500)  # the pruned pages are reused, the file does not grow
    assert _pages(store, "page_count") == size
    monkeypatch.setattr(budget, "has_room", lambda path: True)
    assert store.enforce_budget(budget.used_bytes(store._reader()) // 2) is not None
    assert _pages(store, "auto_vacuum") == 2 and _pages(store, "freelist_count") == 0
    assert _pages(store, "page_count") < size


def test_a_running_run_cannot_be_deleted(tmp_path: Path) -> None:
    store = Store(tmp_path / "h.sqlite3")
    _run(store, "live", 1.0, 3, finished=False)
    with pytest.raises(budget.Running, match="run live is running; stop it"):
        store.delete_run("live")
    assert store.delete_run("nope") is False


# -- through a real IPython shell ------------------------------------------------------------


def _line(shell: Any, line: str) -> None:
    shell.run_line_magic("distributed", line)


def test_runs_delete_removes_a_run_and_all_it_holds(shell: Any, capsys: Any) -> None:
    store: Store = shell.user_ns["_jd_session"].store
    _run(store, "done-1", 1.0, 10)
    _run(store, "done-2", 2.0, 10)
    _run(store, "live-1", 3.0, 10, finished=False)
    with pytest.raises(UsageError, match="cannot delete a running run \\(live-1 is running\\)"):
        _line(shell, "runs --delete done-1 live-1")
    with pytest.raises(UsageError, match="no run 'nope' in the history; nothing deleted"):
        _line(shell, "runs --delete nope done-1")
    assert {r.id for r in store.runs()} == {"done-1", "done-2", "live-1"}  # all or none
    capsys.readouterr()
    _line(shell, "runs --delete done-1 done-2")
    assert "deleted 2 run(s): done-1, done-2" in capsys.readouterr().out
    assert [r.id for r in store.runs()] == ["live-1"]
    assert store.logs("done-1") == [] and store.metrics("done-1") == []


def test_a_damaged_row_is_named_not_a_traceback(shell: Any, capsys: Any) -> None:
    store: Store = shell.user_ns["_jd_session"].store
    _run(store, "good", 1.0, 1)
    _run(store, "bad", 2.0, 1)
    db = sqlite3.connect(store.path)
    db.execute("UPDATE runs SET summary='{\"cut', spec='[1', state='??' WHERE id='bad'")
    db.commit()
    db.close()
    _line(shell, "runs")
    out = capsys.readouterr().out
    assert "damaged in the history: state, spec, summary of run bad (read as empty)" in out
    assert "good" in out


def test_the_next_cell_says_once_what_the_budget_pruned(shell: Any, capsys: Any) -> None:
    shell.run_line_magic("config", "Distributed.history_max_mb = 1")
    cell = "for i in range(12000):\n    print(i, 'x' * 100)"
    for _ in range(2):  # about 1.3 MB of lines each: the second cell passes the budget
        shell.run_cell_magic("distributed", "-n 1 --quiet", cell)
    capsys.readouterr()
    shell.run_cell_magic("distributed", "-n 1", "print('small')")
    said = capsys.readouterr().err
    assert said.count("the history passed its 1 MB budget") == 1, said
    shell.run_cell_magic("distributed", "-n 1", "print('small')")
    assert "budget" not in capsys.readouterr().err  # once
    store: Store = shell.user_ns["_jd_session"].store
    assert budget.used_bytes(store._reader()) <= 2**20
    pruned = [r for r in store.runs() if "pruned" in r.summary]
    assert pruned or len(store.runs()) < 4  # recorded in the runs it touched (or they went)
    time.sleep(0)  # (no timing: the cells ran to their end)
