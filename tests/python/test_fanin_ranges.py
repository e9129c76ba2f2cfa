"""A relay's plain ends as ranges (issue 26): "done on ranks 0-3" in one signed message.

The relay's side (:class:`~jupyter_distributed.cluster.fanin.Reducer`) and the kernel's (a real
router and history store, driven on this thread as ``bench_fanin_kernel.py`` drives them): the
ends that say nothing but ``ok`` travel as spans of ranks with each rank's counter; a value, an
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
from jupyter_distributed.cluster.inbox import Ended, Finished, Item
from jupyter_distributed.cluster.router import Router
from jupyter_distributed.cluster.transport import Transport
from jupyter_distributed.history.store import RunRecord, Store
from jupyter_distributed.interface import RankInfo
from jupyter_distributed.layout import Layout
from jupyter_distributed.protocol.signing import Signer, cell_name

KEY = secrets.token_bytes(32)
LAYOUT = Layout(nodes=2, procs_per_node=4)
RUN = "run-1"


def test_a_relay_sends_its_ranks_plain_ends_as_ranges() -> None:
    passed_on = {f"r{r}": 10 for r in range(4, 12)}  # the control counters the relay passed on
    reducer = fanin.Reducer(range(4, 12), accepted=lambda src: passed_on[src])
    older = fanin.Reducer(range(4, 12))  # a kernel that takes no ranges (no ``ranges`` boot)
    dst = [cell_name(r) for r in range(4, 12)]
    for r in (reducer, older):
        r.sent({"type": "execute", "run_id": RUN, "dst": dst})
    special: dict[int, dict[str, Any]] = {7: {"value": "7"}, 8: {"pull_errors": {"x": "gone"}}}
    for rank in range(4, 12):
        end = {"type": "done", "src": cell_name(rank), "seq": 100 + rank, "run_id": RUN}
        end |= {"status": "ok", "after": 11 if rank == 9 else 10, **special.get(rank, {})}
        assert reducer.hold(end, 0) and older.hold(dict(end), 0)
    (reduced,), _ = reducer.due()
    assert reduced["ranges"] == [[4, 6], [10, 11]]  # rank 9's output is still on its way
    assert reduced["seqs"] == [104, 105, 106, 110, 111]
    assert [e[0] for e in reduced["each"]] == [7, 8, 9]
    assert (reduced["done"], reduced["of"]) == (8, 8)
    (reduced,), _ = older.due()
    assert "ranges" not in reduced and [e[0] for e in reduced["each"]] == list(range(4, 12))


@pytest.fixture
def router(tmp_path: Path) -> Iterator[Router]:
    store = Store(tmp_path / "history.sqlite")
    info = {r: RankInfo(r, "here", 100 + r, "idle", LAYOUT.coords(r)) for r in range(8)}
    router = Router("jd-test", store, info, KEY, lambda: None, lambda why: None, Transport.ipc())
    coords = {r: {"host": "here", "pid": 100 + r} for r in range(8)}
    store.create_run(RunRecord(RUN, "local", 8, list(range(8))), coords)
    router.ranks.begin(RUN)
    router.cell.awaited = set(range(8))
    try:
        yield router
    finally:
        router.listener.close()
        router._loop.sock.close(linger=0)
        router._ctx.term()
        store.close()


def reduction(ranges: list[list[int]], seqs: list[int], *each: list[Any]) -> dict[str, Any]:
    return {
        "type": "dones", "run_id": RUN, "done": len(seqs) + len(each), "of": 4,
        "statuses": {}, "errors": 0, "slowest_rank": 0, "slowest_ms": 1.0,
        "ranges": ranges, "seqs": seqs, "each": list(each),
    }  # fmt: skip


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
        n0.pack(reduction([[0, 3]], [10, 11, 12, 13])),
        n1.pack(reduction([[4, 5]], [14, 15], [6, 16, 0, error], [7, 17, 0, value])),
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


def test_a_replayed_range_is_refused(router: Router, caplog: pytest.LogCaptureFixture) -> None:
    n0 = Signer(KEY, "n0")
    first = n0.pack(reduction([[0, 3]], [10, 11, 12, 13]))
    assert [type(i) for i in deliver(router, first) if not hasattr(i, "events")] == [Ended]
    before = states(router)
    with caplog.at_level(logging.WARNING, logger="jupyter_distributed"):
        assert deliver(router, first) == []  # the same message again: the relay's counter
        again = n0.pack(reduction([[0, 3]], [10, 11, 12, 13]))  # a fresh one, the ranks' old
        assert deliver(router, again) == []
        forged = n0.pack(reduction([[3, 4]], [20, 21]))  # rank 4 is node 1's
        assert deliver(router, forged) == []
    router.rejected.flush()
    said = " ".join(r.getMessage() for r in caplog.records)
    assert "replayed message n0#" in said
    assert all(f"replayed message c{r}#{10 + r}" in said for r in range(4))
    with pytest.raises(fanin.BadReduction, match="relay n0 spoke for ranks 3-4"):  # (why)
        fanin.ranged({"src": "n0", **reduction([[3, 4]], [20, 21])}, lambda r: r // 4)
    assert states(router) == before
    assert router.reduced_ends == 4


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
    items = fed(router, n0.pack(reduction([[0, 3]], [10, 11, 12, 13])))
    clock[0] += 0.3  # node 1's ranks end 300 ms later (relays and ranks on shared cores)
    router._on_tick()
    assert written == [] and items == [] and router.inbox.empty()  # node 0's still held
    fed(router, n1.pack(reduction([[4, 7]], [14, 15, 16, 17])))
    (one,) = written  # both nodes' ends and the run's end, at once with the last
    assert [type(e).__name__ for e in one] == ["RankStates", "RankStates", "RunEvent"]
    assert one[-1].state.value == "completed"
    append(one)
    assert states(router) == {r: ["running", "done"] for r in range(8)}

    router.cell.awaited = set(range(8))  # the next cell: node 1 never answers
    fed(router, n0.pack(reduction([[0, 3]], [20, 21, 22, 23])))
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
