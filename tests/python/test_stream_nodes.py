"""The live stream's rows batched per node (``stream?format=nodes``, ``server/nodebatch.py``):
every event once, as the one-object-per-event stream gives it, in fewer, smaller messages; a
client that does not ask still gets an object per event."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

from jupyter_distributed.errors import RankFailure
from jupyter_distributed.events import (
    ErrorEvent,
    Event,
    MetricEvent,
    OutputEvent,
    RankEvent,
    RankState,
    RunEvent,
    RunState,
    Stream,
)
from jupyter_distributed.history.store import RunRecord, Store
from jupyter_distributed.server.nodebatch import Hosts
from jupyter_distributed.server.stream import encode, last_seq, read_slice

from .test_server_api import (  # noqa: F401 (fixtures)
    API,
    Connect,
    Fetch,
    jp_server_config,
    sse_messages,
    start_writer,
    store,
    store_path,
)

RUN, NODES, PER_NODE, T0 = "big", 4, 8, 1_700_000_000.0


def unbatch(message: dict[str, Any]) -> list[tuple[int, dict[str, Any]]]:
    """A message's events one by one, as the stream without batches sends them, by seq."""
    out: list[tuple[int, dict[str, Any]]] = [
        (i["seq"], i["event"]) for i in message.get("events", [])
    ]
    for b in message.get("batches", []):
        if "event" in b:
            out.append((b["seq"], b["event"]))
            continue
        base = {"kind": b["kind"], "run_id": b["run_id"]}
        for i, seq in enumerate(b["seq"]):
            event = {**base, "rank": b["rank"][i], "t": b["t"][i]}
            if b["kind"] == "output":
                event |= {"stream": b["stream"], "text": b["text"][i]}
            elif b["kind"] == "metric":
                event["values"] = {name: column[i] for name, column in b["values"].items()}
            else:
                event |= {"state": b["state"][i], "host": b["node"], "pid": b["pid"][i]}
            out.append((seq, event))
    return sorted(out, key=lambda item: item[0])


def read(db: Store, after: int = 0, hosts: Hosts | None = None) -> tuple[int, Any]:
    """``read_slice``'s cursor and message, the message as the JSON a client parses."""
    cursor, message, _ = read_slice(db, after, RUN, 10_000, hosts)
    return cursor, json.loads(encode(message)) if message is not None else {}


def record(db: Store, seconds: int = 3) -> None:
    """A run of 32 ranks on 4 nodes: states, then each second a line of every rank (the ranks
    in turn across nodes, so that the nodes' lines interleave), a metric sample of every rank,
    an error in the middle; then the ranks done."""
    ranks = range(NODES * PER_NODE)
    db.create_run(
        RunRecord(id=RUN, backend="local", world_size=len(ranks), ranks=list(ranks), started=T0),
        coords={r: {"host": f"node{r // PER_NODE}"} for r in ranks},
    )
    events: list[Event] = [RunEvent(RUN, T0, RunState.RUNNING)]
    events += [
        RankEvent(RUN, r, T0, RankState.RUNNING, f"node{r // PER_NODE}", 100 + r) for r in ranks
    ]
    for s in range(seconds):
        t = T0 + 1 + s
        events += [OutputEvent(RUN, r, t, Stream.STDOUT, f"step {s} rank {r}") for r in ranks]
        events += [MetricEvent(RUN, r, t, {"samples": 64.0, "loss": r / 10}) for r in ranks]
        if s == 1:
            failure = RankFailure(rank=5, t=t, host="node0", ename="ValueError", evalue="bad")
            events.append(ErrorEvent(RUN, failure))
    events += [
        RankEvent(RUN, r, T0 + 9, RankState.DONE, f"node{r // PER_NODE}", 100 + r) for r in ranks
    ]
    events.append(RunEvent(RUN, T0 + 9, RunState.COMPLETED))
    db.append(events)


def test_batches_per_node_carry_every_event_once_in_fewer_bytes(tmp_path: Path) -> None:
    db = Store(tmp_path / "history.sqlite3")
    record(db)
    _, plain = read(db)
    _, nodes = read(db, hosts=Hosts(db))
    assert "events" in plain and "batches" in nodes  # a client that does not ask: as before
    want = [(seq, event) for seq, event in db.events_after(0, RUN, 10_000)]
    assert unbatch(nodes) == want
    batches = nodes["batches"]
    assert db.rank_hosts(RUN) == {r.rank: r.host for r in db.ranks(RUN)}  # (spans of 8)
    grouped = [b for b in batches if "event" not in b]
    # a node's lines (and samples, and states) of a stretch between lone events are one batch
    assert {b["node"] for b in grouped} == {f"node{n}" for n in range(NODES)}
    assert all(len(b["seq"]) % PER_NODE == 0 for b in grouped)
    assert len(batches) < len(want) / 6
    assert [b["event"]["kind"] for b in batches if "event" in b] == ["run", "run", "error", "run"]
    assert len(encode(nodes)) < 0.6 * len(encode(plain))
    assert last_seq(nodes) == last_seq(plain) == want[-1][0]
    db.close()


def test_a_batch_never_crosses_an_event_sent_alone(tmp_path: Path) -> None:
    """The error at second 1 ends the batches before it: applied in order, the rank's state
    after it is what the events one by one leave."""
    db = Store(tmp_path / "history.sqlite3")
    record(db)
    _, nodes = read(db, hosts=Hosts(db))
    error = next(
        b["seq"] for b in nodes["batches"] if "event" in b and b["event"]["kind"] == "error"
    )
    for b in nodes["batches"]:
        if "event" not in b:
            assert b["seq"][-1] < error or b["seq"][0] > error
    db.close()


def test_a_rank_the_store_learns_later_gets_its_node(tmp_path: Path) -> None:
    db = Store(tmp_path / "history.sqlite3")
    db.create_run(RunRecord(id=RUN, backend="local", world_size=2, ranks=[0, 1], started=T0))
    db.append([OutputEvent(RUN, 0, T0, Stream.STDOUT, "early")])
    clock = [0.0]
    hosts = Hosts(db, lambda: clock[0])
    cursor, first = read(db, hosts=hosts)
    assert [b.get("node") for b in first["batches"]] == [None, ""]  # the run; no host known yet
    db.append([RankEvent(RUN, 1, T0, RankState.RUNNING, "node7", 101)])
    db.append([OutputEvent(RUN, 1, T0, Stream.STDOUT, "later")])
    _, second = read(db, cursor, hosts)
    assert [b["node"] for b in second["batches"]] == ["node7", "node7"]  # learnt from its state
    db.close()


async def _receive(ws: Any, done: Any) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    deadline = time.monotonic() + 60
    while not done(messages):
        text = await asyncio.wait_for(ws.read_message(), deadline - time.monotonic())
        assert isinstance(text, str), "the server closed the stream"
        messages.append(json.loads(text))
    return messages


def _ended(messages: list[dict[str, Any]]) -> bool:
    return any(e.get("kind") == "run" and e.get("state") == "completed"
               for m in messages for _, e in unbatch(m))  # fmt: skip


async def test_the_websocket_batches_per_node_when_asked_and_resumes_exactly(
    jp_ws_fetch: Connect,
    store: Store,  # noqa: F811
    store_path: Path,  # noqa: F811
) -> None:
    writer = start_writer(store_path, "live", 30, 40)
    try:
        ws = await jp_ws_fetch(*API, "stream", params={"after": "0", "format": "nodes"})
        first = await _receive(ws, lambda ms: sum(len(unbatch(m)) for m in ms) >= 300)
        ws.close()
        assert all("batches" in m and "events" not in m for m in first)
        resume = max(last_seq(m) for m in first)  # type: ignore[arg-type]
        ws = await jp_ws_fetch(
            *API, "stream", params={"after": str(resume), "format": "nodes", "run": "live"}
        )
        second = await _receive(ws, lambda ms: _ended(first + ms))
        ws.close()
        ws = await jp_ws_fetch(*API, "stream", params={"after": "0", "run": "live"})
        plain = await _receive(ws, _ended)  # an older panel: an object per event
        ws.close()
    finally:
        assert writer.wait(60) == 0
    got = [item for m in first + second for item in unbatch(m)]
    assert got == store.events_after(0, "live", 10**6)
    assert all("events" in m and "batches" not in m for m in plain)
    assert [item for m in plain for item in unbatch(m)] == got


async def test_server_sent_events_batch_per_node_with_the_last_seq_as_id(
    jp_fetch: Fetch,
    store: Store,  # noqa: F811
    store_path: Path,  # noqa: F811
) -> None:
    writer = start_writer(store_path, "live", 5, 20)
    assert writer.wait(60) == 0
    params = {"after": "0", "format": "nodes", "run": "live"}
    ids, messages = await sse_messages(jp_fetch, _ended, params=params)
    assert ids == [str(unbatch(m)[-1][0]) for m in messages]  # the last seq of each
    assert [item for m in messages for item in unbatch(m)] == store.events_after(0, "live", 10**6)
