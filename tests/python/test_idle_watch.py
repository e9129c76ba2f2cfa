"""What a kernel does while its cluster sits idle (issue 26): where every process has a pidfd,
no periodic look at the processes (a death wakes the I/O thread and is named at once); the
panel's stop still acts within a second.
"""

from __future__ import annotations

import io
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_distributed.cluster.processwatch import CONTROL_REST, on_schedule
from jupyter_distributed.display import CellView
from jupyter_distributed.history.store import Store
from jupyter_distributed.layout import Layout
from jupyter_distributed.session import Session
from jupyter_distributed.spec import Spec

from .core_helpers import session_in


@pytest.fixture
def session(tmp_path: Path) -> Iterator[Session]:
    yield from session_in(tmp_path)


def _live_cluster(session: Session, relays: str = "always") -> Any:
    out = io.StringIO()
    spec = Spec(layout=Layout(nodes=1, procs_per_node=2), relays=relays)
    session.run_cell(spec, "pass", {}, view=CellView(out=out, err=out))
    (live,) = session.live.values()
    return live.cluster


def _until(done: Any, within: float) -> float:
    """Seconds until ``done()``, or ``within`` if it never was."""
    start = time.monotonic()
    while not done() and time.monotonic() - start < within:
        time.sleep(0.005)
    return time.monotonic() - start


@pytest.mark.skipif(not hasattr(os, "pidfd_open"), reason="no pidfds on this platform")
def test_an_idle_cluster_looks_at_its_processes_only_when_one_ends(session: Session) -> None:
    cluster = _live_cluster(session)
    time.sleep(0.8)  # (the look at its start, at the first tick: 0.5 s apart behind relays)
    looks = [0]
    real = cluster.processes.exited

    def exited() -> list[tuple[int | None, int]]:
        looks[0] += 1
        ended: list[tuple[int | None, int]] = real()
        return ended

    cluster.processes.exited = exited
    time.sleep(1.6)
    assert looks[0] == 0, "an idle cluster whose processes all have pidfds polled them"
    os.kill(cluster.info[1].pid, signal.SIGKILL)
    took = _until(lambda: cluster.lost, 5.0)
    assert took < 1.0, f"the dead rank named after {took:.2f} s"
    assert cluster.lost.startswith("rank 1 on ") and "killed by SIGKILL" in cluster.lost


def test_the_panels_stop_stops_an_idle_cluster_within_a_second(
    session: Session, tmp_path: Path
) -> None:
    cluster = _live_cluster(session)
    time.sleep(0.6)  # (idle: the looks find the history unchanged)
    server = Store(tmp_path / "history.sqlite")  # (the server's own connection)
    try:
        server.request_control(cluster.id, "stop")
        took = _until(lambda: not cluster.alive, 5.0)
    finally:
        server.close()
    assert took < 1.0, f"the stop acted on after {took:.2f} s"


def _counted(cluster: Any) -> dict[str, int]:
    """Counts of the I/O thread's ticks, of its looks at the controls (queries) and of the
    rounds of its loop (one a wake-up) from now."""
    counts = {"ticks": 0, "looks": 0, "rounds": 0}
    tick, take = cluster.router._tick, cluster.store.take_controls
    loop = cluster.router._loop
    maybe_tick = loop._maybe_tick  # (once a round of the loop, whatever woke it)

    def counted_tick() -> None:
        counts["ticks"] += 1
        tick()

    def counted_round() -> None:
        counts["rounds"] += 1
        maybe_tick()

    loop._maybe_tick = counted_round

    def counted_take(cluster_id: str) -> Any:
        counts["looks"] += 1
        return take(cluster_id)

    cluster.router._tick, cluster.store.take_controls = counted_tick, counted_take
    return counts


def test_an_idle_cluster_behind_relays_wakes_twice_a_second_not_four_times(
    session: Session,
) -> None:
    cluster = _live_cluster(session)
    time.sleep(0.6)  # (the start's own looks)
    counts = _counted(cluster)
    time.sleep(2.0)
    assert 2 <= counts["looks"] <= 5, f"{counts['looks']} looks at the controls in 2 s at rest"
    assert counts["ticks"] <= 5, f"{counts['ticks']} ticks in 2 s at rest"


def test_a_running_cell_behind_relays_looks_at_its_controls_twice_a_second_not_four_times(
    session: Session,
) -> None:
    """Behind relays the I/O thread keeps its pace at rest while a cell runs: the controls'
    look and the tick twice a second (on main: 4 times, 10 looks in this cell), so a
    10,000-rank trivial cell of ~0.3 s takes about one tick less (issue 26)."""
    cluster = _live_cluster(session)
    counts = _counted(cluster)
    out = io.StringIO()
    spec = Spec(layout=Layout(nodes=1, procs_per_node=2), relays="always")
    began = time.monotonic()
    session.run_cell(spec, "import time; time.sleep(2.5)", {}, view=CellView(out=out, err=out))
    took = time.monotonic() - began  # (2.5 s and what a loaded machine adds)
    most = int(took / 0.45) + 1  # (main: one a quarter second, 9-10 here)
    assert 4 <= counts["looks"] <= most, f"{counts['looks']} looks at the controls in {took:.2f} s"
    assert counts["ticks"] <= most + 3, f"{counts['ticks']} ticks in {took:.2f} s"  # (main: 11-12)


def test_the_controls_are_looked_at_on_every_tick_of_their_pace_late_or_on_time() -> None:
    """Ticks 0.5 s apart, every other one 30 ms late (a loaded I/O thread): the look at the
    panel's controls keeps its schedule and is done at each of them, so the panel's stop waits
    at most ~0.5 s; kept to when each tick came, every other look was skipped (the stop waited
    1 s, and a running cell of 2.5 s looked 3 times, not 5)."""
    ticks = [10.0 + 0.5 * i + (0.03 if i % 2 else 0.0) for i in range(9)]
    last, looks = 0.0, []
    for now in ticks:
        looked = on_schedule(last, now, CONTROL_REST)
        if looked is not None:
            last = looked
            looks.append(now)
    assert looks == ticks
    assert on_schedule(last, last + 0.2, CONTROL_REST) is None  # (an early tick: not yet)
    assert on_schedule(last, last + 3.0, CONTROL_REST) == last + 3.0  # (long late: anew)


def test_the_panels_stop_stops_a_running_cell_behind_relays_within_a_second(
    session: Session, tmp_path: Path
) -> None:
    cluster = _live_cluster(session)
    out = io.StringIO()
    spec = Spec(layout=Layout(nodes=1, procs_per_node=2), relays="always")
    asked: list[float] = []

    def stop_soon() -> None:
        time.sleep(0.7)  # (the cell running)
        server = Store(tmp_path / "history.sqlite")  # (the server's own connection)
        try:
            asked.append(time.monotonic())
            server.request_control(cluster.id, "stop")
        finally:
            server.close()

    stopper = threading.Thread(target=stop_soon)
    stopper.start()
    with pytest.raises(KeyboardInterrupt, match="the cluster was stopped"):
        session.run_cell(spec, "import time; time.sleep(30)", {}, view=CellView(out=out, err=out))
    stopper.join()
    took = _until(lambda: not cluster.alive, 5.0) + time.monotonic() - asked[0]
    assert took < 1.0, f"the stop acted on after {took:.2f} s"


def test_an_idle_local_cluster_without_relays_wakes_its_kernel_twice_a_second_not_twenty(
    session: Session,
) -> None:
    """The default local cluster, the kernel its ranks' relay: between cells its I/O thread
    ticks twice a second (the controls' look), and wakes besides only for what arrives (each
    rank's heartbeat, once a second), not 20 times a second for nothing (issue 26)."""
    cluster = _live_cluster(session, relays="never")
    assert not cluster.relays
    time.sleep(0.6)  # (the cell's end and the start's own looks)
    counts = _counted(cluster)
    time.sleep(2.0)
    assert 2 <= counts["looks"] <= 5, f"{counts['looks']} looks at the controls in 2 s at rest"
    assert counts["ticks"] <= 5, f"{counts['ticks']} ticks in 2 s at rest"
    # (4 ticks and 2 ranks' 4 heartbeats; the old pace: 40 ticks)
    assert counts["rounds"] <= 12, f"the I/O thread woke {counts['rounds']} times in 2 s at rest"


def test_a_cell_sent_to_an_idle_local_cluster_is_taken_up_at_once(session: Session) -> None:
    """A cell written to the ranks' cell sockets wakes the resting I/O thread: the run starts
    there at once (its record due in 20 ms, its pace), in a round of the loop that took no
    message, not when a rank's first message comes (~0.1 s) or at the next tick (0.5 s)."""
    cluster = _live_cluster(session, relays="never")
    time.sleep(0.7)  # (at rest)
    router, loop = cluster.router, cluster.router._loop
    rounds = [0]  # (the loop's rounds so far: each ends in _maybe_tick)
    started: list[int] = []  # the round the run started in
    took: set[int] = set()  # the rounds that took a message
    ticks: list[int] = []
    maybe_tick, tick = loop._maybe_tick, loop._tick
    take, start = router._take_batch, router.cell.start

    def counted_round() -> None:
        maybe_tick()
        rounds[0] += 1

    def noted(fn: Any, into: Any) -> Any:
        def wrapper(*args: Any) -> Any:
            into(rounds[0])
            return fn(*args)

        return wrapper

    loop._maybe_tick, loop._tick = counted_round, noted(tick, ticks.append)
    router._take_batch, router.cell.start = noted(take, took.add), noted(start, started.append)
    _until(lambda: ticks, 2.0)  # (just after a tick at rest: the next one is 0.5 s away)
    out = io.StringIO()
    spec = Spec(layout=Layout(nodes=1, procs_per_node=2), relays="never")
    session.run_cell(spec, "import time; time.sleep(0.5)", {}, view=CellView(out=out, err=out))
    assert len(started) == 1
    assert started[0] not in took, "the run started only when a rank's message woke the thread"
