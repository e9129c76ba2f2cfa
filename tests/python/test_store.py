"""The history: durable, paged by cursor, readable by another process while a run writes."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from jupyter_distributed.events import MetricEvent, OutputEvent, RankEvent, RankState, Stream
from jupyter_distributed.history import eventrows
from jupyter_distributed.history.store import RunRecord, Store


def _run(store: Store, run_id: str = "r1") -> None:
    store.create_run(
        RunRecord(id=run_id, backend="local", world_size=2, ranks=[0, 1], started=time.time()),
        coords={0: {"host": "h"}, 1: {}},
    )


def test_logs_page_filter_and_search(tmp_path: Path) -> None:
    store = Store(tmp_path / "h.sqlite3")
    _run(store)
    store.append(
        OutputEvent(
            "r1",
            i % 2,
            float(i),
            Stream.STDERR if i % 5 == 0 else Stream.STDOUT,
            f"line {i} 100%_done",
        )
        for i in range(100)
    )
    page = store.logs("r1", limit=10)
    assert [ln.text for ln in page][:2] == ["line 0 100%_done", "line 1 100%_done"]
    nxt = store.logs("r1", after=page[-1].seq, limit=10)
    assert nxt[0].text == "line 10 100%_done"
    assert {ln.rank for ln in store.logs("r1", ranks=[1], limit=1000)} == {1}
    assert len(store.logs("r1", stream="stderr", limit=1000)) == 20
    assert [ln.text for ln in store.logs("r1", search="LINE 42")] == ["line 42 100%_done"]
    assert store.logs("r1", search="%_") != []  # wildcards are literal
    assert store.logs("r1", search="50%") == []
    tail = store.logs("r1", before=page[-1].seq + 1, limit=3)
    assert [ln.text for ln in tail] == ["line 7 100%_done", "line 8 100%_done", "line 9 100%_done"]


def test_rank_state_and_metrics(tmp_path: Path) -> None:
    store = Store(tmp_path / "h.sqlite3")
    _run(store)
    store.append(
        [
            RankEvent("r1", 0, 1.0, RankState.RUNNING, "host0", 42),
            MetricEvent("r1", 0, 2.0, {"samples": 64.0}),
        ]
    )
    ranks = store.ranks("r1")
    assert (ranks[0].state, ranks[0].host, ranks[0].pid, ranks[0].heartbeat) == (
        "running",
        "host0",
        42,
        2.0,
    )
    assert store.metrics("r1")[0][1].values == {"samples": 64.0}
    kinds = [e["kind"] for _, e in store.events_after(0)]
    assert kinds == ["run", "rank", "metric"]


def test_another_process_reads_while_this_one_writes(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite3"
    store = Store(path)
    _run(store)
    reader = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
        import time
        from jupyter_distributed.history.store import Store
        s = Store({str(path)!r})
        seen, deadline = 0, time.time() + 30
        while seen < 5000 and time.time() < deadline:
            seen = len(s.logs("r1", limit=100000))
            time.sleep(0.01)
        print(seen)
    """),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    for batch in range(50):
        store.append(OutputEvent("r1", 0, 0.0, Stream.STDOUT, f"{batch}-{i}") for i in range(100))
    out, _ = reader.communicate(timeout=60)
    assert out.strip() == "5000"


def test_history_survives_a_writer_that_dies(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite3"
    code = textwrap.dedent(f"""
        import os, time
        from jupyter_distributed.events import OutputEvent, Stream
        from jupyter_distributed.history.store import RunRecord, Store
        s = Store({str(path)!r})
        s.create_run(RunRecord(id="r9", backend="local", world_size=1, ranks=[0],
                               started=time.time()))
        s.append([OutputEvent("r9", 0, 1.0, Stream.STDOUT, "before the crash")])
        os._exit(9)
    """)
    assert subprocess.run([sys.executable, "-c", code]).returncode == 9
    store = Store(path)
    assert [ln.text for ln in store.logs("r9")] == ["before the crash"]
    assert store.run("r9") is not None


def test_a_rolled_back_transaction_takes_its_new_keys_with_it(tmp_path: Path) -> None:
    """The store keeps run and name keys between transactions; one that is rolled back
    must not leave a key behind that no row in run_keys holds any more."""
    store = Store(tmp_path / "history.sqlite")
    line = OutputEvent("r-new", 0, time.time(), Stream.STDOUT, "lost")

    def failing_batch() -> None:
        with store._tx() as db:
            eventrows.append(db, [eventrows.item(line)], store._keys)
            raise RuntimeError("the batch failed")

    with pytest.raises(RuntimeError):
        failing_batch()
    store.append([OutputEvent("r-new", 0, time.time(), Stream.STDOUT, "kept")])
    assert [entry.text for entry in store.logs("r-new")] == ["kept"]
    store.close()


def test_a_run_created_with_its_events_has_the_rows_of_one_created_first(tmp_path: Path) -> None:
    """A short cell's record goes with its replies and end (one transaction): the history
    must read exactly as if the run had been created first and its events applied after."""
    from jupyter_distributed.errors import RankFailure
    from jupyter_distributed.events import ErrorEvent, RunEvent, RunState

    def batch(run_id: str) -> list[object]:
        t = time.time()
        failure = RankFailure(rank=1, t=t + 2, host="h1", pid=8, ename="E", evalue="v")
        return [
            RankEvent(run_id, 0, t, RankState.RUNNING, "h0", 7),
            RankEvent(run_id, 1, t, RankState.RUNNING, "", None),
            RankEvent(run_id, 0, t + 1, RankState.DONE, "h0", 7),
            RankEvent(run_id, 1, t + 1, RankState.DONE, "h1", None),
            ErrorEvent(run_id, failure),
            RunEvent(run_id, t + 4, RunState.COMPLETED, "all done"),
        ]

    def record(run_id: str) -> RunRecord:
        return RunRecord(id=run_id, backend="local", world_size=2, ranks=[0, 1], started=1.0)

    coords = {0: {"host": "h", "pid": 1}, 1: {"host": "h", "pid": 2}}
    store = Store(tmp_path / "h.sqlite3")
    store.create_run(record("apart"), coords)
    store.append(batch("apart"))  # type: ignore[arg-type]
    store.append(batch("together"), run=(record("together"), coords))  # type: ignore[arg-type]

    def rows(run_id: str) -> tuple[object, ...]:
        run = store.run(run_id)
        assert run is not None
        ranks = [(r.rank, r.host, r.pid, r.state) for r in store.ranks(run_id)]
        kinds = [e["kind"] for _, e in store.events_after(0, run_id)]
        return run.state, run.ended is not None, run.message, ranks, kinds

    assert rows("together") == rows("apart")
    assert rows("together")[:3] == (RunState.COMPLETED, True, "all done")
    assert rows("together")[3] == [(0, "h0", 7, "done"), (1, "h1", 2, "failed")]
    store.close()


def test_each_run_records_the_spec_and_coordinates_it_was_given(tmp_path: Path) -> None:
    """The store encodes a spec or a rank's coordinates once while the very same object comes
    again (every cell of a live cluster); any other object, equal or not, is encoded anew, so
    a run never records the settings of the one before it."""
    store = Store(tmp_path / "h.sqlite3")
    spec, coords = {"timeout": 1, "env": [["A", "1"]]}, {0: {"host": "a", "pid": 1}}
    made = [
        ("same-1", spec, coords),
        ("same-2", spec, coords),  # the same objects: the text made for same-1
        ("equal", {"timeout": True, "env": [["A", "1"]]}, {0: {"host": "a", "pid": True}}),
        ("other", {"timeout": 2.5, "env": []}, {0: {"host": "b", "pid": 3}}),
        ("same-3", spec, coords),
    ]
    for run_id, run_spec, run_coords in made:
        record = RunRecord(id=run_id, backend="local", world_size=1, ranks=[0], spec=run_spec)
        store.append([], run=(record, run_coords))
    db = store._reader()
    for run_id, run_spec, run_coords in made:
        stored_spec = db.execute("SELECT spec FROM runs WHERE id=?", (run_id,)).fetchone()[0]
        stored_coords = db.execute("SELECT coords FROM ranks WHERE run_id=?", (run_id,)).fetchone()
        assert (stored_spec, stored_coords[0]) == (json.dumps(run_spec), json.dumps(run_coords[0]))
    store.close()


def test_a_new_runs_events_find_its_key_even_one_left_behind(tmp_path: Path) -> None:
    """A new run's key is made with its record (no look-up first); a key already there for
    the same id (an earlier run of that id whose record is gone) is used, not duplicated."""
    store = Store(tmp_path / "h.sqlite3")
    with store._tx() as db:
        db.execute("INSERT INTO run_keys (id) VALUES ('old')")
    for run_id in ("new", "old"):
        record = RunRecord(id=run_id, backend="local", world_size=1, ranks=[0], started=1.0)
        line = OutputEvent(run_id, 0, 2.0, Stream.STDOUT, f"line of {run_id}")
        store.append([line], run=(record, None))
        store.append([OutputEvent(run_id, 0, 3.0, Stream.STDOUT, "after")])
    other = Store(tmp_path / "h.sqlite3")  # (a reader that never wrote: keys from the file)
    for run_id in ("new", "old"):
        assert [e.text for e in other.logs(run_id)] == [f"line of {run_id}", "after"]
    keys = store._reader().execute("SELECT id, COUNT(*) FROM run_keys GROUP BY id").fetchall()
    assert sorted(keys) == [("new", 1), ("old", 1)]
    store.close()
    other.close()
