"""The stop button's diagnosis, without processes: a fake cluster whose ranks yield (or not)
when interrupted, driven through the real supervisor.

Ranks that do not yield are diagnosed shortly after the interrupt (on screen within about a
second), while the grace that decides whether they are killed runs on; ranks that yield at once
need no diagnosis and keep their variables; a rank that must be killed is named with its last
stack, which is shown again only when it moved.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Sequence

from jupyter_distributed.cluster import supervise, tracker
from jupyter_distributed.cluster.inbox import Finished, Item
from jupyter_distributed.events import Event, RunEvent, RunState, StacksEvent
from jupyter_distributed.interface import RankInfo, RunRequest, RunWriter
from jupyter_distributed.layout import Layout
from jupyter_distributed.protocol.commands import Interrupt
from jupyter_distributed.protocol.header import Message
from jupyter_distributed.protocol.reports import Done
from jupyter_distributed.protocol.signing import Buffer
from jupyter_distributed.protocol.stacks import Frame, RankStacks, ThreadStack

RUN = "run-1"
CELL = "<cell r1>"


def _stack(rank: int, line: int, text: str) -> RankStacks:
    frame = Frame(CELL, line, "<module>", "", text)
    return RankStacks(rank, (ThreadStack("MainThread", True, (frame,)),), "ready", "channel")


class FakeCluster:
    """Ranks that finish at once (``finish``), yield to an interrupt after ``yield_after``
    seconds (None: never), and stand at ``where`` when asked for their stacks."""

    def __init__(self, n: int, finish: Sequence[int], yield_after: dict[int, float | None]):
        layout = Layout(procs_per_node=n)
        self.info = {r: RankInfo(r, "here", 100 + r, "running", layout.coords(r)) for r in range(n)}
        self.inbox: queue.SimpleQueue[Item] = queue.SimpleQueue()
        self.finish, self.yield_after = finish, yield_after
        self.where = {r: _stack(r, 3, "hang()") for r in range(n)}
        self.stopped = False
        self.lost_why = ""
        self.asked: list[tuple[float, list[int]]] = []
        self.recorded: list[Event] = []

    @property
    def alive(self) -> bool:
        return not self.stopped

    @property
    def lost(self) -> str:
        return self.lost_why

    @property
    def unrecorded(self) -> int:
        return 0

    def _done(self, rank: int, status: str) -> None:
        self.inbox.put(Finished(rank, Done(RUN, status)))

    def send(self, ranks: Sequence[int], message: Message, buffers: Sequence[Buffer] = ()) -> None:
        if isinstance(message, Interrupt):
            for r in ranks:
                after = self.yield_after.get(r)
                if after is not None:
                    threading.Timer(after, self._done, (r, "interrupted")).start()
        else:
            for r in self.finish:
                self._done(r, "ok")

    def begin(self, run_id: str, record: RunWriter | None = None) -> None:
        pass

    def recorded_end(self, run_id: str) -> RunEvent | None:
        return None

    def end(self) -> None:
        pass

    def mark_lost(self, why: str) -> None:
        self.lost_why = self.lost_why or why

    def stop(self) -> None:
        self.stopped = True

    def stacks(self, ranks: Sequence[int], code: str = "") -> dict[int, RankStacks]:
        self.asked.append((time.monotonic(), list(ranks)))
        return {r: self.where[r] for r in ranks}

    def record(self, event: Event) -> None:
        self.recorded.append(event)


class View:
    def __init__(self) -> None:
        self.shown: list[tuple[float, str]] = []

    def on_event(self, event: Event) -> None:
        if isinstance(event, StacksEvent):
            self.shown.append((time.monotonic(), f"[{event.reason}] {event.diagnosis}"))

    def live(self, rank: int, stream: str, text: str) -> None:
        pass

    def notice(self, text: str) -> None:
        self.shown.append((time.monotonic(), f"[notice] {text}"))

    def queued(self, reason: str) -> None:
        self.notice(f"queued: {reason}")

    def starting(self, text: str) -> None:
        pass

    def flush(self) -> None:
        pass


def _press_stop(cluster: FakeCluster, view: View, grace: float = 2.0) -> tuple[float, RunState]:
    """Run a cell and press stop 0.1 s in; returns when the stop was pressed and the state."""
    request = RunRequest(RUN, "hang()", tuple(cluster.info), interrupt_grace=grace)
    pressed: list[float] = []
    main = threading.get_ident()

    def press() -> None:
        import ctypes  # the stop button: a KeyboardInterrupt in the kernel's main thread

        pressed.append(time.monotonic())
        ctypes.pythonapi.PyThreadState_SetAsyncExc(
            ctypes.c_ulong(main), ctypes.py_object(KeyboardInterrupt)
        )

    timer = threading.Timer(0.1, press)
    timer.start()
    try:
        outcome = supervise.execute_run(cluster, request, view)
    finally:
        timer.cancel()
    return pressed[0], outcome.state


def test_ranks_that_do_not_yield_are_diagnosed_at_once_then_killed_with_their_last_stack() -> None:
    cluster = FakeCluster(8, finish=[0], yield_after=dict.fromkeys(range(1, 8)))
    view = View()
    pressed, state = _press_stop(cluster, view)
    assert state is RunState.INTERRUPTED
    (t_diag, diag), (_, notice) = view.shown  # the same stacks are not shown twice
    assert diag.startswith("[interrupt] ranks 1, 2, 3, 4, 5, 6, 7 are at cell line 3: hang()")
    assert "rank 0 finished the cell" in diag
    assert t_diag - pressed < 1.0  # on screen well before the 2 s grace ends
    assert cluster.asked[0][0] - pressed >= tracker.EARLY_STACKS - 0.05
    assert notice.startswith("[notice] ranks 1, 2, 3, 4, 5, 6, 7 did not stop within 2s")
    # ranks alike once (one clause per rank made a 10,000-rank notice of 9,999 clauses)
    assert notice.endswith("last seen: ranks 1, 2, 3, 4, 5, 6, 7 are at cell line 3: hang()")
    assert cluster.stopped
    assert [e.reason for e in cluster.recorded if isinstance(e, StacksEvent)] == [
        "interrupt",
        "killed",
    ]


def test_a_rank_that_moved_before_it_is_killed_is_shown_again() -> None:
    cluster = FakeCluster(2, finish=[0], yield_after={1: None})
    view = View()
    original = cluster.stacks

    def moving(ranks: Sequence[int], code: str = "") -> dict[int, RankStacks]:
        out = original(ranks, code)
        cluster.where[1] = _stack(1, 5, "hang_elsewhere()")  # after the first look
        return out

    cluster.stacks = moving  # type: ignore[method-assign]
    _press_stop(cluster, view, grace=0.8)
    texts = [text for _, text in view.shown]
    assert texts[0].startswith("[interrupt] rank 1 is at cell line 3: hang()")
    assert texts[1].startswith("[killed] rank 1 is at cell line 5: hang_elsewhere()")
    assert "last seen: rank 1 is at cell line 5" in texts[2]


def test_ranks_that_yield_at_once_need_no_diagnosis_and_keep_their_cluster() -> None:
    cluster = FakeCluster(4, finish=[], yield_after=dict.fromkeys(range(4), 0.01))
    view = View()
    _, state = _press_stop(cluster, view)
    assert state is RunState.INTERRUPTED
    assert view.shown == [] and cluster.asked == [] and not cluster.stopped


def test_a_rank_that_yields_within_the_grace_keeps_the_cluster_after_its_diagnosis() -> None:
    cluster = FakeCluster(2, finish=[0], yield_after={1: 0.8})
    view = View()
    _, state = _press_stop(cluster, view)
    assert state is RunState.INTERRUPTED
    assert [text.split(" ", 1)[0] for _, text in view.shown] == ["[interrupt]"]
    assert not cluster.stopped and cluster.alive


def test_a_second_stop_during_the_diagnosis_kills_at_once() -> None:
    cluster = FakeCluster(2, finish=[0], yield_after={1: None})
    view = View()
    main = threading.get_ident()
    original = cluster.stacks
    calls = [0]

    def slow(ranks: Sequence[int], code: str = "") -> dict[int, RankStacks]:
        calls[0] += 1
        if calls[0] == 1:  # the stop button again while the first stacks are taken
            import ctypes

            ctypes.pythonapi.PyThreadState_SetAsyncExc(
                ctypes.c_ulong(main), ctypes.py_object(KeyboardInterrupt)
            )
            time.sleep(0.15)  # the async exception fires in this (Python) sleep
        return original(ranks, code)

    cluster.stacks = slow  # type: ignore[method-assign]
    t0 = time.monotonic()
    _, state = _press_stop(cluster, view, grace=5.0)
    assert state is RunState.INTERRUPTED
    assert time.monotonic() - t0 < 3.0  # not the 5 s grace
    assert cluster.stopped
    assert "did not stop within 5s" in view.shown[-1][1]
