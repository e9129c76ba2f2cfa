"""A rank's output lines while a cell runs (issue 26: the training step's cost).

Lines leave at once, running or resting: a print reaches the notebook in milliseconds
(``bench_core.py``'s print → notebook p99 ≤ 20 ms), not at the I/O thread's next look. (Sending
them with the next look, every ``POLL_MS``, saved a wake-up per line in a training loop, and was
withdrawn for that latency.) Where every rank is on the kernel's machine, a rank's output
travels on its Unix cell socket, sent by the thread that has it: no ZeroMQ thread nor the rank's
I/O thread wakes for a line, and the lines stay in order with the cell's displays and its end;
the ``report()`` samples waiting then leave with the line (one store transaction for both).
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import zmq

from jupyter_distributed.cluster.intake import Intake
from jupyter_distributed.protocol.messages import parse
from jupyter_distributed.protocol.reports import Display, Live, Metrics, Output
from jupyter_distributed.protocol.signing import KERNEL, Signer
from jupyter_distributed.worker import channel as channel_module
from jupyter_distributed.worker.channel import Channel
from jupyter_distributed.worker.report import ChannelReporter

from .core_helpers import shell  # noqa: F401 (the fixture)

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


def test_a_local_ranks_output_comes_on_its_cell_socket_in_order_with_its_displays(
    shell: Any,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    came: list[tuple[int, bool, str]] = []  # (rank, on the cell socket, what)
    route = Intake._route

    def noted(
        self: Any, taken: Any, peer: Any, rank: int, cell: bool, message: Any, *a: Any
    ) -> None:
        if isinstance(message, Output | Display | Live | Metrics):
            came.append((rank, cell, type(message).__name__))
        route(self, taken, peer, rank, cell, message, *a)

    monkeypatch.setattr(Intake, "_route", noted)
    code = (
        "%%distributed -n 2\n"
        "import sys, time\n"
        "from IPython.display import display\n"
        "for i in range(3):\n"
        "    report(step=i)\n"
        "    print(f'line {i} of {rank}')\n"
        "    time.sleep(0.05)\n"
        "display({'text/plain': f'shown by {rank}'}, raw=True)\n"
        "print('\\rhalf', end='', flush=True); time.sleep(0.3); print('\\rdone')\n"
        "print(f'last of {rank}', file=sys.stderr)"
    )
    result = shell.run_cell(code)
    assert result.error_in_exec is None, result.error_in_exec
    shown = capsys.readouterr()
    assert came, "no output reached the kernel"
    assert {cell for _, cell, _ in came} == {True}, came  # none on the control channel
    assert {kind for _, _, kind in came} >= {"Output", "Display", "Metrics"}
    for r in range(2):  # a line takes the samples reported before it along, just ahead of it
        kinds = [kind for rank, _, kind in came if rank == r]
        assert kinds[:2] == ["Metrics", "Output"], kinds
    for r in range(2):
        out = shown.out
        at = [out.find(f"line {i} of {r}") for i in range(3)]
        assert -1 < at[0] < at[1] < at[2] < out.find(f"shown by {r}"), out
        assert f"last of {r}" in shown.err
