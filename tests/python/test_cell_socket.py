"""A rank's two connections (control channel and the main thread's cell socket) in one order.

The kernel's end (:class:`Router`) with real sockets and peers written here: a cell's end sent
on the cell socket never overtakes the output its rank queued before it on the control channel,
whether the cell socket is ZeroMQ (ranks on other hosts) or a Unix socket (all on this one).
"""

from __future__ import annotations

import os
import queue
import secrets
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import zmq

from jupyter_distributed.cluster.cellorder import CellOrder, after
from jupyter_distributed.cluster.inbox import Finished, Item, Ready, Show
from jupyter_distributed.cluster.router import Router
from jupyter_distributed.cluster.transport import Transport
from jupyter_distributed.events import OutputEvent, each
from jupyter_distributed.history.store import Store
from jupyter_distributed.interface import RankInfo
from jupyter_distributed.layout import Layout
from jupyter_distributed.protocol.commands import Execute, Shutdown
from jupyter_distributed.protocol.reports import Done, Hello, Output, Stage
from jupyter_distributed.protocol.signing import Signer, cell_name, rank_name, sender
from jupyter_distributed.worker.cellsocket import CellSocket

pytestmark = pytest.mark.timeout(60)
KEY = secrets.token_bytes(32)


@pytest.fixture
def router(tmp_path: Path) -> Iterator[Router]:
    store = Store(tmp_path / "history.sqlite")
    info = {0: RankInfo(0, "here", None, "starting", Layout().coords(0))}
    router = Router("jd-test", store, info, KEY, lambda: None, lambda why: None, Transport.ipc())
    router.start()
    yield router
    router.close()
    store.close()


def _items(router: Router, until: type, timeout: float = 20) -> list[Item]:
    out: list[Item] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            item = router.inbox.get(timeout=0.1)
        except queue.Empty:
            continue
        out.append(item)
        if isinstance(item, until):
            return out
    raise AssertionError(f"no {until.__name__} within {timeout} s: {out}")


def test_sender_names_say_rank_and_socket() -> None:
    assert sender(rank_name(3)) == (3, False)
    assert sender(cell_name(12)) == (12, True)
    for bad in ("k", "x3", "r", "c-1", "r3.c", ""):
        with pytest.raises(ValueError, match="unknown sender"):
            sender(bad)


def test_after_is_a_counter_or_refused() -> None:
    assert after({}) == 0
    assert after({"after": 17}) == 17
    for bad in (-1, "3", 1.5, True, None):
        with pytest.raises(ValueError, match="bad 'after'"):
            after({"after": bad})


def test_cell_order_releases_in_arrival_order_once_the_control_side_caught_up() -> None:
    order = CellOrder()
    assert order.ready(0, 5, accepted=5)
    assert not order.ready(0, 6, accepted=5)
    done = Done("run", "ok")
    order.wait(0, (6, done, []))
    order.wait(0, (9, done, []))
    assert not order.ready(0, 0, accepted=10)  # (behind the ones that wait)
    assert order.release(0, accepted=5) == []
    assert [w[0] for w in order.release(0, accepted=8)] == [6]
    assert [w[0] for w in order.release(0, accepted=9)] == [9]
    assert order.ready(0, 9, accepted=9)


def test_a_cells_end_waits_for_the_output_sent_before_it(router: Router) -> None:
    ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context.instance()
    control, cell = ctx.socket(zmq.DEALER), ctx.socket(zmq.DEALER)
    control.connect(router.address)
    cell.connect(router.address)
    ours, cells = Signer(KEY, rank_name(0)), Signer(KEY, cell_name(0))
    try:
        control.send_multipart(ours.pack(Stage("setup", os.getpid()).to_header()))
        hello = Hello(0, "here", os.getpid(), "3", {}).to_header()
        cell.send_multipart(cells.pack({**hello, "after": ours.sent}))
        assert any(isinstance(i, Ready) for i in _items(router, Ready))
        router.begin("run-1")
        router.send([0], Execute("run-1", "print('x')"))
        # the kernel sends the cell to the rank's cell socket, signed for it
        _, body = Signer(KEY, cell_name(0)).unpack(cell.recv_multipart())
        assert body == []
        # the output is packed (its counter taken) before the end, but sent after it
        output = ours.pack(Output("run-1", "stdout", [(time.time(), "x")]).to_header())
        end = cells.pack({**Done("run-1", "ok").to_header(), "after": ours.sent})
        cell.send_multipart(end)
        time.sleep(0.2)  # the end arrived alone: it waits
        assert router.inbox.empty()
        control.send_multipart(output)
        items = _items(router, Finished)
        lines = [
            e.text
            for i in items
            if isinstance(i, Show)
            for e in each(i.events)
            if isinstance(e, OutputEvent)
        ]
        assert lines == ["x"]
        shown = next(k for k, i in enumerate(items) if isinstance(i, Show))
        assert shown < next(k for k, i in enumerate(items) if isinstance(i, Finished))
    finally:
        control.close(0)
        cell.close(0)


def _lines(items: list[Item]) -> list[str]:
    return [
        e.text
        for i in items
        if isinstance(i, Show)
        for e in each(i.events)
        if isinstance(e, OutputEvent)
    ]


def test_on_the_unix_cell_socket_a_large_cell_arrives_whole_and_its_end_waits(
    router: Router,
) -> None:
    assert router.cells_address is not None  # every rank on this machine: a Unix socket
    assert Path(router.cells_address).parent == Path(router.address.removeprefix("ipc://")).parent
    ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context.instance()
    control = ctx.socket(zmq.DEALER)
    control.connect(router.address)
    ours = Signer(KEY, rank_name(0))
    cell = CellSocket(
        ctx, router.address, Signer(KEY, cell_name(0)), lambda: ours.sent,
        cells=router.cells_address,
    )  # fmt: skip
    try:
        control.send_multipart(ours.pack(Stage("setup", os.getpid()).to_header()))
        cell.send(Hello(0, "here", os.getpid(), "3", {}))
        assert any(isinstance(i, Ready) for i in _items(router, Ready))
        router.begin("run-1")
        pushed = bytes(range(256)) * 16384  # 4 MiB: more than the socket holds at once
        router.send([0], Execute("run-1", "print('x')"), [pushed])
        message, buffers = cell.recv()
        assert isinstance(message, Execute) and message.code == "print('x')"
        assert [bytes(b) for b in buffers] == [pushed]
        output = ours.pack(Output("run-1", "stdout", [(time.time(), "x")]).to_header())
        cell.send(Done("run-1", "ok"))  # (after the output, whose counter is taken)
        time.sleep(0.2)  # the end arrived alone: it waits
        assert router.inbox.empty()
        control.send_multipart(output)
        items = _items(router, Finished)
        assert _lines(items) == ["x"]
    finally:
        control.close(0)
        cell.close()


def test_a_rank_reads_the_kernel_closing_its_cell_socket_as_shutdown(tmp_path: Path) -> None:
    store = Store(tmp_path / "history.sqlite")
    info = {0: RankInfo(0, "here", None, "starting", Layout().coords(0))}
    router = Router("jd-test", store, info, KEY, lambda: None, lambda why: None, Transport.ipc())
    router.start()
    assert router.cells_address is not None
    cell = CellSocket(
        zmq.Context.instance(), router.address, Signer(KEY, cell_name(0)), lambda: 0,
        cells=router.cells_address,
    )  # fmt: skip
    try:
        cell.send(Hello(0, "here", os.getpid(), "3", {}))
        assert any(isinstance(i, Ready) for i in _items(router, Ready))
        router.close()  # the kernel stops (or dies): its end of the socket closes
        message, _ = cell.recv()
        assert isinstance(message, Shutdown)
        assert not Path(router.cells_address).exists()
    finally:
        cell.close()
        store.close()


def test_ranks_on_other_hosts_keep_a_zeromq_cell_socket(tmp_path: Path) -> None:
    store = Store(tmp_path / "history.sqlite")
    router = Router("jd-test", store, {}, KEY, lambda: None, lambda why: None, Transport.tcp())
    router.start()
    try:
        assert router.address.startswith("tcp://") and router.cells_address is None
    finally:
        router.close()
        store.close()
