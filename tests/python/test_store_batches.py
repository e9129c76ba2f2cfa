"""A batch of mixed events is stored in arrival order, with one heartbeat per rank; a relay's
reduction is one row."""

from __future__ import annotations

import time
from pathlib import Path

from jupyter_distributed.events import (
    Event,
    MetricEvent,
    OutputEvent,
    RankEvent,
    RankState,
    RankStates,
    Recorded,
    Stream,
)
from jupyter_distributed.history.store import RunRecord, Store


def test_mixed_batch_keeps_arrival_order_and_last_heartbeat(tmp_path: Path) -> None:
    store = Store(tmp_path / "h.sqlite3")
    store.create_run(
        RunRecord(id="r", backend="local", world_size=2, ranks=[0, 1], started=time.time())
    )
    batch: list[Event] = [
        OutputEvent("r", 0, 1.0, Stream.STDOUT, "a"),
        OutputEvent("r", 1, 1.1, Stream.STDERR, "b"),
        MetricEvent("r", 0, 1.2, {"loss": 0.5}),
        MetricEvent("r", 0, 1.3, {"loss": 0.4}),
        OutputEvent("r", 0, 1.4, Stream.STDOUT, "c"),
        RankEvent("r", 0, 1.5, RankState.DONE),
        MetricEvent("r", 1, 1.6, {"loss": 0.3}),
        OutputEvent("r", 1, 1.7, Stream.STDOUT, "d"),
    ]
    assert store.append(batch) == len(batch)
    events = [e for _, e in store.events_after(0, "r") if e["kind"] != "run"]
    assert [(e["kind"], e["t"]) for e in events] == [(e.kind, e.t) for e in batch]
    assert [ln.text for ln in store.logs("r")] == ["a", "b", "c", "d"]
    assert [m.values["loss"] for _, m in store.metrics("r")] == [0.5, 0.4, 0.3]
    ranks = {r.rank: r for r in store.ranks("r")}
    assert ranks[0].heartbeat == 1.3 and ranks[1].heartbeat == 1.6
    assert ranks[0].state == "done"


def test_a_relays_reduction_is_one_row_read_back_as_each_ranks_events(tmp_path: Path) -> None:
    """A relay's reduction (:class:`RankStates`) is one row of the events table; readers get
    each rank's events back, as the per-rank events it replaces read, in order between the
    batch's other events; the ranks' rows say each rank's state, host and pid, a rank whose
    row named another host (12) or no pid (13) included."""
    store = Store(tmp_path / "h.sqlite3")
    n = 40
    coords = {r: {"host": "node1", "pid": 100 + r} for r in range(n)}
    coords[12] = {"host": "elsewhere", "pid": 112}
    coords[13] = {"host": "node1"}
    store.create_run(RunRecord(id="r", backend="local", world_size=n, ranks=list(range(n))), coords)
    states = [
        (r, s, "node1", 100 + r)
        for r in range(n)
        for s in (RankState.RUNNING, RankState.FAILED if r == 7 else RankState.DONE)
    ]
    compact = RankStates("r", 2.0, states)
    batch: list[Recorded] = [OutputEvent("r", 0, 1.0, Stream.STDOUT, "a"), compact]
    batch.append(OutputEvent("r", 1, 3.0, Stream.STDOUT, "b"))
    assert store.append(batch) == 2 * n + 2
    ((rows,),) = store._query(
        "SELECT COUNT(*) FROM events WHERE kind=(SELECT code FROM codes WHERE name='rank')"
    )
    assert rows == 1
    events = [e for _, e in store.events_after(0, "r") if e["kind"] != "run"]
    expected = [OutputEvent("r", 0, 1.0, Stream.STDOUT, "a").to_json()]
    expected += [e.to_json() for e in compact.events()]
    expected.append(OutputEvent("r", 1, 3.0, Stream.STDOUT, "b").to_json())
    assert events == expected
    ranks = {r.rank: (r.state, r.host, r.pid) for r in store.ranks("r")}
    assert ranks == {r: ("failed" if r == 7 else "done", "node1", 100 + r) for r in range(n)}
