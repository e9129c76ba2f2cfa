"""A relay's plain ends as ranges (issue 26): "done on ranks 0-3" in one signed message.

The relay's side (:class:`~jupyter_distributed.cluster.fanin.Reducer`) and the kernel's (a real
router and history store, driven on this thread as ``bench_fanin_kernel.py`` drives them): the
ends that say nothing but ``ok`` travel as spans of ranks under the relay's counter; a value, an
error, pulled values or output still on its way keep their rank's own ``Done``. What the
history and the notebook get is what one ``Done`` per rank gave, and a replay is refused.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import zmq

from jupyter_distributed.cluster import cellrun, fanin
from jupyter_distributed.cluster.inbox import Ended, Exited, Finished, Item
from jupyter_distributed.cluster.router import Router
from jupyter_distributed.cluster.transport import Transport
from jupyter_distributed.errors import RankFailure
from jupyter_distributed.history.store import RunRecord, Store
from jupyter_distributed.interface import RankInfo
from jupyter_distributed.layout import Layout
from jupyter_distributed.protocol.signing import Signer, cell_name

KEY = secrets.token_bytes(32)
LAYOUT = Layout(nodes=2, procs_per_node=4)
RUN = "run-1"


def test_a_relay_sends_its_ranks_plain_ends_as_ranges_its_counter_standing_for_theirs() -> None:
    passed_on = {f"r{r}": 10 for r in range(4, 12)}  # the control counters the relay passed on
    reducer = fanin.Reducer(range(4, 12), accepted=lambda src: passed_on[src])
    checking = fanin.Reducer(range(4, 12), accepted=lambda src: passed_on[src], seqs=True)
    older = fanin.Reducer(range(4, 12))  # a kernel that takes no ranges (no ``ranges`` boot)
    dst = [cell_name(r) for r in range(4, 12)]
    for r in (reducer, checking, older):
        r.sent({"type": "execute", "run_id": RUN, "dst": dst})
    special: dict[int, dict[str, Any]] = {7: {"value": "7"}, 8: {"pull_errors": {"x": "gone"}}}
    for rank in range(4, 12):
        end = {"type": "done", "src": cell_name(rank), "seq": 100 + rank, "run_id": RUN}
        end |= {"status": "ok", "after": 11 if rank == 9 else 10, **special.get(rank, {})}
        assert reducer.hold(end, 0) and checking.hold(dict(end), 0) and older.hold(dict(end), 0)
    (reduced,), _ = reducer.due()
    assert reduced["ranges"] == [[4, 6], [10, 11]]  # rank 9's output is still on its way
    assert "seqs" not in reduced  # the relay's own counter stands for its ranks' (RANGES)
    assert [e[0] for e in reduced["each"]] == [7, 8, 9]
    assert (reduced["done"], reduced["of"]) == (8, 8)
    (reduced,), _ = checking.due()  # a kernel of ``ranges`` 1 checks each rank's counter
    assert reduced["ranges"] == [[4, 6], [10, 11]]
    assert reduced["seqs"] == [104, 105, 106, 110, 111]
    (reduced,), _ = older.due()
    assert "ranges" not in reduced and [e[0] for e in reduced["each"]] == list(range(4, 12))


@pytest.fixture
def router(tmp_path: Path) -> Iterator[Router]:
    info = {r: RankInfo(r, "here", 100 + r, "idle", LAYOUT.coords(r)) for r in range(8)}
    yield from kernel(tmp_path, info, {r: {"host": "here", "pid": 100 + r} for r in range(8)})


def kernel(
    tmp_path: Path, info: dict[int, RankInfo], coords: dict[int, dict[str, Any]], key: bytes = KEY
) -> Iterator[Router]:
    """A real router and history store for ranks ``info``, a run of them started."""
    store = Store(tmp_path / "history.sqlite")
    router = Router("jd-test", store, info, key, lambda: None, lambda why: None, Transport.ipc())
    store.create_run(RunRecord(RUN, "local", len(info), sorted(info)), coords)
    router.ranks.begin(RUN)
    router.cell.awaited = set(info)
    try:
        yield router
    finally:
        router.listener.close()
        router._loop.sock.close(linger=0)
        router._endpoint.ctx.term()
        store.close()


def reduction(
    ranges: list[list[int]], seqs: list[int] | None = None, *each: list[Any]
) -> dict[str, Any]:
    """A relay's reduction (``seqs``: its ranks' counters, as a relay of ``ranges`` 1 adds)."""
    done = sum(last - first + 1 for first, last in ranges) + len(each)
    out = {
        "type": "dones", "run_id": RUN, "done": done, "of": 4, "statuses": {}, "errors": 0,
        "slowest_rank": 0, "slowest_ms": 1.0, "ranges": ranges, "each": list(each),
    }  # fmt: skip
    return out if seqs is None else {**out, "seqs": seqs}


def deliver(router: Router, *messages: list[Any]) -> list[Item]:
    """Relays' signed frames into the kernel in one batch; the items the notebook gets."""
    router._on_batch([[zmq.Frame(b"relay"), *(zmq.Frame(bytes(f)) for f in m)] for m in messages])
    router.record([], [])  # (what a cell's last replies are held back for, now)
    items = []
    while not router.inbox.empty():
        items.append(router.inbox.get_nowait())
    return items


def states(router: Router) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {}
    for _, event in router.store.events_after(0, RUN):
        if event["kind"] == "rank":
            out.setdefault(event["rank"], []).append(event["state"])
    return out


def test_ranges_give_what_a_done_per_rank_gave_and_a_failure_stays_its_ranks(
    router: Router,
) -> None:
    n0, n1 = Signer(KEY, "n0"), Signer(KEY, "n1")
    failure = {"rank": 6, "t": 1.0, "host": "here", "pid": 106, "ename": "ValueError"}
    failure |= {"evalue": "rank 6 failed", "traceback": []}
    error = {"type": "done", "run_id": RUN, "status": "error", "failure": failure}
    value = {"type": "done", "run_id": RUN, "status": "ok", "value": "'seven'"}
    items = deliver(
        router,
        n0.pack(reduction([[0, 3]])),
        n1.pack(reduction([[4, 5]], None, [6, 16, 0, error], [7, 17, 0, value])),
    )
    ended = [i for i in items if isinstance(i, Ended)]
    assert [(e.run_id, list(e.ranks)) for e in ended] == [(RUN, [0, 1, 2, 3]), (RUN, [4, 5])]
    assert sorted(i.rank for i in items if isinstance(i, Finished)) == [6, 7]
    assert states(router) == {r: ["running", "failed" if r == 6 else "done"] for r in range(8)}
    ranks = {r.rank: r.state for r in router.store.ranks(RUN)}
    assert ranks == {r: "failed" if r == 6 else "done" for r in range(8)}
    errors = [e for _, e in router.store.events_after(0, RUN) if e["kind"] == "error"]
    assert [(e["failure"]["rank"], e["failure"]["evalue"]) for e in errors] == [
        (6, "rank 6 failed")
    ]
    assert router.reduced_ends == 8 and not router.cell.awaited
    assert all(info.state == "idle" for info in router.ranks.info.values())


def test_a_reduction_is_vouched_for_by_its_relays_counter_and_a_replay_is_refused(
    router: Router, caplog: pytest.LogCaptureFixture
) -> None:
    n0 = Signer(KEY, "n0")
    first = n0.pack(reduction([[0, 1]]))  # no rank's counter: n0's stands for theirs
    older = n0.pack(reduction([[2, 3]]))  # signed before the next, delivered after it
    later = n0.pack(reduction([[2, 2]]))
    assert [list(i.ranks) for i in deliver(router, first) if isinstance(i, Ended)] == [[0, 1]]
    assert [list(i.ranks) for i in deliver(router, later) if isinstance(i, Ended)] == [[2]]
    before = states(router)
    with caplog.at_level(logging.WARNING, logger="jupyter_distributed"):
        assert deliver(router, first) == []  # the same message again: the relay's counter
        assert deliver(router, older) == []  # an older one of the same relay
        forged = Signer(b"x" * 32, "n0").pack(reduction([[3, 3]]))  # not the cluster's key
        assert deliver(router, forged) == []
        wrong = n0.pack(reduction([[3, 4]]))  # rank 4 is node 1's
        assert deliver(router, wrong) == []
        own = Signer(KEY, cell_name(3)).pack({"type": "done", "run_id": RUN, "status": "ok"})
        assert [i.rank for i in deliver(router, own) if isinstance(i, Finished)] == [3]
        assert deliver(router, own) == []  # a rank's own message: its own counter, as ever
    router.rejected.flush()
    said = " ".join(r.getMessage() for r in caplog.records)
    assert said.count("replayed message n0#") == 2 and "bad signature" in said
    assert "relay n0 spoke for ranks 3-4" in said and "replayed message c3#" in said
    assert states(router) == {**before, 3: ["running", "done"]}
    assert router.reduced_ends == 3


def test_an_older_relays_counters_are_taken_as_its_own(router: Router) -> None:
    n1 = Signer(KEY, "n1")  # (a relay of a kernel of ``ranges`` 1: each rank's counter too)
    items = deliver(router, n1.pack(reduction([[4, 7]], [1, 1, 1, 1])))
    assert [list(i.ranks) for i in items if isinstance(i, Ended)] == [[4, 5, 6, 7]]
    assert states(router) == {r: ["running", "done"] for r in range(4, 8)}


def test_a_cells_reductions_are_one_transaction_with_its_end_however_far_apart(
    router: Router, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = [1000.0]  # the I/O thread's hold, on a clock of the test's
    fake = SimpleNamespace(monotonic=lambda: clock[0], time=time.time)
    monkeypatch.setattr(cellrun, "time", fake)
    written: list[list[Any]] = []
    append = router.store.append
    monkeypatch.setattr(router.store, "append", lambda ev, run=None: written.append(list(ev)))
    n0, n1 = Signer(KEY, "n0"), Signer(KEY, "n1")
    items = fed(router, n0.pack(reduction([[0, 3]])))
    clock[0] += 0.3  # node 1's ranks end 300 ms later (relays and ranks on shared cores)
    router._on_tick()
    assert written == [] and items == [] and router.inbox.empty()  # node 0's still held
    fed(router, n1.pack(reduction([[4, 7]])))
    (one,) = written  # both nodes' ends and the run's end, at once with the last
    assert [type(e).__name__ for e in one] == ["RankStates", "RankStates", "RunEvent"]
    assert one[-1].state.value == "completed"
    append(one)
    assert states(router) == {r: ["running", "done"] for r in range(8)}

    router.cell.awaited = set(range(8))  # the next cell: node 1 never answers
    fed(router, n0.pack(reduction([[0, 3]])))
    clock[0] += fanin.HOLD_S
    router._on_tick()
    assert len(written) == 2  # held no longer than a relay holds its ranks' ends
    assert [type(i).__name__ for i in fed(router)] == ["Show", "Ended"]


def fed(router: Router, *messages: list[Any]) -> list[Item]:
    """Relays' signed frames into the kernel in one batch; what the notebook got so far."""
    router._on_batch([[zmq.Frame(b"relay"), *(zmq.Frame(bytes(f)) for f in m)] for m in messages])
    items = []
    while not router.inbox.empty():
        items.append(router.inbox.get_nowait())
    return items


def test_a_spans_ranks_are_reached_through_the_connection_their_last_ends_came_on(
    router: Router,
) -> None:
    n0 = Signer(KEY, "n0")

    def on(peer: bytes, frames: list[Any]) -> None:
        router._on_batch([[zmq.Frame(peer), *(zmq.Frame(bytes(f)) for f in frames)]])

    on(b"relay", n0.pack(reduction([[0, 3]])))
    on(b"relay", n0.pack(reduction([[0, 3]])))
    on(b"other", Signer(KEY, cell_name(2)).pack({"type": "done", "run_id": RUN, "status": "ok"}))
    assert router.intake.cell_peers[2] == b"other"
    on(b"relay", n0.pack(reduction([[0, 3]])))
    assert [router.intake.cell_peers[r] for r in range(4)] == [b"relay"] * 4


def test_once_a_node_is_dead_the_others_reductions_are_not_held_for_it(
    router: Router, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = [1000.0]
    fake = SimpleNamespace(monotonic=lambda: clock[0], time=time.time)
    monkeypatch.setattr(cellrun, "time", fake)
    dead = RankFailure(0, time.time(), "here", None, kind="relay", evalue="node 0 died")
    router.record([], [Exited(dead)])  # (the process watch saw node 0's relay die)
    fed(router)
    items = fed(router, Signer(KEY, "n1").pack(reduction([[4, 7]])))
    clock[0] += 2 * cellrun.HOLD  # (node 0's ranks, still awaited, never answer)
    router._on_tick()
    assert [type(i).__name__ for i in items + fed(router)] == ["Show", "Ended"]
