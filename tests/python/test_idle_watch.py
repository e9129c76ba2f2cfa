"""What a kernel does while its cluster sits idle (issue 26): where every process has a pidfd,
no periodic look at the processes (a death wakes the I/O thread and is named at once); the
panel's stop still acts within a second.
"""

from __future__ import annotations

import io
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_distributed.display import CellView
from jupyter_distributed.history.store import Store
from jupyter_distributed.layout import Layout
from jupyter_distributed.session import Session
from jupyter_distributed.spec import Spec

from .core_helpers import session_in


@pytest.fixture
def session(tmp_path: Path) -> Iterator[Session]:
    yield from session_in(tmp_path)


def _live_cluster(session: Session) -> Any:
    out = io.StringIO()
    spec = Spec(layout=Layout(nodes=1, procs_per_node=2), relays="always")
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
    time.sleep(0.5)  # (the look at its start)
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
