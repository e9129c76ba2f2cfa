"""A run's ranks and a span's pids written as runs of numbers, and a row of rank states
without its page of zero gaps (issue 26, layout 8): a 1,000-rank cell's record no longer
writes its 1,000 ranks, 1,000 pids and 4 kB of zeros. Readers get back the same events, from
the new rows and from a file of layout 7."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from jupyter_distributed.events import RankState, RankStates, Recorded, RunEvent, RunState
from jupyter_distributed.history import numruns, storefile
from jupyter_distributed.history.store import RunRecord, Store

N = 1000
COORDS = {r: {"host": "h", "pid": 5000 + r, "node_rank": r // 125} for r in range(N)}
BOTH = (RankState.RUNNING, RankState.DONE)


def cell(store: Store, run_id: str, ranks: list[int], pids: tuple[int | None, ...]) -> None:
    """A cell's record and its root reduction's ends (one span of every rank), as the kernel
    writes them."""
    run = RunRecord(run_id, "local", len(ranks), ranks, cluster_id="c", started=1.0)
    ends: list[Recorded] = [
        RankStates(run_id, 2.0, (), ((0, N - 1, BOTH, "h", pids),)),
        RunEvent(run_id, 2.0, RunState.COMPLETED),
    ]
    store.append(ends, run=(run, COORDS))


def states(store: Store, run_id: str) -> list[tuple[int, str, int | None]]:
    return [
        (e["rank"], e["state"], e["pid"])
        for _, e in store.events_after(0, run_id, 10**5)
        if e["kind"] == "rank"
    ]


def expected(pids: tuple[int | None, ...]) -> list[tuple[int, str, int | None]]:
    return [(r, s.value, pids[r]) for r in range(N) for s in BOTH]


def reads_back(store: Store, ranks: list[int], pids: tuple[int | None, ...]) -> None:
    """Run "r" reads back with every one of ``ranks``, and each rank's states with its pid."""
    run = store.run("r")
    assert run is not None and run.ranks == ranks and not run.message
    assert states(store, "r") == expected(pids)


def test_a_cells_ranks_and_pids_are_written_as_runs_and_read_back_whole(tmp_path: Path) -> None:
    store = Store(tmp_path / "h.sqlite")
    pids = tuple(range(5000, 5000 + N))
    try:
        cell(store, "r", list(range(N)), pids)
        ((ranks,),) = store._query("SELECT ranks FROM runs WHERE id='r'")
        assert json.loads(ranks) == [[0, N - 1]]
        ((data,),) = store._query("SELECT data FROM events WHERE data LIKE '%\"pids\"%'")
        assert json.loads(data)[0]["pids"] == [[5000, 5000 + N - 1]]
        ((gaps, span),) = store._query("SELECT gaps, span FROM events WHERE data=?", (data,))
        assert (gaps, span) == (b"", 2 * N - 1)  # (not 2 × 1,999 zeros: one time, no gaps)
        reads_back(store, list(range(N)), pids)
        assert store._query("PRAGMA user_version") == [(storefile.SCHEMA_VERSION,)]
        assert storefile.SCHEMA_VERSION >= 8
    finally:
        store.close()


def test_numbers_with_gaps_keep_every_number_in_order(tmp_path: Path) -> None:
    store = Store(tmp_path / "h.sqlite")
    ranks = [*range(0, 500), 600, 601, *range(700, 1198)]  # (N numbers, runs and lone ones)
    pids = (7, None, 3, *range(9000, 9000 + N - 3))  # (a pid not known stays so)
    try:
        cell(store, "r", ranks, pids)
        ((text,),) = store._query("SELECT ranks FROM runs WHERE id='r'")
        assert json.loads(text) == [[0, 499], 600, 601, [700, 1197]]
        reads_back(store, ranks, pids)
    finally:
        store.close()


def test_a_store_of_layout_7_reads_as_before(tmp_path: Path) -> None:
    """Rows written before layout 8 (every number) read back the same after the upgrade."""
    path = tmp_path / "h.sqlite"
    store = Store(path)
    pids = tuple(range(5000, 5000 + N))
    cell(store, "r", list(range(N)), pids)
    store.close()
    db = sqlite3.connect(path)  # (the rows as layout 7 wrote them)
    db.execute("UPDATE runs SET ranks=?", (json.dumps(list(range(N))),))
    (data,) = db.execute("SELECT data FROM events WHERE data LIKE '%\"pids\"%'").fetchone()
    entries = json.loads(data)
    entries[0]["pids"] = list(pids)
    db.execute(  # (each seq's gap and time step: 0)
        "UPDATE events SET data=?, gaps=zeroblob(2 * span) WHERE data=?",
        (json.dumps(entries), data),
    )
    db.execute("PRAGMA user_version=7")
    db.commit()
    db.close()
    store = Store(path)
    try:
        assert store._query("PRAGMA user_version") == [(storefile.SCHEMA_VERSION,)]
        reads_back(store, list(range(N)), pids)
    finally:
        store.close()


def test_a_damaged_run_of_numbers_is_named_not_misread(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite"
    store = Store(path)
    try:
        cell(store, "r", list(range(N)), tuple(range(5000, 5000 + N)))
        store._db.execute("UPDATE runs SET ranks='[[9, 3]]'")
        run = store.run("r")
        assert run is not None and run.ranks == [] and "damaged" in run.message
    finally:
        store.close()


@pytest.mark.parametrize(
    "numbers",
    [[], [5], [1, 2], [1, 2, 3], [0, 1, 2, 4, 5, 6, 6, 7, 8, None, 9], [3, 2, 1], [1, 1, 1]],
)
def test_pack_and_unpack_are_inverse(numbers: list[int | None]) -> None:
    assert numruns.unpack(numruns.pack(numbers)) == numbers
