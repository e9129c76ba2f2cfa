"""A cap on a whole message (``Distributed.max_message_mb``), not only on each frame.

Through real ranks: a push or a pull over the cap fails and says which, how large, and which
setting to raise; one below it arrives. Against hostile peers: a message of many frames, each
under ZeroMQ's per-frame limit but together over the cap, is refused on the control channel and
on the Unix cell socket (where the frame table alone is enough to refuse it); a rank's
connection that sends one loses the cluster with that cause, so the run fails and never waits.
"""

from __future__ import annotations

import io
import logging
import os
import queue
import secrets
import socket
import struct
import time
from collections.abc import Iterator
from typing import Any

import pytest
import zmq

from jupyter_distributed.cluster.inbox import Ready
from jupyter_distributed.cluster.router import Router
from jupyter_distributed.cluster.transport import Transport
from jupyter_distributed.display import CellView
from jupyter_distributed.errors import SpecError
from jupyter_distributed.history.store import Store
from jupyter_distributed.interface import RankInfo
from jupyter_distributed.layout import Layout
from jupyter_distributed.protocol.frames import MAX_FRAME
from jupyter_distributed.protocol.packets import FIRST, LAST, Reassembler, TooLarge
from jupyter_distributed.protocol.reports import Hello
from jupyter_distributed.protocol.signing import Signer, cell_name, rank_name
from jupyter_distributed.session import Session
from jupyter_distributed.settings import Distributed
from jupyter_distributed.spec import Spec
from jupyter_distributed.worker.cellsocket import CellSocket

from .core_helpers import store  # noqa: F401

pytestmark = pytest.mark.timeout(120)
KEY = secrets.token_bytes(32)
MB = 1 << 20
CAP = 32 * MB


@pytest.fixture
def session(store: Store) -> Iterator[Session]:  # noqa: F811
    session = Session(store, settings=Distributed(max_message_mb=32))
    yield session
    session.shutdown()


@pytest.fixture
def lost() -> list[str]:
    return []


@pytest.fixture
def router(store: Store, lost: list[str]) -> Iterator[Router]:  # noqa: F811
    info = {0: RankInfo(0, "here", None, "starting", Layout().coords(0))}
    router = Router("jd-test", store, info, KEY, lambda: None, lost.append, Transport.ipc())
    router.max_message = CAP  # (what a cell's Execute sets)
    router.start()
    yield router
    router.close()


def _run(session: Session, code: str, ns: dict[str, Any], **spec: Any) -> None:
    view = CellView(out=io.StringIO())
    session.run_cell(Spec(layout=Layout(procs_per_node=1), **spec), code, ns, view=view)


def test_the_setting_is_one_gib_by_default_and_settable() -> None:
    assert Distributed().max_message_mb == 1024
    assert Session(settings=Distributed(max_message_mb=32)).max_message == CAP


def test_a_pull_over_the_cap_fails_clearly_and_one_below_it_arrives(
    session: Session, capsys: Any
) -> None:
    ns: dict[str, Any] = {}
    _run(session, "big = bytes(64 << 20)", ns, pull=("big",))
    assert "big" not in ns
    shown = capsys.readouterr().err
    assert "--pull big: not set; rank 0: the message of its pulled values is 64.0 MB" in shown
    assert "over Distributed.max_message_mb = 32: refused" in shown
    assert "(raise it with %config Distributed.max_message_mb = " in shown
    _run(session, "small = bytes(range(256)) * (1 << 16)  # 16 MiB", ns, pull=("small",))
    assert ns["small"] == [bytes(range(256)) * (1 << 16)]


def test_a_push_over_the_cap_is_refused_and_one_below_it_arrives(session: Session) -> None:
    ns: dict[str, Any] = {"big": bytes(64 << 20), "small": bytes(range(256)) * (1 << 16)}
    with pytest.raises(SpecError, match=r"--push: the cell is 64\.0 MB, over Distributed\."):
        _run(session, "len(big)", ns, push=("big",))
    run = session.store.runs()[0]
    assert run.state == "failed" and "max_message_mb" in (run.message or "")
    _run(session, "n = len(small)", ns, push=("small",), pull=("n",))
    assert ns["n"] == [16 * MB]


def test_the_frame_table_alone_refuses_a_message_over_the_cap() -> None:
    table = struct.pack("<5I", 4, *[MAX_FRAME] * 4)  # 256 MiB claimed, each frame allowed
    with pytest.raises(TooLarge) as caught:
        Reassembler(lambda: CAP).feed(bytes([FIRST]) + table)
    assert caught.value.size == 4 * MAX_FRAME
    assert Reassembler().feed(bytes([FIRST]) + table) is None  # no cap: waits for the rest
    small = struct.pack("<2I", 1, 3) + b"abc"
    assert [bytes(b) for b in Reassembler(lambda: CAP).feed(bytes([FIRST | LAST]) + small) or []]


def _wait_ready(router: Router) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if isinstance(router.inbox.get(timeout=0.1), Ready):
                return
        except queue.Empty:
            continue
    raise AssertionError("the kernel never took rank 0's hello")


def _wait(cond: Any, what: str) -> None:
    deadline = time.monotonic() + 30
    while not cond():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def test_a_ranks_many_frames_over_the_cap_on_the_channel_lose_the_cluster(
    router: Router, lost: list[str]
) -> None:
    ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    sock = ctx.socket(zmq.DEALER)
    sock.connect(router.address)
    signer = Signer(KEY, rank_name(0))
    try:
        sock.send_multipart(signer.pack(Hello(0, "here", os.getpid(), "3", {}).to_header()))
        _wait_ready(router)
        sock.send_multipart([bytes(16 * MB)] * 3)  # each frame allowed, 48 MiB in all
        _wait(lambda: lost, "the cluster was not lost")
        assert lost[0].startswith("a message from rank 0 is 48.0 MB, over Distributed.")
        assert "max_message_mb = 32" in lost[0]
    finally:
        sock.close(0)
        ctx.term()


def test_a_stranger_over_the_cap_on_the_channel_is_refused_and_named(
    router: Router, lost: list[str], caplog: Any
) -> None:
    ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    sock = ctx.socket(zmq.DEALER)
    sock.connect(router.address)
    try:
        with caplog.at_level(logging.WARNING, logger="jupyter_distributed"):
            sock.send_multipart([bytes(16 * MB)] * 3)
            _wait(lambda: "48.0 MB" in caplog.text, "no warning")
        assert "a message from a peer that is no rank is 48.0 MB" in caplog.text
        assert not lost  # a stranger cannot stop the cluster
    finally:
        sock.close(0)
        ctx.term()


def test_a_ranks_frame_table_over_the_cap_on_the_cell_socket_loses_the_cluster(
    router: Router, lost: list[str]
) -> None:
    assert router.cells_address is not None
    ours = Signer(KEY, rank_name(0))
    cell = CellSocket(
        zmq.Context.instance(), router.address, Signer(KEY, cell_name(0)), lambda: ours.sent,
        cells=router.cells_address,
    )  # fmt: skip
    try:
        cell.send(Hello(0, "here", os.getpid(), "3", {}))
        _wait_ready(router)
        raw = cell._wire._sock
        assert isinstance(raw, socket.socket)  # (the Unix socket, every rank on this machine)
        raw.send(bytes([FIRST]) + struct.pack("<5I", 4, *[MAX_FRAME] * 4))
        _wait(lambda: lost, "the cluster was not lost")
        assert lost[0].startswith("a message from rank 0 is 256.0 MB, over Distributed.")
        raw.settimeout(10)
        assert raw.recv(16) == b""  # the kernel closed the connection
    finally:
        cell.close()


def test_a_stranger_over_the_cap_on_the_cell_socket_is_cut_off(
    router: Router, lost: list[str]
) -> None:
    assert router.cells_address is not None
    raw = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    raw.connect(router.cells_address)
    try:
        raw.send(bytes([FIRST]) + struct.pack("<5I", 4, *[MAX_FRAME] * 4))
        raw.settimeout(10)
        assert raw.recv(16) == b""
        assert not lost
    finally:
        raw.close()
