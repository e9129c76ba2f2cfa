"""What a trivial cell no longer costs the kernel each time (issue 26): the I/O thread's tick
only when due, the history's budget looked at every few seconds or thousand events, a cell's
held replies handed over in two items, and the ranks of a whole cluster made once.

These assert the behaviour (how often, how many), never a time."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import zmq

from jupyter_distributed.cluster.cellrun import CellRun, handed
from jupyter_distributed.cluster.inbox import Ended, Exited, Item, Show
from jupyter_distributed.errors import RankFailure
from jupyter_distributed.events import (
    MetricEvent,
    OutputLines,
    RankState,
    RankStates,
    RunEvent,
    RunState,
    Stream,
)
from jupyter_distributed.history import budget
from jupyter_distributed.history.store import RunRecord, Store
from jupyter_distributed.ioloop import IoLoop
from jupyter_distributed.layout import Layout
from jupyter_distributed.spec import Spec


def _loop(ticks: list[float], tick_on_wake: bool) -> tuple[IoLoop, zmq.Context[zmq.Socket[bytes]]]:
    ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    loop = IoLoop(
        ctx.socket(zmq.DEALER), lambda batch: None, lambda: ticks.append(time.monotonic()),
        lambda exc: None, poll_ms=60_000, tick_on_wake=tick_on_wake,
    )  # fmt: skip
    loop.start()
    return loop, ctx


def _woken(loop: IoLoop, times: int) -> None:
    """Wake the loop ``times`` times, each after the last was handled."""
    for _ in range(times):
        done = threading.Event()
        loop.call(done.set)
        assert done.wait(10)


@pytest.mark.parametrize("tick_on_wake", [False, True])
def test_a_loop_that_ticks_when_due_is_not_ticked_by_each_wake_up(tick_on_wake: bool) -> None:
    ticks: list[float] = []
    loop, ctx = _loop(ticks, tick_on_wake)
    try:
        _woken(loop, 1)
        first = len(ticks)
        _woken(loop, 30)  # a cell's messages: many wake-ups well within one 60 s tick
        after = len(ticks) - first
    finally:
        assert loop.stop(5)
        ctx.term()
    if tick_on_wake:  # (the rank's channel, as before)
        assert after >= 30
    else:
        assert first == 1 and after == 0


def test_a_watched_descriptor_can_ask_for_the_tick_at_once() -> None:
    """A process's end (its pidfd) still gets its look in the same round, not 60 s later."""
    ticks: list[float] = []
    loop, ctx = _loop(ticks, tick_on_wake=False)
    r, w = os.pipe()
    try:
        _woken(loop, 1)
        before = len(ticks)
        loop.watch(r, lambda: loop.tick_within(0.0))
        _woken(loop, 3)
        assert len(ticks) == before  # watched, not ready: no tick
        os.write(w, b"x")
        deadline = time.monotonic() + 10
        while len(ticks) == before and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(ticks) == before + 1
    finally:
        assert loop.stop(5)
        ctx.term()
        os.close(w)


def _lines(store: Store, run_id: str, n: int) -> None:
    store.append([OutputLines(run_id, 0, Stream.STDOUT, [(1.0 + i, "x" * 80) for i in range(n)])])


def test_the_budget_is_looked_at_again_after_many_events_a_new_budget_or_a_while(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = Store(tmp_path / "h.sqlite3")
    looks: list[int] = []
    real = store.enforce_budget

    def counted(max_bytes: int) -> str | None:
        looks.append(max_bytes)
        return real(max_bytes)

    monkeypatch.setattr(store, "enforce_budget", counted)
    store.create_run(RunRecord(id="a", backend="local", world_size=1, ranks=[0], started=1.0))
    big = 2**30
    assert store.keep_within(big) == [] and len(looks) == 1  # the first cell looks
    _lines(store, "a", 10)
    ends = ((0, 999, (RankState.DONE,), "h", tuple(range(1000))),)
    store.append([RankStates("a", 2.0, (), ends)])  # 1,000 ranks' ends: one small row
    assert store.keep_within(big) == [] and len(looks) == 1  # a trivial cell: no look
    _lines(store, "a", budget.LOOK_EVERY_EVENTS)
    store.keep_within(big)
    assert len(looks) == 2  # a cell that wrote a thousand lines: looked at
    store.keep_within(big // 2)
    assert len(looks) == 3  # the budget changed: looked at
    monkeypatch.setattr(budget, "LOOK_EVERY_S", 0.0)
    store.keep_within(big // 2)
    assert len(looks) == 4  # some time passed: looked at (another kernel may have written)
    store.close()


def test_a_look_past_the_budget_prunes_and_says_so_once(tmp_path: Path) -> None:
    store = Store(tmp_path / "h.sqlite3")
    for i in range(3):
        store.create_run(RunRecord(id=f"r{i}", backend="local", world_size=1, ranks=[0],
                                   started=1.0 + i))  # fmt: skip
        _lines(store, f"r{i}", 2000)
        store.append([RunEvent(f"r{i}", 2.0 + i, RunState.COMPLETED)])
    used = budget.used_bytes(store._reader())
    said = store.keep_within(used // 2)
    assert len(said) == 1 and "budget" in said[0]
    assert budget.used_bytes(store._reader()) <= used // 2
    assert store.keep_within(used // 2) == []  # once
    store.close()


def _ended(first: int, last: int, run: str = "r") -> Ended:
    return Ended(run, range(first, last + 1))


def test_held_replies_are_handed_over_as_one_show_and_the_ranges_they_end() -> None:
    m = [MetricEvent("r", i, 1.0, {"x": 1.0}) for i in range(4)]
    items: list[Item] = [
        Show((m[0],)), _ended(250, 374), _ended(0, 124),
        Show((m[1], m[2])), _ended(125, 249), _ended(500, 624),
        Show((m[3],)), _ended(375, 499),
    ]  # fmt: skip
    out = handed(items)
    assert out == [Show(tuple(m)), _ended(0, 624)]
    gap = handed([Show((m[0],)), _ended(0, 9), _ended(20, 29), _ended(10, 14, "other")])
    assert gap == [Show((m[0],)), _ended(10, 14, "other"), _ended(0, 9), _ended(20, 29)]
    failure = RankFailure(0, 1.0, "h", 1, "X", "x", ())
    other: list[Item] = [Show((m[0],)), Exited(failure), _ended(0, 9)]
    assert handed(other) == other  # not only quiet replies: as they came


def test_a_cells_held_reductions_leave_together_in_two_items() -> None:
    cell = CellRun()
    cell.start(None, 0.0)
    cell.sent_to({*range(1000)})
    last: list[Item] = []
    for node in range(8):
        ended = _ended(node * 125, node * 125 + 124)
        cell.took([], ended)
        last = [Show((MetricEvent("r", node, 1.0, {"x": 1.0}),)), ended]
        if node < 7:
            assert cell.hold([], last) is not None
    assert not cell.awaited and cell.hold([], last) is None  # the last: recorded at once
    _, items = cell.take_held([], last)  # (as Router.record takes them)
    assert [type(i) for i in items] == [Show, Ended]
    assert items[1] == _ended(0, 999) and len(items[0].events) == 8  # type: ignore[union-attr]


def test_a_whole_clusters_ranks_are_made_once() -> None:
    one = Spec(layout=Layout(nodes=1, procs_per_node=1000))
    two = Spec(layout=Layout(nodes=1, procs_per_node=1000))
    assert one.ranks == tuple(range(1000)) and one.ranks is two.ranks
    assert Spec(layout=Layout(nodes=1, procs_per_node=4), targets=(1, 3)).ranks == (1, 3)


def test_a_clusters_ranks_are_encoded_once_and_read_back_as_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    from jupyter_distributed.session import Session

    session = Session(Store(tmp_path / "h.sqlite3"))
    spec = Spec(layout=Layout(nodes=1, procs_per_node=1000))
    ranks = session._ranks(spec.ranks)
    assert ranks == list(range(1000)) and session._ranks(spec.ranks) is ranks
    encoded: list[object] = []
    real = json.dumps

    def dumps(value: object, **kwargs: Any) -> str:
        encoded.append(value)
        return str(real(value, **kwargs))

    monkeypatch.setattr(json, "dumps", dumps)
    for run_id in ("a", "b"):
        run = RunRecord(id=run_id, backend="local", world_size=1000, ranks=ranks, started=1.0)
        session.store.append([], run=(run, None))
    # the second run's are the first's text (as runs of numbers, layout 8)
    assert sum(v == [[0, 999]] for v in encoded) == 1
    got = session.store.run("b")
    assert got is not None and got.ranks == list(range(1000))
    session.store.close()
