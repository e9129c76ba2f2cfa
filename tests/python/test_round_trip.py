"""The warm round trip's short cuts keep every promise (issue 12).

- The kernel holds back a rank's quiet reply to a cell (its state and end) while other ranks
  have not answered, so a cell's replies are recorded in one transaction; nothing held is
  handed to the cell before it is recorded, and a reply with something to show, a failure or
  the end of the hold records what was held first, in order.
- The I/O loop runs its tick early when asked (the end of a hold), not at its next look.
- A rank holds its ``running`` state back: it leaves before anything else the rank sends, or
  at the I/O thread's next look; a cell that ends first says it ran with its end (the kernel
  records ``running`` then). A long cell's state is recorded while it runs.
- A rank's ``running`` and ``done`` in one batch update its row once, as if both had been
  applied (both events stay in the history).
- The kernel's figure settings, kept between cells, follow a changed config.
- A short cell on a live cluster is one store transaction: its run's record, its ranks' replies
  and its ``completed`` end together; a silent cell that runs on is in the history within
  ``RECORD_AFTER``; a failed rank's run is never recorded as completed.

The router is driven here on the test's thread, without its I/O thread: its batches are fed
by hand, as the thread would feed them.
"""

from __future__ import annotations

import io
import secrets
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import zmq

from jupyter_distributed.cluster.inbox import Finished, Item, Show
from jupyter_distributed.cluster.router import Router
from jupyter_distributed.cluster.transport import Transport
from jupyter_distributed.display import CellView
from jupyter_distributed.errors import RunFailed
from jupyter_distributed.events import (
    Event,
    OutputLines,
    RankEvent,
    RankState,
    RunEvent,
    RunState,
)
from jupyter_distributed.figures import kernel_figures
from jupyter_distributed.history.store import RunRecord, Store
from jupyter_distributed.interface import RankInfo
from jupyter_distributed.ioloop import IoLoop
from jupyter_distributed.layout import Layout
from jupyter_distributed.protocol.figures import FigureConfig
from jupyter_distributed.protocol.header import Message
from jupyter_distributed.protocol.messages import parse
from jupyter_distributed.protocol.reports import Done, Output, State
from jupyter_distributed.protocol.signing import KERNEL, Signer, rank_name
from jupyter_distributed.session import Session
from jupyter_distributed.spec import Spec
from jupyter_distributed.worker.channel import Channel

pytestmark = pytest.mark.timeout(120)
KEY = secrets.token_bytes(32)
RUN = "run-1"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    store = Store(tmp_path / "history.sqlite")
    yield store
    store.close()


@pytest.fixture
def router(store: Store) -> Iterator[Router]:
    """A router whose I/O thread never starts (the test plays it); 2 ranks, a run begun."""
    info = {r: RankInfo(r, "here", 100 + r, "idle", Layout().coords(r)) for r in (0, 1)}
    router = Router("jd-test", store, info, KEY, lambda: None, lambda why: None, Transport.ipc())
    router.ranks.begin(RUN)
    yield router
    router.listener.close()
    router._loop.sock.close(linger=0)
    router._endpoint.ctx.term()


def _appends(store: Store, monkeypatch: pytest.MonkeyPatch) -> list[list[Event]]:
    """The batches of events written to ``store`` from now on (one per transaction)."""
    written: list[list[Event]] = []
    append = store.append

    def spy(events: Any, run: Any = None) -> int:
        written.append(list(events))
        return append(written[-1], run=run)

    monkeypatch.setattr(store, "append", spy)
    return written


def _batch(*messages: tuple[int, Message]) -> list[list[zmq.Frame]]:
    """Signed messages from ranks, as the router's socket hands them over."""
    signers: dict[int, Signer] = {}
    out = []
    for rank, message in messages:
        signer = signers.setdefault(rank, Signer(KEY, rank_name(rank)))
        frames = signer.pack(message.to_header())
        out.append([zmq.Frame(f"peer{rank}".encode()), *(zmq.Frame(bytes(f)) for f in frames)])
    return out


def _reply(rank: int) -> list[list[zmq.Frame]]:
    return _batch((rank, State(RUN, "running")), (rank, Done(RUN, "ok")))


def _inbox(router: Router) -> list[Item]:
    items = []
    while not router.inbox.empty():
        items.append(router.inbox.get_nowait())
    return items


def _finished(items: list[Item]) -> list[int]:
    return [i.rank for i in items if isinstance(i, Finished)]


def test_a_cells_quiet_replies_are_recorded_in_one_transaction(
    router: Router, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    written = _appends(store, monkeypatch)
    router.cell.awaited = {0, 1}
    router._on_batch(_reply(0))
    assert written == [] and _inbox(router) == []  # held: rank 1 has not answered
    router._on_batch(_reply(1))
    assert len(written) == 1  # both ranks' running and done, one transaction
    states = [(e.rank, e.state.value) for e in written[0] if isinstance(e, RankEvent)]
    assert states == [(0, "running"), (0, "done"), (1, "running"), (1, "done")]
    items = _inbox(router)
    assert _finished(items) == [0, 1]
    shown = [e for i in items if isinstance(i, Show) for e in i.events]
    assert shown == written[0]  # shown only once recorded, in the order recorded


def test_a_held_reply_is_recorded_when_the_hold_ends_or_something_else_comes(
    router: Router, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    written = _appends(store, monkeypatch)
    router.cell.awaited = {0, 1}
    router._on_batch(_reply(0))
    router.cell.held_until = 0.0  # the hold has ended (rank 1 is slow)
    router._on_tick()
    assert len(written) == 1 and _finished(_inbox(router)) == [0]

    router.cell.awaited = {0, 1}  # the next cell: rank 1 prints while rank 0 is done
    router._on_batch(_reply(0))
    router._on_batch(_batch((1, Output(RUN, "stdout", [(time.time(), "hello")]))))
    assert len(written) == 2  # rank 0's held reply first, with the line, in one transaction
    assert [type(e) for e in written[1]] == [RankEvent, RankEvent, OutputLines]
    items = _inbox(router)
    assert _finished(items) == [0]
    assert [e for i in items if isinstance(i, Show) for e in i.events] == written[1]

    router.cell.awaited = {0, 1}  # an exit seen by the process watch: what was held goes first
    router._on_batch(_reply(0))
    router.record([], [])
    assert len(written) == 3 and _finished(_inbox(router)) == [0]


def test_replies_are_not_held_when_no_other_rank_is_awaited(
    router: Router, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    written = _appends(store, monkeypatch)
    router._on_batch(_reply(0))  # no cell awaited (a reply after the run gave up on it)
    assert len(written) == 1 and _finished(_inbox(router)) == [0]
    router.cell.awaited = {0}
    router._on_batch(_reply(0))  # the last awaited rank: at once
    assert len(written) == 2 and _finished(_inbox(router)) == [0]


def test_the_loop_ticks_early_when_asked() -> None:
    ctx = zmq.Context()
    ticks: list[float] = []
    errors: list[BaseException] = []
    loop = IoLoop(
        ctx.socket(zmq.DEALER), lambda batch: None, lambda: ticks.append(time.monotonic()),
        errors.append, poll_ms=60_000,
    )  # fmt: skip
    loop.start()
    try:
        loop.call(lambda: loop.tick_within(0.05))
        deadline = time.monotonic() + 10
        while len(ticks) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(ticks) >= 2, "no early tick (the loop waited for its 60 s look)"
        assert ticks[1] - ticks[0] >= 0.04
    finally:
        assert loop.stop(5)
        ctx.term()
    assert errors == []


def test_a_held_back_state_leaves_first_or_is_said_by_the_end(tmp_path: Path) -> None:
    ctx = zmq.Context()
    kernel = ctx.socket(zmq.ROUTER)
    kernel.setsockopt(zmq.RCVTIMEO, 10_000)
    kernel.bind(f"ipc://{tmp_path}/ctl")
    channel = Channel(f"ipc://{tmp_path}/ctl", Signer(KEY, "r0"), lambda m, b: None, lambda: None)
    channel.start()
    signer = Signer(KEY, KERNEL)

    def received() -> type[Message]:
        header, _ = signer.unpack(kernel.recv_multipart()[1:])
        message = parse(header)
        assert message is not None
        return type(message)

    try:
        channel.send_later(State(RUN, "running"))
        channel.send(Output(RUN, "stdout", [(time.time(), "x")]))
        assert [received(), received()] == [State, Output]
        channel.send_later(State(RUN, "running"))
        channel.send(Done(RUN, "ok"), drop_later=True)
        assert received() is Done
        channel.send_later(State(RUN, "running"))
        channel.flush_later(60.0)  # not held long enough yet
        channel.flush_later(0.0)
        assert received() is State
        assert kernel.poll(100) == 0  # nothing else
    finally:
        channel.close()
        kernel.close(linger=0)
        ctx.term()


def test_a_ranks_running_state_is_recorded_while_its_cell_runs(store: Store) -> None:
    session = Session(store)
    spec = Spec(layout=Layout(procs_per_node=2))
    try:
        session.run_cell(spec, "pass", {}, view=CellView(out=io.StringIO()))  # warm
        cell = threading.Thread(
            target=session.run_cell,
            args=(spec, "import time\ntime.sleep(3)", {}),
            kwargs={"view": CellView(out=io.StringIO())},
        )
        cell.start()
        seen: set[str] = set()
        while cell.is_alive() and seen != {"running"}:
            runs = store.runs(limit=1)
            if runs and runs[0].source.startswith("import time"):
                seen = {r.state for r in store.ranks(runs[0].id)}
            time.sleep(0.02)
        running_while_it_ran = cell.is_alive() and seen == {"running"}
        cell.join()
        assert running_while_it_ran, f"rank states while the cell ran: {seen}"
    finally:
        session.shutdown()


def test_figure_settings_follow_the_config_when_kept_between_cells(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from matplotlib_inline.config import InlineBackend
    from traitlets.config import Config

    monkeypatch.setattr(InlineBackend, "initialized", lambda: False)
    config = Config()
    shell = type("Shell", (), {"config": config})()
    config.InlineBackend.figure_format = "svg"
    assert kernel_figures(shell) == kernel_figures(shell) == FigureConfig(("svg",))
    config.InlineBackend.figure_format = "png"  # %config between two cells
    assert kernel_figures(shell) == FigureConfig(("png",))
    config.InlineBackendConfig.rc = {"lines.linewidth": 2}  # a base class's section counts
    assert kernel_figures(shell) == FigureConfig(("png",), {"lines.linewidth": 2})


def test_a_ranks_states_in_one_batch_leave_its_row_as_applied_one_by_one(store: Store) -> None:
    store.create_run(RunRecord(id=RUN, backend="local", world_size=2, ranks=[0, 1], started=1.0))
    running, done = RankState.RUNNING, RankState.DONE
    store.append(
        [
            RankEvent(RUN, 0, 2.0, running, "h0", 10),
            RankEvent(RUN, 0, 3.0, done, "h0", 10),  # same host and pid: one update
            RankEvent(RUN, 1, 2.0, running, "h1", 11),
            RankEvent(RUN, 1, 3.0, done, "", None),  # says less: both applied
        ]
    )
    rows = {r.rank: (r.state, r.updated, r.host, r.pid) for r in store.ranks(RUN)}
    assert rows == {0: ("done", 3.0, "h0", 10), 1: ("done", 3.0, "h1", 11)}
    states = [e["state"] for _, e in store.events_after(0, RUN) if e.get("kind") == "rank"]
    assert states == ["running", "done", "running", "done"]


def _live(store: Store) -> tuple[Session, Spec]:
    session = Session(store)
    spec = Spec(layout=Layout(procs_per_node=2))
    session.run_cell(spec, "x = rank", {}, view=CellView(out=io.StringIO()))  # starts it
    return session, spec


def test_a_short_cell_on_a_live_cluster_is_one_transaction(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    session, spec = _live(store)
    try:
        written = _appends(store, monkeypatch)
        created: list[str] = []
        monkeypatch.setattr(store, "create_run", lambda run, coords=None: created.append(run.id))
        session.run_cell(spec, "y = x", {}, view=CellView(out=io.StringIO()))
        assert created == [] and len(written) == 1
        run = store.runs(limit=1)[0]
        assert run.state is RunState.COMPLETED and run.ended is not None
        assert [r.state for r in store.ranks(run.id)] == ["done", "done"]
        assert [type(e) for e in written[0]][-1] is RunEvent  # the end, with the replies
    finally:
        session.shutdown()


def test_a_silent_cell_that_runs_on_is_recorded_while_it_runs(store: Store) -> None:
    session, spec = _live(store)
    seen: list[RunState] = []

    def watch() -> None:
        deadline = time.monotonic() + 20
        while not seen and time.monotonic() < deadline:
            runs = store.runs(limit=1)
            if runs and runs[0].source == "import time; time.sleep(1.5)":
                seen.append(runs[0].state)
            time.sleep(0.05)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        session.run_cell(spec, "import time; time.sleep(1.5)", {}, view=CellView(out=io.StringIO()))
        watcher.join()
        assert seen == [RunState.RUNNING]  # (the record was written while the cell ran)
        assert store.runs(limit=1)[0].state is RunState.COMPLETED
    finally:
        session.shutdown()


def test_a_failed_rank_is_never_recorded_as_completed(store: Store) -> None:
    session, spec = _live(store)
    try:
        with pytest.raises(RunFailed):
            session.run_cell(
                spec, "if rank == 1: raise ValueError('no')", {}, view=CellView(out=io.StringIO())
            )
        run = store.runs(limit=1)[0]
        kinds = [e for _, e in store.events_after(0, run.id) if e["kind"] == "run"]
        assert run.state is RunState.FAILED
        assert "completed" not in [e.get("state") for e in kinds], kinds
    finally:
        session.shutdown()
