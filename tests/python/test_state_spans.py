"""A reduction's plain ends recorded as spans of rank states (issue 26, layout 7): "ranks 0-124:
running, done" is one entry of one history row, not 250 ``[rank, state, host, pid]``. Every
reader gets each rank's states back as when they were written one by one: the same writes go
to two stores, one with the spans and one with each state alone; what their readers give
(the live stream, ``Store.ranks``, ``%distributed runs``, the logs) must be the same."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_distributed import textviews
from jupyter_distributed.cluster.fancompact import Compacting
from jupyter_distributed.cluster.fanin import spans
from jupyter_distributed.events import (
    OutputEvent,
    RankEvent,
    RankState,
    RankStates,
    Recorded,
    RunEvent,
    RunState,
    Stream,
)
from jupyter_distributed.history import eventrows, storefile
from jupyter_distributed.history.store import RunRecord, Store
from jupyter_distributed.interface import RankInfo
from jupyter_distributed.rankviews import RankSpans

from .test_rank_spans import COORDS, LAYOUT, NODES, N

PER = N // NODES


@pytest.fixture
def stores(tmp_path: Path) -> Iterator[tuple[Store, Store]]:
    """A store written with spans, and one with each state alone."""
    pair = Store(tmp_path / "spans.sqlite"), Store(tmp_path / "alone.sqlite")
    yield pair
    for store in pair:
        store.close()


def infos(running: set[int] | frozenset[int] = frozenset()) -> dict[int, RankInfo]:
    out = {}
    for r in range(N):
        c = COORDS[r]
        info = RankInfo(r, str(c["host"]), int(c["pid"]), "idle", LAYOUT.coords(r))
        info.state = "running" if r in running else "idle"
        out[r] = info
    return out


def reduction(run_id: str, ranks: list[int], info: dict[int, RankInfo], t: float) -> RankStates:
    """What the kernel's intake makes of a relay's plain ends of ``ranks`` (as ranges)."""
    compacting = Compacting()
    ranges = [(first, last) for first, last in spans(ranks)]
    compacting.ended(RankSpans(info), run_id, ranges, t)
    events: list[Recorded] = []
    compacting.close(events, [], 0)
    (states,) = events
    assert isinstance(states, RankStates)
    return states


def one_by_one(states: RankStates) -> RankStates:
    """The same states, each alone (the rows as before layout 7)."""
    return RankStates(states.run_id, states.t, states.each())


def rank_rows(store: Store) -> int:
    sql = "SELECT COUNT(*) FROM events WHERE kind=(SELECT code FROM codes WHERE name='rank')"
    ((count,),) = store._query(sql)
    return int(count)


def write(store: Store, cells: list[list[Recorded]], each: Callable[[], object] = list) -> None:
    """Each cell's run and batch written (``each`` called before each cell)."""
    for i, batch in enumerate(cells):
        each()
        run_id = f"run-{i}"
        store.create_run(RunRecord(run_id, "local", N, list(range(N)), started=float(i)), COORDS)
        store.append(batch)
        store.append([RunEvent(run_id, i + 0.9, RunState.COMPLETED)])


def test_a_nodes_plain_ends_are_one_entry_and_every_reader_sees_each_ranks_states(
    stores: tuple[Store, Store],
) -> None:
    # rank 3 said it ran (no second "running"), rank 130 is elsewhere (its own span), and
    # rank 260 has no pid: the spans split there, and the ranks' rows are set one by one
    info = infos(running={3, 4, 5})
    info[130].host = "elsewhere"
    info[260].pid = None
    cells: list[list[Recorded]] = []
    for i in range(2):
        run_id, batch = f"run-{i}", list[Recorded]()
        batch.append(OutputEvent(run_id, 0, i + 0.1, Stream.STDOUT, "a line"))
        for node in range(NODES):
            ranks = list(range(node * PER, (node + 1) * PER))
            batch.append(reduction(run_id, ranks, info, i + 0.5))
            for r in ranks:
                info[r].state = "running" if r in (3, 4, 5) else "idle"
        batch.append(RankEvent(run_id, 7, i + 0.6, RankState.RUNNING, "node0", 1007))
        cells.append(batch)
    spans, alone = stores
    write(spans, cells)
    write(alone, [[one_by_one(e) if isinstance(e, RankStates) else e for e in b] for b in cells])

    everything = 10**5
    assert spans.events_after(0, None, everything) == alone.events_after(0, None, everything)
    for run_id in ("run-0", "run-1"):
        assert spans.events_after(0, run_id, 10**5) == alone.events_after(0, run_id, 10**5)
        assert spans.events_after(7, run_id) == alone.events_after(7, run_id)  # (pages)
        assert spans.ranks(run_id) == alone.ranks(run_id)
        assert spans.logs(run_id) == alone.logs(run_id)
    assert textviews.runs(spans, 5) == textviews.runs(alone, 5)
    states = [e for _, e in spans.events_after(0, "run-1", 10**5) if e["kind"] == "rank"]
    assert len(states) == 2 * N - 3 + 1  # each rank running then done (3 ran already), rank 7
    assert [e["state"] for e in states if e["rank"] == 3] == ["done"]
    assert [e["state"] for e in states if e["rank"] == 9] == ["running", "done"]
    assert {(e["host"], e["pid"]) for e in states if e["rank"] in (130, 260)} == {
        ("elsewhere", 1130),
        ("node2", None),
    }
    got = {r.rank: (r.state, r.host) for r in spans.ranks("run-1")}
    assert got[7] == ("running", "node0") and got[130] == ("done", "elsewhere")
    assert {s for r, (s, _) in got.items() if r != 7} == {"done"}
    assert rank_rows(spans) == rank_rows(alone) == 2 * (NODES + 1)  # a row per node, rank 7's
    assert data_size(spans) * 4 < data_size(alone)  # spans, not a list per state


def data_size(store: Store) -> int:
    sql = "SELECT SUM(LENGTH(data)) FROM events WHERE rank IS NULL"
    ((size,),) = store._query(sql)
    return int(size)


def test_a_span_wider_than_a_row_is_cut_into_rows_read_back_in_order(tmp_path: Path) -> None:
    store = Store(tmp_path / "h.sqlite")
    n = eventrows.SPAN + 10  # two states each: 3 rows
    coords = {r: {"host": "one", "pid": r + 1} for r in range(n)}
    info = {r: RankInfo(r, "one", r + 1, "idle", LAYOUT.coords(0)) for r in range(n)}
    try:
        store.create_run(RunRecord("r", "local", n, list(range(n)), started=0.0), coords)
        states = reduction("r", list(range(n)), info, 1.0)
        assert store.append([states]) == 2 * n
        events = [e for _, e in store.events_after(0, "r", 10**5) if e["kind"] == "rank"]
        assert events == [e.to_json() for e in states.events()]
        assert rank_rows(store) == 3
        assert {r.state for r in store.ranks("r")} == {"done"}
    finally:
        store.close()


def test_an_older_reader_refuses_the_layout_and_an_older_store_reads_as_before(
    tmp_path: Path,
) -> None:
    path = tmp_path / "h.sqlite"
    store = Store(path)
    store.create_run(RunRecord("r", "local", 2, [0, 1], started=0.0), COORDS)
    old = RankStates(
        "r", 1.0, [(0, RankState.DONE, "node0", 1000), (1, RankState.DONE, "node0", 1001)]
    )
    store.append([old])
    store.close()
    db = sqlite3.connect(path)
    db.execute("PRAGMA user_version=6")  # (a layout 6 store: its rows are all per state)
    db.commit()
    db.close()
    store = Store(path)
    try:
        assert store._query("PRAGMA user_version") == [(storefile.SCHEMA_VERSION,)]
        assert storefile.SCHEMA_VERSION >= 7
        got = [
            (e["rank"], e["state"]) for _, e in store.events_after(0, "r") if e["kind"] == "rank"
        ]
        assert got == [(0, "done"), (1, "done")]
    finally:
        store.close()


def test_states_not_recorded_are_counted_with_their_spans() -> None:
    """What the history failed to write is counted state by state, the spans' ranks included
    (the cell's note says how many events are not in the history)."""
    from jupyter_distributed.events import count

    spanned = RankStates(
        "r",
        0.0,
        [(7, RankState.FAILED, "h", 70)],
        [(0, 4, (RankState.RUNNING, RankState.DONE), "h", [1] * 5)],
    )
    assert spanned.count == 1 + 5 * 2
    assert count([spanned]) == spanned.count == len(spanned.each())


def test_a_live_clusters_nodes_are_encoded_once_and_read_back_as_each_ranks(
    stores: tuple[Store, Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The kernel's rank views give a node's pids as the same tuple for every cell: its span
    entry is encoded once (before: a node's 125 pids per cell), and every cell's states read
    back as each rank's, as when written one by one."""
    info = infos()
    views = RankSpans(info)  # (one for the cluster, as the kernel's intake keeps it)
    cells: list[list[Recorded]] = []
    for i in range(3):
        run_id, batch = f"run-{i}", list[Recorded]()
        for node in range(NODES):
            compacting = Compacting()
            compacting.ended(views, run_id, [(node * PER, (node + 1) * PER - 1)], i + 0.5)
            compacting.close(batch, [], len(batch))
        cells.append(batch)
    spans, alone = stores
    encoded: list[int] = []
    real = json.dumps

    def dumps(value: object, *args: Any, **kwargs: Any) -> str:
        entries = value if isinstance(value, list) else [value]  # (json is shared)
        encoded[-1] += sum(isinstance(e, dict) and "pids" in e for e in entries)
        return str(real(value, *args, **kwargs))

    monkeypatch.setattr(json, "dumps", dumps)  # (staterows' json)
    write(spans, cells, lambda: encoded.append(0))
    monkeypatch.undo()
    # each node's entry once per states it gave (the first two cells' differ), then none
    assert encoded == [NODES, NODES, 0]
    write(alone, [[one_by_one(e) if isinstance(e, RankStates) else e for e in b] for b in cells])
    for run_id in ("run-0", "run-2"):
        assert spans.events_after(0, run_id, 10**5) == alone.events_after(0, run_id, 10**5)
        assert spans.ranks(run_id) == alone.ranks(run_id)


def test_an_aggregators_span_is_made_and_written_once_per_cluster_not_per_host_per_cell(
    stores: tuple[Store, Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An aggregator's span across its nodes (issue 26: 1,250 hosts at 10,000 ranks) gives
    the same states' spans every cell of a live cluster: the kernel makes them, and the
    history its row's entries, once (before: a step per host per cell, ~1,250 per cell), and
    every cell's states still read back as each rank's, as when written one by one."""
    from jupyter_distributed.history import staterows

    info = infos()
    views = RankSpans(info)  # (one for the cluster, as the kernel's intake keeps it)
    cells: list[list[Recorded]] = []
    for i in range(4):
        batch: list[Recorded] = []
        compacting = Compacting()
        compacting.ended(views, f"run-{i}", [(0, N - 1)], i + 0.5)  # (every node's ranks)
        compacting.close(batch, [], 0)
        cells.append(batch)
    (third,), (fourth,) = cells[2], cells[3]
    assert isinstance(third, RankStates) and isinstance(fourth, RankStates)
    assert len(third.spans) == NODES and third.spans is fourth.spans  # (made once)
    spans, alone = stores
    made: list[int] = []
    entry = staterows._entry

    def counted(*args: Any) -> str:
        made[-1] += 1
        return entry(*args)

    monkeypatch.setattr(staterows, "_entry", counted)
    write(spans, cells, lambda: made.append(0))
    monkeypatch.undo()
    assert made[2:] == [0, 0]  # (the first cells' states differ: running, then not)
    write(alone, [[one_by_one(e) if isinstance(e, RankStates) else e for e in b] for b in cells])
    for run_id in ("run-0", "run-1", "run-3"):
        assert spans.events_after(0, run_id, 10**5) == alone.events_after(0, run_id, 10**5)
        assert spans.ranks(run_id) == alone.ranks(run_id)
        assert {r.state for r in spans.ranks(run_id)} == {"done"}
