"""A run's ranks recorded as spans (issue 26): a cell on 1,000 ranks behind 8 relays writes a
``ranks`` row per node, and every reader gets each rank's row back as when each rank had its
own. The same writes go to two stores, one of them recording every rank alone as before
(``SPAN_MIN`` past the world size); what their readers get must be the same."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_distributed import textviews
from jupyter_distributed.errors import RankFailure, StoreError
from jupyter_distributed.events import (
    ErrorEvent,
    MetricEvent,
    RankEvent,
    RankState,
    RankStates,
    RunEvent,
    RunState,
)
from jupyter_distributed.history import rankshape, rankspans, storefile
from jupyter_distributed.history.store import RunRecord, Store
from jupyter_distributed.layout import Layout

N, NODES = 1000, 8
LAYOUT = Layout(nodes=NODES, procs_per_node=N // NODES)
COORDS = {
    r: {**LAYOUT.coords(r).to_json(), "host": f"node{r // 125}", "pid": 1000 + r} for r in range(N)
}


@pytest.fixture
def stores(tmp_path: Path) -> Iterator[tuple[Store, Store]]:
    spans, alone = Store(tmp_path / "spans.sqlite"), Store(tmp_path / "alone.sqlite")
    yield spans, alone
    spans.close()
    alone.close()


def both(stores: tuple[Store, Store], monkeypatch: pytest.MonkeyPatch, write: Any) -> None:
    spans, alone = stores
    write(spans)
    with monkeypatch.context() as m:
        m.setattr(rankspans, "SPAN_MIN", N + 1)  # every rank alone: the rows as before spans
        write(alone)


def ends(run_id: str, ranks: range, t: float, state: RankState = RankState.DONE) -> RankStates:
    each = [(r, s, COORDS[r]["host"], COORDS[r]["pid"]) for r in ranks for s in ("run", "end")]
    return RankStates(
        run_id, t, [(r, RankState.RUNNING if s == "run" else state, h, p) for r, s, h, p in each]
    )


def rows(store: Store, run_id: str) -> int:
    ((count,),) = store._query("SELECT COUNT(*) FROM ranks WHERE run_id=?", (run_id,))
    return int(count)


def test_a_cell_on_a_thousand_ranks_writes_a_ranks_row_per_node(
    stores: tuple[Store, Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    def cell(store: Store, run_id: str, t: float) -> None:
        store.create_run(RunRecord(run_id, "local", N, list(range(N)), started=t), COORDS)
        store.append([ends(run_id, range(n * 125, (n + 1) * 125), t + 1) for n in range(NODES)])
        store.append([RunEvent(run_id, t + 2, RunState.COMPLETED)])

    def cells(store: Store) -> None:
        for i in range(3):
            cell(store, f"run-{i}", 10.0 * i)

    both(stores, monkeypatch, cells)
    spans, alone = stores
    assert rows(spans, "run-2") == NODES and rows(alone, "run-2") == N
    assert spans.ranks("run-2") == alone.ranks("run-2")
    assert {r.state for r in spans.ranks("run-2")} == {"done"}
    assert [r.coords for r in spans.ranks("run-1")] == [COORDS[r] for r in range(N)]
    ((sets,),) = spans._query("SELECT COUNT(*) FROM rank_sets")
    assert sets == 1  # the cluster's coordinates once, for all its runs


def test_a_rank_that_differs_gets_its_own_row_and_readers_see_the_same(
    stores: tuple[Store, Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    failure = RankFailure(637, 5.0, "node5", 1637, "ValueError", "rank 637 failed")

    def cell(store: Store) -> None:
        store.create_run(RunRecord("r", "local", N, list(range(N)), started=1.0), COORDS)
        store.append([MetricEvent("r", 5, 2.0, {"loss": 1.0})])  # a heartbeat of rank 5
        store.append([RankEvent("r", 3, 2.5, RankState.RUNNING, "node0", 1003)])  # one alone
        store.append([ends("r", range(130, 141), 3.0)])  # a range across a span's ends
        store.append([ends("r", range(n * 125, (n + 1) * 125), 4.0) for n in range(NODES)])
        store.append([ErrorEvent("r", failure), ends("r", range(637, 638), 5.0, RankState.FAILED)])
        store.append([RunEvent("r", 6.0, RunState.FAILED, "rank 637 failed")])
        store.set_cluster("r", "c-1", {7: {**COORDS[7], "pid": 99}})  # (one rank's moved)

    both(stores, monkeypatch, cell)
    spans, alone = stores
    assert spans.ranks("r") == alone.ranks("r")
    got = {r.rank: (r.state, r.pid, r.heartbeat) for r in spans.ranks("r")}
    assert got[637] == ("failed", 1637, None) and got[5] == ("done", 1005, 2.0)
    assert got[7] == ("done", 99, None) and len(got) == N
    assert rows(spans, "r") < 40  # spans, and the few ranks that differ
    assert textviews.runs(spans, 1) == textviews.runs(alone, 1)


def test_a_clusters_coordinates_go_with_the_last_run_that_names_them(tmp_path: Path) -> None:
    store = Store(tmp_path / "h.sqlite")
    try:
        for run_id in ("a", "b"):
            store.create_run(RunRecord(run_id, "local", N, list(range(N))), COORDS)
            store.append([RunEvent(run_id, 1.0, RunState.COMPLETED)])
        assert store.delete_run("a")
        assert store._query("SELECT COUNT(*) FROM rank_sets") == [(1,)]
        assert [r.coords for r in store.ranks("b")] == [COORDS[r] for r in range(N)]
        assert store.delete_run("b")
        assert store._query("SELECT COUNT(*) FROM rank_sets") == [(0,)]
    finally:
        store.close()


def test_a_store_of_layout_5_gains_the_columns_and_reads_its_ranks_as_before(
    tmp_path: Path,
) -> None:
    path = tmp_path / "h.sqlite3"
    old = storefile.SCHEMA.replace(", last INTEGER, set_id INTEGER", "")
    db = sqlite3.connect(path)
    db.execute("PRAGMA journal_mode=WAL")
    db.executescript(old)
    db.execute("INSERT INTO ranks VALUES ('r', 3, 'h', 7, 'done', '{\"x\": 1}', 2.0, 1.5)")
    db.execute("PRAGMA user_version=5")
    db.commit()
    db.close()
    store = Store(path)
    try:
        (rank,) = store.ranks("r")
        assert (rank.rank, rank.host, rank.pid, rank.state, rank.coords) == (
            3,
            "h",
            7,
            "done",
            {"x": 1},
        )
        assert (rank.updated, rank.heartbeat) == (2.0, 1.5)
        assert store._query("PRAGMA user_version") == [(storefile.SCHEMA_VERSION,)]
    finally:
        store.close()


def test_a_span_another_writer_split_is_read_again(tmp_path: Path) -> None:
    kernel, other = Store(tmp_path / "h.sqlite"), Store(tmp_path / "h.sqlite")
    try:
        kernel.create_run(RunRecord("r", "local", N, list(range(N))), COORDS)
        other.append([MetricEvent("r", 5, 2.0, {"loss": 1.0})])  # splits node 0's span there
        kernel.append([MetricEvent("r", 6, 3.0, {"loss": 1.0})])  # (its spans as it kept them)
        kernel.append([ends("r", range(0, 125), 4.0)])
        beats = {r.rank: (r.heartbeat, r.state, r.coords) for r in kernel.ranks("r")}
        assert beats[5] == (2.0, "done", COORDS[5]) and beats[6] == (3.0, "done", COORDS[6])
        assert [r for r, b in beats.items() if b[0] is not None] == [5, 6]
        assert {b[1] for r, b in beats.items() if r < 125} == {"done"}
        assert {b[1] for r, b in beats.items() if r >= 125} == {"starting"}
    finally:
        kernel.close()
        other.close()


def test_nodes_states_on_their_kept_spans_are_one_statement(tmp_path: Path) -> None:
    """An aggregator's reduction of two nodes' ranks that all ended (one state span per node,
    one per host, touching) updates the nodes' ``ranks`` rows in ONE statement, not one per
    node; the rows read back as before."""
    store = Store(tmp_path / "h.sqlite")
    try:
        store.create_run(RunRecord("r", "local", N, list(range(N))), COORDS)
        spans = [(n * 125, n * 125 + 124, (RankState.RUNNING, RankState.DONE)) for n in (0, 1)]
        states = RankStates(
            "r", 2.0, (), [(a, b, s, f"node{a // 125}", list(range(1000 + a, 1001 + b)))
                           for a, b, s in spans]
        )  # fmt: skip
        said: list[str] = []
        store._db.set_trace_callback(said.append)
        store.append([states])
        store._db.set_trace_callback(None)
        touched = [s.split()[0] for s in said if " ranks " in s or s.startswith("UPDATE ranks")]
        assert touched == ["UPDATE"]  # one for both nodes: no count, no row-by-row look
        got = {r.rank: r.state for r in store.ranks("r")}
        assert got == {r: "done" if r < 250 else "starting" for r in range(N)}
    finally:
        store.close()


def test_a_cells_record_written_with_its_ends_inserts_its_rows_as_they_end(
    tmp_path: Path,
) -> None:
    """A cell on a live cluster behind relays writes its record, its nodes' ends and its own
    end in one transaction: its rows are inserted as they end, not inserted then updated, and
    read back as when the record and the ends are written apart."""
    one, apart = Store(tmp_path / "one.sqlite"), Store(tmp_path / "apart.sqlite")
    try:

        def batch(run_id: str) -> list[Any]:
            nodes = [
                (n * 125, n * 125 + 124, (RankState.RUNNING, RankState.DONE), f"node{n}",
                 list(range(1000 + n * 125, 1125 + n * 125)))
                for n in range(NODES)
            ]  # fmt: skip
            return [
                RankStates(run_id, 2.0, (), nodes[:3]),
                RankStates(run_id, 2.5, (), nodes[3:]),
                RunEvent(run_id, 3.0, RunState.COMPLETED),
            ]

        def record(run_id: str) -> RunRecord:
            return RunRecord(run_id, "local", N, list(range(N)), RunState.RUNNING, started=1.0)

        said: list[str] = []
        one._db.set_trace_callback(said.append)
        one.append(batch("r"), run=(record("r"), COORDS))
        one._db.set_trace_callback(None)
        apart.append([], run=(record("r"), COORDS))
        apart.append(batch("r"))
        assert not [s for s in said if s.startswith("UPDATE")]  # (before: 8 spans and the run)
        assert one.ranks("r") == apart.ranks("r")
        assert {r.state for r in one.ranks("r")} == {"done"}
        run = one.run("r")
        assert run == apart.run("r")
        assert run is not None and run.state is RunState.COMPLETED and run.ended == 3.0
        assert textviews.runs(one, 1) == textviews.runs(apart, 1)
        # a rank of its own in the batch: written as before (inserted, then set)
        own = [RankEvent("s", 3, 2.0, RankState.RUNNING, "node0", 1003), *batch("s")]
        one.append(own, run=(record("s"), COORDS))
        apart.append([], run=(record("s"), COORDS))
        apart.append(own)
        assert one.ranks("s") == apart.ranks("s") and one.run("s") == apart.run("s")
    finally:
        one.close()
        apart.close()


def test_one_span_over_the_nodes_of_one_machine_is_inserted_as_it_ends(tmp_path: Path) -> None:
    """The root aggregator's one span over several nodes on one machine (simulated nodes: the
    ``ranks`` rows are one per node, the reduction one for them all), written with the cell's
    record: each node's row is inserted as it ends, and the run as completed, with no update
    of the rows just made; they read back as when the record and the ends are written apart."""
    coords = {r: {**c, "host": "vm"} for r, c in COORDS.items()}
    one, apart = Store(tmp_path / "one.sqlite"), Store(tmp_path / "apart.sqlite")
    try:
        pids = tuple(range(1000, 1000 + N))
        root = ((0, N - 1, (RankState.RUNNING, RankState.DONE), "vm", pids),)
        batch: list[Any] = [RankStates("r", 2.0, (), root), RunEvent("r", 3.0, RunState.COMPLETED)]
        record = RunRecord("r", "local", N, list(range(N)), RunState.RUNNING, started=1.0)
        said: list[str] = []
        one._db.set_trace_callback(said.append)
        one.append(batch, run=(record, coords))
        one._db.set_trace_callback(None)
        apart.append([], run=(record, coords))
        apart.append(batch)
        assert not [s for s in said if s.startswith("UPDATE")]  # (before: the ranks and the run)
        assert rows(one, "r") == NODES
        assert one.ranks("r") == apart.ranks("r")
        assert {r.state for r in one.ranks("r")} == {"done"}
        assert one.run("r") == apart.run("r")
        assert textviews.runs(one, 1) == textviews.runs(apart, 1)
        # a span that does not hold its nodes' rows exactly: written as before (set after)
        part = ((0, 130, (RankState.RUNNING, RankState.DONE), "vm", pids[:131]),)
        record = RunRecord("s", "local", N, list(range(N)), RunState.RUNNING, started=1.0)
        said.clear()
        one._db.set_trace_callback(said.append)
        one.append([RankStates("s", 2.0, (), part)], run=(record, coords))
        one._db.set_trace_callback(None)
        assert [s for s in said if s.startswith("UPDATE")]
        assert {r.rank for r in one.ranks("s") if r.state == "done"} == set(range(131))
    finally:
        one.close()
        apart.close()


def test_the_writer_keeps_the_spans_of_its_latest_runs_only(tmp_path: Path) -> None:
    """A kernel's writer keeps a run's spans (for the updates that follow) for its latest
    runs only, not one list more for every cell it ever ran; an older run's rank is still
    set as before (its spans read again)."""
    store = Store(tmp_path / "h.sqlite")
    try:
        ranks = list(range(N))
        for i in range(3 * rankshape.BOUNDS_KEPT):
            store.create_run(RunRecord(f"r{i}", "local", N, ranks), COORDS)
        assert len(store._sets.bounds) <= rankshape.BOUNDS_KEPT
        store.append([RankEvent("r0", 200, 2.0, RankState.DONE, "node1", 1200)])
        got = {r.rank: r.state for r in store.ranks("r0")}
        assert got == {r: "done" if r == 200 else "starting" for r in range(N)}
        assert rows(store, "r0") == NODES + 2  # (node 1's span split around rank 200)
    finally:
        store.close()


def test_a_runs_ranks_rows_are_one_statement_whatever_its_nodes(tmp_path: Path) -> None:
    """A cell's record on a live cluster inserts its ranks' rows (a span per node, a row of
    its own for a rank that shares no span) in ONE statement, not one per row, and they read
    back as the rows of the same run written one by one."""
    coords = {**COORDS, N: {**COORDS[0], "rank": N, "node_rank": NODES, "host": "other"}}
    ranks = list(range(N + 1))
    store = Store(tmp_path / "h.sqlite")
    try:
        said: list[str] = []
        for run_id in ("a", "b"):
            store._db.set_trace_callback(said.append)
            store.create_run(RunRecord(run_id, "local", N + 1, ranks, started=1.0), coords)
            store._db.set_trace_callback(None)
            inserts = [s for s in said if s.startswith("INSERT INTO main.ranks")]
            assert len(inserts) == 1 and not [s for s in said if "INTO ranks" in s]
            said.clear()
        assert rows(store, "b") == NODES + 1
        got = store.ranks("b")
        assert [(r.rank, r.host, r.pid, r.state, r.updated) for r in got] == [
            (r, coords[r]["host"], coords[r]["pid"], "starting", 1.0) for r in ranks
        ]
        assert [r.coords for r in got] == [coords[r] for r in ranks]
    finally:
        store.close()


def test_rows_made_in_a_transaction_that_failed_are_made_again(tmp_path: Path) -> None:
    """A run whose transaction failed after its cluster's rows were worked out (here: its
    id is taken) leaves nothing behind: the next run on those coordinates has its own ranks'
    hosts, not the earlier cluster's."""
    moved = {r: {**c, "host": f"moved{r // 125}"} for r, c in COORDS.items()}
    store = Store(tmp_path / "h.sqlite")
    try:
        store.create_run(RunRecord("a", "local", N, list(range(N))), COORDS)
        with pytest.raises(StoreError):
            store.create_run(RunRecord("a", "local", N, list(range(N))), moved)
        store.create_run(RunRecord("b", "local", N, list(range(N))), moved)
        assert {r.host for r in store.ranks("b")} == {f"moved{n}" for n in range(NODES)}
        assert {r.host for r in store.ranks("a")} == {f"node{n}" for n in range(NODES)}
    finally:
        store.close()
