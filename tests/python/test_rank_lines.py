"""A rank's output lines while a cell runs, and its I/O thread's looks (issue 26: the training
step's cost).

Lines leave at once, running or resting: a print reaches the notebook in milliseconds
(``bench_core.py``'s print → notebook p99 ≤ 20 ms), not at the I/O thread's next look. (Sending
them with the next look, every ``POLL_MS``, saved a wake-up per line in a training loop, and was
withdrawn for that latency.)

The ranks' I/O threads look on the wall clock's multiples of their pace (``aligned``): the
ranks of a machine send what they gathered at the same moments (the kernel wakes once for all
of them), a wake-up (a received message) is not a look, and a resting rank still looks once a
second.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import zmq

from jupyter_distributed.ioloop import IoLoop
from jupyter_distributed.protocol.messages import parse
from jupyter_distributed.protocol.reports import Output
from jupyter_distributed.protocol.signing import KERNEL, Signer
from jupyter_distributed.worker import channel as channel_module
from jupyter_distributed.worker.channel import Channel
from jupyter_distributed.worker.report import ChannelReporter

KEY = secrets.token_bytes(32)
RUN = "run-1"


class Kernel:
    """The kernel's end of a rank's control channel: a ROUTER that reads what arrives."""

    def __init__(self, address: str) -> None:
        self.ctx = zmq.Context()
        self.sock = self.ctx.socket(zmq.ROUTER)
        self.sock.bind(address)
        self.signer = Signer(KEY, KERNEL)

    def lines(self, within: float) -> list[str]:
        """The texts of the output lines that arrive within ``within`` seconds of the first
        look (all those already there, and any that come before the time is up)."""
        texts: list[str] = []
        deadline = time.monotonic() + within
        while self.sock.poll(max(0, int((deadline - time.monotonic()) * 1000))):
            header, _ = self.signer.unpack(self.sock.recv_multipart()[1:])
            message = parse(header)
            assert isinstance(message, Output)
            texts += [text for _, text in message.lines]
        return texts

    def close(self) -> None:
        self.sock.close(linger=0)
        self.ctx.term()


@pytest.fixture
def slow_looks(monkeypatch: pytest.MonkeyPatch) -> None:
    """The I/O thread looks every 5 s, running or resting: a line that arrives sooner was
    sent at once."""
    monkeypatch.setattr(channel_module, "POLL_MS", 5000)
    monkeypatch.setattr(channel_module, "REST_MS", 5000)


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[tuple[Kernel, Channel]]:
    kernel = Kernel(f"ipc://{tmp_path}/ctl")
    channel = Channel(f"ipc://{tmp_path}/ctl", Signer(KEY, "r0"), lambda m, b: None, lambda: None)
    channel.start()
    try:
        yield kernel, channel
    finally:
        channel.close()
        kernel.close()


def test_a_running_ranks_line_leaves_at_once_not_at_the_next_look(
    slow_looks: None, pair: tuple[Kernel, Channel]
) -> None:
    kernel, channel = pair
    ChannelReporter(channel).output(RUN, "stdout", [(time.time(), "step 0")])
    assert kernel.lines(within=0.3) == ["step 0"]  # the next look is 5 s away


def test_a_resting_rank_sends_each_line_at_once(
    slow_looks: None, pair: tuple[Kernel, Channel]
) -> None:
    kernel, channel = pair
    rested = threading.Event()

    def rest() -> None:
        channel.rest(5.0)
        rested.set()

    channel._loop.call(rest)
    assert rested.wait(5)
    ChannelReporter(channel).output(RUN, "stderr", [(time.time(), "from a thread")])
    assert kernel.lines(within=2.0) == ["from a thread"]


def _aligned_loop(ctx: zmq.Context[zmq.Socket[bytes]], ticks: list[float], poll_ms: int) -> IoLoop:
    loop = IoLoop(
        ctx.socket(zmq.DEALER),
        lambda batch: None,
        lambda: ticks.append(time.time()),
        lambda exc: None,
        poll_ms=poll_ms,
        aligned=True,
    )
    loop.start()
    return loop


def test_ranks_look_on_the_clocks_multiples_not_at_each_wake_up() -> None:
    ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    ticks: list[list[float]] = [[], []]
    loops = [_aligned_loop(ctx, t, poll_ms=200) for t in ticks]
    try:
        time.sleep(0.05)
        for _ in range(30):  # messages for the rank: wake-ups, not looks
            done = threading.Event()
            loops[0].call(done.set)
            assert done.wait(10)
        time.sleep(1.0)
    finally:
        for loop in loops:
            assert loop.stop(5)
        ctx.term()
    for got in ticks:
        looks = got[1:]  # (the first look is at the start)
        assert 4 <= len(looks) <= 7, got  # every 0.2 s for ~1.05 s, however often woken
        late = sorted(t % 0.2 for t in looks)
        assert late[len(late) // 2] < 0.05, got  # (a loaded machine wakes threads late)


def test_a_resting_aligned_loop_looks_once_for_its_owners_due_tick() -> None:
    """At rest (a second's pace, the owner asking for its heartbeat's tick) one look a
    second, not one for the clock and one for the owner."""
    ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    ticks: list[float] = []
    box: list[IoLoop] = []

    def tick() -> None:
        now = time.time()
        ticks.append(now)
        if box:
            box[0].tick_within(1.0 - (now % 1.0))  # (a heartbeat a second, as Channel.rest)

    loop = IoLoop(ctx.socket(zmq.DEALER), lambda b: None, tick, lambda e: None, 1000, aligned=True)
    box.append(loop)
    loop.start()
    try:
        time.sleep(2.5)
    finally:
        assert loop.stop(5)
        ctx.term()
    assert 2 <= len(ticks) <= 4, ticks
