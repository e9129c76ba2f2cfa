"""While a cell runs and its view holds no line to show, the kernel's main thread waits for the
ranks' answers without waking every few milliseconds to flush nothing (issue 26: a cell on
1,000 ranks was woken 20-40 times; a process cluster, whose loss wakes it, every quarter
second); while lines wait to be shown, it flushes them as often as before."""

from __future__ import annotations

import io
import queue
from typing import Any

from jupyter_distributed.cluster import tracker
from jupyter_distributed.cluster.inbox import Ended, Item, Lost
from jupyter_distributed.cluster.process import ProcessCluster
from jupyter_distributed.cluster.tracker import RunTracker
from jupyter_distributed.display import CellView
from jupyter_distributed.events import OutputEvent, Stream
from jupyter_distributed.interface import RunRequest


class Inbox:
    """The cluster's inbox: empty ``empties`` times, then the ranks' end; notes each wait."""

    def __init__(self, empties: int, end: Item) -> None:
        self.left, self.end, self.waits = empties, end, list[float]()

    def get(self, timeout: float) -> Item:
        self.waits.append(timeout)
        self.left -= 1
        if self.left < 0:
            return self.end
        raise queue.Empty

    def get_nowait(self) -> Item:
        raise queue.Empty


class Cluster:
    alive, lost, unrecorded, info = True, "", 0, dict[int, Any]()

    def __init__(self, inbox: Inbox) -> None:
        self.inbox = inbox


def waits(view: CellView) -> list[float]:
    inbox = Inbox(3, Ended("r", (0, 1)))
    run = RunTracker(Cluster(inbox), RunRequest("r", "pass", (0, 1)), view)  # type: ignore[arg-type]
    assert run.wait(None) and not run.pending
    return inbox.waits


def test_a_view_with_nothing_to_show_is_not_flushed_every_few_milliseconds() -> None:
    view = CellView("r", out=io.StringIO(), err=io.StringIO())
    assert not view.holding
    assert waits(view) == [tracker.IDLE_POLL] * 4
    assert tracker.IDLE_POLL >= 10 * tracker.POLL


def test_lines_waiting_to_be_shown_are_flushed_as_often_as_before() -> None:
    out = io.StringIO()
    view = CellView("r", out=out, err=io.StringIO())
    view.on_event(OutputEvent("r", 0, 1.0, Stream.STDOUT, "a line"))  # held for collapsing
    assert view.holding
    assert waits(view) == [tracker.POLL] * 4
    view.release()
    assert not view.holding and "a line" in out.getvalue()


def test_a_view_that_does_not_say_is_flushed_as_before() -> None:
    class Plain:
        def __getattr__(self, name: str) -> Any:
            return lambda *a, **k: None

    inbox = Inbox(2, Ended("r", (0,)))
    run = RunTracker(Cluster(inbox), RunRequest("r", "pass", (0,)), Plain())  # type: ignore[arg-type]
    assert run.wait(None)
    assert inbox.waits == [tracker.POLL] * 3


def test_a_cluster_whose_loss_wakes_its_inbox_is_waited_on_longer() -> None:
    """A process cluster puts a ``Lost`` in its inbox when it is marked lost, so a cell that
    waits for nothing looks at it every quarter second, not every 50 ms (issue 26), and still
    sees a loss at once."""

    class Waking(Cluster):
        idle_poll = ProcessCluster.idle_poll

    inbox = Inbox(3, Ended("r", (0, 1)))
    view = CellView("r", out=io.StringIO(), err=io.StringIO())
    run = RunTracker(Waking(inbox), RunRequest("r", "pass", (0, 1)), view)  # type: ignore[arg-type]
    assert run.wait(None)
    assert inbox.waits == [ProcessCluster.idle_poll] * 4
    assert ProcessCluster.idle_poll >= 5 * tracker.IDLE_POLL

    class Lostable:
        _lost = ""
        inbox: queue.SimpleQueue[Item] = queue.SimpleQueue()

    cluster = Lostable()
    ProcessCluster.mark_lost(cluster, "rank 3 died")  # type: ignore[arg-type]
    ProcessCluster.mark_lost(cluster, "and then")  # type: ignore[arg-type]
    assert cluster._lost == "rank 3 died"
    assert cluster.inbox.get_nowait() == Lost("rank 3 died") and cluster.inbox.empty()
