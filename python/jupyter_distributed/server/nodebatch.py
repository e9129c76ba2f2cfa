"""The live stream's rows batched per node (``GET stream?...&format=nodes``).

At 1,000-10,000 ranks a delta holds thousands of events, nearly all a rank's log line, metric
sample or state; as one JSON object each, the server spends its time writing the same keys again
and the panel parsing them. Here the events of one delta are grouped per node: a node's lines of
one stream, its samples of one set of metric names and its rank states are each one
:class:`~.wire.NodeBatch`, the events' fields as columns (``seq``, ``rank``, ``t``, then
``text``, the metrics' values by name, or ``state`` and ``pid``). Other events (a run's state,
an error, stacks) stay :class:`~.wire.StreamItem`s, and each one ends the batches open before
it: applied in order, batches and items change the panel's state as the events one by one
would, except that lines of different batches come in seq order only once sorted by ``seq``
(the panel does). A node is the host of the rank, as the store knows it; a rank not known yet
is of node ``""``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ..history.eventmerge import Stored
from ..history.queries import LOG_KINDS, event_json
from ..history.store import Store
from .wire import NodeBatch, StreamBatch

#: How often (seconds) a stream may read a run's hosts again for a rank it does not know yet.
HOSTS_AGAIN = 5.0


class Hosts:
    """The host of each rank of the runs a stream sends, read from the store when needed."""

    def __init__(self, store: Store, clock: Callable[[], float] = time.monotonic) -> None:
        self.store, self.clock = store, clock
        self._hosts: dict[str, dict[int, str]] = {}
        self._read: dict[str, float] = {}

    def of(self, run_id: str, rank: int) -> str:
        hosts = self._hosts.get(run_id)
        if hosts is None or (rank not in hosts and self.clock() > self._read[run_id] + HOSTS_AGAIN):
            hosts = self.store.rank_hosts(run_id)
            self._hosts[run_id], self._read[run_id] = hosts, self.clock()
        return hosts.get(rank, "")

    def learn(self, run_id: str, rank: int, host: str) -> None:
        """A rank's host, from its state event."""
        if host and run_id in self._hosts:
            self._hosts[run_id][rank] = host


def batches(events: list[tuple[str, Stored]], hosts: Hosts) -> list[StreamBatch]:
    """``events`` (seq order, with their run's id) as the batches of one delta, in order."""
    out: list[StreamBatch] = []
    open_: dict[tuple[Any, ...], NodeBatch] = {}
    for run_id, e in events:
        key, extra = _key(run_id, e, hosts)
        if key is None:
            out.append({"seq": e.seq, "event": event_json(e, run_id)})
            open_.clear()  # what comes after is applied after this event
            continue
        batch = open_.get(key)
        if batch is None:
            batch = _new(key)
            open_[key] = batch
            out.append(batch)
        batch["seq"].append(e.seq)
        batch["rank"].append(e.rank or 0)
        batch["t"].append(extra[0] if key[1] == "rank" else e.t)
        if key[1] == "output":
            batch["text"].append(e.text)
        elif key[1] == "metric":
            for name, column in batch["values"].items():
                column.append(e.data[name])
        else:
            batch["state"].append(extra[1])
            batch["pid"].append(extra[2])
    return out


def _key(run_id: str, e: Stored, hosts: Hosts) -> tuple[tuple[Any, ...] | None, tuple[Any, ...]]:
    """The batch an event goes in (run, kind, node, stream or metric names), or None: sent as
    it is; for a rank state, its (t, state, pid)."""
    if e.rank is None:
        return None, ()
    if e.kind in LOG_KINDS:
        return (run_id, "output", hosts.of(run_id, e.rank), e.stream), ()
    if e.kind == "metric":
        if not isinstance(e.data, dict) or not e.data:
            return None, ()
        return (run_id, "metric", hosts.of(run_id, e.rank), *e.data), ()
    if e.kind == "rank" and isinstance(e.data, dict):
        d = e.data
        state, host, pid, t = d.get("state"), d.get("host"), d.get("pid"), d.get("t", e.t)
        if d.get("rank") != e.rank or not isinstance(state, str) or not isinstance(host, str):
            return None, ()
        hosts.learn(run_id, e.rank, host)
        return (run_id, "rank", host or hosts.of(run_id, e.rank)), (t, state, pid)
    return None, ()


def _new(key: tuple[Any, ...]) -> NodeBatch:
    run_id, kind, node = key[:3]
    batch: NodeBatch = {
        "node": node,
        "run_id": run_id,
        "kind": kind,
        "seq": [],
        "rank": [],
        "t": [],
    }
    if kind == "output":
        batch["stream"], batch["text"] = key[3], []
    elif kind == "metric":
        batch["values"] = {name: [] for name in key[3:]}
    else:
        batch["state"], batch["pid"] = [], []
    return batch
