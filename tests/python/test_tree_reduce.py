"""A cell's end through aggregators as reductions (issue 26): O(aggregators) at the kernel.

- A relay, and an aggregator, hold their ends past the first 0.5 s while the others still
  come (a node's ranks about to end: no partial reduction of scattered ranks), but no longer
  than 2 s after the first; once every awaited end is in, they go at once.
- An aggregator merges its relays' plain ends into spans across its nodes (``[0, 7]``, not one
  per node); the kernel refuses a span that holds a rank of a node not behind its sender, even
  where the span's ends are its own (nodes whose ranks interleave).
- The kernel takes an aggregator's span as one :class:`Ended`, one write to the ranks' views
  and one ``ranks`` update, its states one span per host in one history row; each rank's
  states, host and pid read back as before.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_distributed.cluster import fanin
from jupyter_distributed.cluster.aggregator import Merger
from jupyter_distributed.cluster.aggregator import merged as merged_of
from jupyter_distributed.cluster.aggregators import (
    above,
    aggregated_nodes,
    other_aggregators,
    rooted,
)
from jupyter_distributed.cluster.inbox import Ended
from jupyter_distributed.cluster.noderuns import NodeRuns
from jupyter_distributed.cluster.relaydsts import ByDst
from jupyter_distributed.cluster.router import Router
from jupyter_distributed.interface import RankInfo
from jupyter_distributed.layout import Layout
from jupyter_distributed.protocol.receivers import Receivers
from jupyter_distributed.protocol.signing import Signer, cell_name

from .test_fanin_ranges import KEY, RUN, deliver, kernel

LAYOUT = Layout(nodes=4, procs_per_node=8)  # 32 ranks, nodes 0-3 of 8 (at least RANGE_MIN)


def end(rank: int, seq: int = 1) -> dict[str, Any]:
    return {"type": "done", "src": cell_name(rank), "seq": seq, "run_id": RUN, "status": "ok"}


def test_a_relay_holds_its_ends_while_the_others_still_come_and_no_longer_than_2_s() -> None:
    clock = [100.0]
    reducer = fanin.Reducer(range(8), clock=lambda: clock[0], accepted=lambda src: 0)
    reducer.sent({"type": "execute", "run_id": RUN, "dst": [cell_name(r) for r in range(8)]})
    for rank in range(7):  # one end every 0.2 s: the node is still ending past 0.5 s
        assert reducer.hold(end(rank), 0)
        assert reducer.due()[0] == []
        clock[0] += 0.2
    assert reducer.hold(end(7), 0)
    (reduced,), wait = reducer.due()  # all in, 1.4 s after the first: one reduction
    assert (reduced["done"], reduced["ranges"], wait) == (8, [[0, 7]], None)

    reducer.sent({"type": "execute", "run_id": "next", "dst": [cell_name(r) for r in range(8)]})
    for rank in range(8):  # the same trickle, but rank 3 never ends: sent 2 s after the first
        clock[0] = 200.0 + 0.25 * rank
        if rank != 3:
            assert reducer.hold({**end(rank, 2), "run_id": "next"}, 0)
        assert reducer.due()[0] == []
    clock[0] = 201.99
    assert reducer.due()[0] == []
    clock[0] = 202.0
    (partial,), _ = reducer.due()
    assert partial["ranges"] == [[0, 2], [4, 7]]

    reducer.sent({"type": "execute", "run_id": "quiet", "dst": [cell_name(r) for r in range(8)]})
    held_at = clock[0]
    assert reducer.hold({**end(0, 3), "run_id": "quiet"}, 0)  # a straggler's node: none come
    clock[0] = held_at + fanin.HOLD_S - 0.01
    assert reducer.due()[0] == []
    clock[0] = held_at + fanin.HOLD_S
    assert [r["ranges"] for r in reducer.due()[0]] == [[[0, 0]]]  # after 0.5 s, as before


def reduction(src_ranges: list[list[int]], **extra: Any) -> dict[str, Any]:
    done = sum(b - a + 1 for a, b in src_ranges)
    return {
        "type": fanin.REDUCED, "run_id": RUN, "done": done, "of": done, "statuses": {"ok": done},
        "errors": 0, "slowest_rank": src_ranges[0][0], "slowest_ms": 1.0, "each": [],
        "ranges": src_ranges, **extra,
    }  # fmt: skip


def test_an_aggregator_merges_its_nodes_ends_into_one_span_and_holds_while_they_come() -> None:
    clock = [10.0]
    merger = Merger({cell_name(r): r for r in range(24)}, clock=lambda: clock[0])  # nodes 0-2
    merger.sent({"type": "execute", "run_id": RUN, "dst": [cell_name(r) for r in range(32)]})
    assert merger.hold({**reduction([[0, 7]]), "src": "n0"})
    clock[0] += 0.4
    assert merger.hold({**reduction([[8, 15]]), "src": "n1"})
    clock[0] += 0.2  # 0.6 s after the first, node 1's came 0.2 s ago: nodes are still ending
    assert merger.due()[0] == []
    error = {"type": "done", "src": cell_name(16), "run_id": RUN, "status": "error"}
    assert not merger.hold(error)  # an error goes up at once, as its rank signed it
    merger.passed(error)
    clock[0] += 0.05
    assert merger.hold({**reduction([[17, 23]]), "src": "n2"})
    (merged,), wait = merger.due()  # all in: at once
    assert (merged["ranges"], merged["done"], merged["nodes"], wait) == (
        [[0, 15], [17, 23]], 23, ["n0", "n1", "n2"], None,
    )  # fmt: skip
    assert fanin.ranged({**merged, "src": "a0-2"}, lambda r: r // 8) == [(0, 15), (17, 23)]
    # for a kernel that checks each rank's counter, the spans stay in the order of the seqs
    parts = [{**reduction([[0, 7]], seqs=[1] * 8), "src": "n0"}]
    parts.append({**reduction([[8, 15]], seqs=[2] * 8), "src": "n1"})
    kept = merged_of(RUN, parts)
    assert kept["ranges"] == [[0, 7], [8, 15]] and kept["seqs"] == [1] * 8 + [2] * 8


def test_a_nodes_partial_reductions_merged_count_its_ranks_once() -> None:
    parts = [{**reduction([[0, 2]], of=8), "src": "n0"}, {**reduction([[3, 7]], of=8), "src": "n0"}]
    parts.append({**reduction([[8, 15]]), "src": "n1"})
    out = merged_of(RUN, parts)
    assert (out["done"], out["of"], out["nodes"]) == (16, 16, ["n0", "n1"])


def test_the_root_merges_the_other_aggregators_ends_into_one_reduction_for_every_node() -> None:
    clock = [10.0]
    every = {cell_name(r): r for r in range(32)}  # nodes 0-3: its own 0-1, a2-3's below it
    root = Merger(every, clock=lambda: clock[0], merges=frozenset({"a2-3"}))
    root.sent({"type": "execute", "run_id": RUN, "dst": list(every)})
    assert root.hold({**reduction([[0, 7]]), "src": "n0"})
    error = {"type": "done", "src": cell_name(9), "run_id": RUN, "status": "error"}
    assert not root.hold(error)  # the first error is never held behind a merge
    root.passed(error)
    assert root.hold({**reduction([[8, 8], [10, 15]]), "src": "n1"})
    assert root.due()[0] == []  # (nodes 2-3 still to come, within 0.5 s)
    below = merged_of(RUN, [{**reduction([[16, 23]]), "src": "n2"}])
    below = merged_of(RUN, [below | {"src": "a2-3"}, {**reduction([[24, 31]]), "src": "n3"}])
    assert not Merger(every).hold({**below, "src": "a2-3"})  # (not the root: forwarded)
    assert root.hold({**below, "src": "a2-3"})
    (one,), wait = root.due()  # every rank in: ONE reduction for the whole cluster, at once
    assert (one["ranges"], one["done"], one["nodes"], wait) == (
        [[0, 8], [10, 31]], 31, ["n0", "n1", "n2", "n3"], None,
    )  # fmt: skip
    node_of = lambda r: r // 8 if 0 <= r < 32 else None  # noqa: E731
    assert fanin.ranged({**one, "src": "a0-3"}, node_of) == [(0, 8), (10, 31)]


def test_aggregators_dial_the_root_and_it_the_kernel() -> None:
    boot: dict[str, Any] = {"address": "ipc:///k/ctl", "fanout": 2, "curve": None}
    boot["aggregators"] = {"0": "ipc:///k/aggregator-0", "1": "ipc:///k/aggregator-1"}
    rooted(boot)
    assert [above(boot, a)[0] for a in (0, 1)] == ["ipc:///k/ctl", "ipc:///k/aggregator-0"]
    assert aggregated_nodes(boot, 0, 4) == [0, 1, 2, 3]  # (the root answers for every node)
    assert aggregated_nodes(boot, 1, 4) == [2, 3]
    assert other_aggregators(boot, 0, 4) == [(2, 3)] and other_aggregators(boot, 1, 4) == []
    keys = {"public": "p", "secret": "s", "server": "kernel's"}
    tcp = {**boot, "curve": keys, "aggregator_curve": {"server": "root's", "secret": "x"}}
    tcp["aggregators"] = {"0": "tcp://h0:7000", "1": "tcp://h2:7001"}
    assert above(tcp, 1) == ("tcp://h0:7000", {**keys, "server": "root's"})
    assert above(tcp, 0) == (tcp["address"], keys)
    one = {"address": "ipc:///k/ctl", "fanout": 2, "aggregators": {"0": "ipc:///k/agg-0"}}
    rooted(one)
    assert "root" not in one and above(one, 0)[0] == "ipc:///k/ctl"  # (one needs no root)


def test_a_span_holding_a_rank_of_a_node_not_behind_its_sender_is_refused() -> None:
    node_of = lambda r: r % 2 if 0 <= r < 8 else None  # noqa: E731 - nodes interleave (relay_of)
    runs = NodeRuns(range(8), node_of)
    n0 = {"src": "n0", "ranges": [[0, 2]]}  # ranks 0 and 2 are node 0's, 1 is node 1's
    for given in (None, runs):
        with pytest.raises(fanin.BadReduction, match="n0 spoke for ranks 0-2"):
            fanin.ranged(n0, node_of, given)
        assert fanin.ranged({"src": "n0", "ranges": [[0, 0], [2, 2]]}, node_of, given)
        assert fanin.ranged({"src": "a0-1", "ranges": [[0, 7]]}, node_of, given) == [(0, 7)]
        with pytest.raises(fanin.BadReduction, match="spoke for ranks 6-8"):
            fanin.ranged({"src": "a0-1", "ranges": [[6, 8]]}, node_of, given)  # 8: no rank
    assert runs.within(0, 7, (0, 1)) and not runs.within(0, 7, (0, 0))


def host(rank: int) -> str:
    return f"host{LAYOUT.coords(rank).node_rank}"


@pytest.fixture
def router(tmp_path: Path) -> Iterator[Router]:
    info = {r: RankInfo(r, host(r), 100 + r, "idle", LAYOUT.coords(r)) for r in range(32)}
    coords = {r: {"host": host(r), "pid": 100 + r, "node_rank": r // 8} for r in range(32)}
    yield from kernel(tmp_path, info, coords)


def test_an_aggregators_span_across_nodes_is_one_end_one_write_and_reads_back_per_rank(
    router: Router,
) -> None:
    said: list[str] = []
    router.store._db.set_trace_callback(said.append)  # (the writer's connection: this thread)
    a0 = Signer(KEY, "a0-3")
    items = deliver(router, a0.pack(reduction([[0, 31]])))
    router.store._db.set_trace_callback(None)
    ended = [list(i.ranks) for i in items if isinstance(i, Ended)]
    assert ended == [list(range(32))]  # one Ended for the four nodes
    assert not router.cell.awaited
    updates = [s for s in said if s.startswith("UPDATE ranks")]
    assert len(updates) == 1  # four nodes' rows, four hosts: one statement
    got: dict[int, list[tuple[str, str, int]]] = {}
    for _, event in router.store.events_after(0, RUN):
        if event["kind"] == "rank":
            got.setdefault(event["rank"], []).append((event["state"], event["host"], event["pid"]))
    assert got == {
        r: [("running", host(r), 100 + r), ("done", host(r), 100 + r)] for r in range(32)
    }
    rows = {r.rank: (r.state, r.host, r.pid) for r in router.store.ranks(RUN)}
    assert rows == {r: ("done", host(r), 100 + r) for r in range(32)}
    assert all(info.state == "idle" for info in router.ranks.info.values())
    span = router.intake.spans.span(0, 31)
    assert [(f, la, h) for f, la, h, _ in router.intake.spans.ident(span)] == [
        (8 * n, 8 * n + 7, f"host{n}") for n in range(4)
    ]


def test_nodes_on_one_host_that_all_ended_are_one_ranks_update(tmp_path: Path) -> None:
    """An aggregator's span of nodes on one host (one state span: its ranks' host is one):
    their ``ranks`` rows, one per node, are one statement, without a count first."""
    info = {r: RankInfo(r, "here", 100 + r, "idle", LAYOUT.coords(r)) for r in range(32)}
    coords = {r: {"host": "here", "pid": 100 + r, "node_rank": r // 8} for r in range(32)}
    for router in kernel(tmp_path, info, coords):
        said: list[str] = []
        router.store._db.set_trace_callback(said.append)
        deliver(router, Signer(KEY, "a0-3").pack(reduction([[0, 31]])))
        router.store._db.set_trace_callback(None)
        assert [s.split()[0] for s in said if " ranks " in s] == ["UPDATE"]
        assert {r.state for r in router.store.ranks(RUN)} == {"done"}
        assert len(list(router.store._query("SELECT 1 FROM ranks", ()))) == 4  # still spans


def test_node_runs_say_what_a_look_at_each_rank_says() -> None:
    """:class:`NodeRuns` (one step per node a span crosses) against each rank looked at, for
    random clusters: blocks of nodes, interleaved nodes, missing ranks."""
    rng = random.Random(26)  # noqa: S311 (repeatable clusters, not a secret)
    for _ in range(3000):
        ranks = rng.sample(range(50), rng.randint(1, 40))
        width = rng.randint(1, 8)
        nodes = {r: (r // width if rng.random() < 0.5 else rng.randint(0, 5)) for r in ranks}
        runs = NodeRuns(ranks, nodes.get)
        first = rng.randint(-1, 51)
        last, low = rng.randint(first, 52), rng.randint(0, 5)
        high = rng.randint(low, 6)
        each = all(r in nodes and low <= nodes[r] <= high for r in range(first, last + 1))
        assert runs.within(first, last, (low, high)) == each, (nodes, first, last, low, high)


def test_a_hop_reads_a_cells_dst_once_until_a_route_changes() -> None:
    reads: list[object] = []
    names = {cell_name(r) for r in range(10)}

    def read(dst: Receivers) -> list[str]:
        reads.append(dst)
        return sorted(dst.among(names))

    by_dst = ByDst(read)
    assert by_dst.get(["c0-9"]) == sorted(names) and by_dst.get(["c0-9"]) == sorted(names)
    assert by_dst.get("c3") == ["c3"] and len(reads) == 2  # (each dst read once)
    names.add(cell_name(10))
    by_dst.clear()  # (a route learned anew: read again)
    assert by_dst.get(["c0-10"]) == sorted(names) and len(reads) == 3
