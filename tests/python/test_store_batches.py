"""A batch of mixed events is stored in arrival order, with one heartbeat per rank."""

from __future__ import annotations

import time
from pathlib import Path

from jupyter_distributed.events import Event, MetricEvent, OutputEvent, RankEvent, RankState, Stream
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
