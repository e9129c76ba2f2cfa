"""How a rank reports to whoever runs it: the :class:`Reporter` interface and its channel
implementation. (The SageMaker one, which writes tagged lines, is in :mod:`.sagemaker_rank`.)

The runtime says *what* happened (output, a state, samples, a cell's end); the reporter decides
how it travels, so the runtime never builds a wire header.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol

from ..protocol.header import Message
from ..protocol.metrics import Sample, pack_samples
from ..protocol.reports import ClearOutput, Display, Done, Fatal, Live, Metrics, Output, State
from ..protocol.signing import Buffer

SendWith = Callable[[str, list[Sample]], None]  # sends a line with (run id, samples)

if TYPE_CHECKING:  # a SageMaker rank has no ZeroMQ: never import the channel at run time
    from .cellsocket import CellSocket
    from .channel import Channel


class Reporter(Protocol):
    def output(self, run_id: str, stream: str, lines: list[tuple[float, str]]) -> None: ...

    def live(self, message: Live) -> None:
        """A line redrawn in place (a progress bar), as it reads now."""

    def display(self, message: Display) -> None:
        """A rich display (a MIME bundle)."""

    def clear(self, message: ClearOutput) -> None:
        """``clear_output()``: what the rank shows under the cell is cleared."""

    def state(self, run_id: str, state: str) -> None: ...

    def metrics(self, run_id: str, samples: list[Sample]) -> None:
        """``report()`` samples as the user gave them (values not yet checked)."""

    def done(self, done: Done, buffers: Sequence[Buffer]) -> None: ...

    def fatal(self, message: str) -> None:
        """The rank could not set up and is about to exit."""


class ChannelReporter:
    """Signed messages on the control channel; metrics as one packed batch (the kernel checks
    each value when it unpacks them). With a ``cell`` socket (the main thread's), a cell's end
    goes there, straight from the main thread; once :meth:`output_on_cell` is called, where
    that socket is a Unix one (every rank on the kernel's machine), the rank's output and its
    ``report()`` samples go there too, from the thread that has them: a line then wakes no
    I/O thread of the rank's and no ZeroMQ thread on either side (issue 26: the cost we add to
    a training step), and is in order with the displays and the cell's end on the one
    socket."""

    def __init__(self, channel: Channel, cell: CellSocket | None = None) -> None:
        self.channel = channel
        self.cell = cell
        self._out: CellSocket | None = None  # where output goes when not the channel
        # the runtime's ``flush_metrics``: where lines go on the cell socket, the rank's waiting
        # ``report()`` samples leave with them, back to back (the kernel records both in one
        # transaction), not at the I/O thread's next look
        self.with_samples: Callable[[SendWith], None] | None = None

    def output_on_cell(self) -> bool:
        """From now on, output goes on the cell socket where it is a Unix one (after the
        rank's hello there: the kernel learns the socket from it); whether it does."""
        if self.cell is not None and self.cell.local:
            self._out = self.cell
        return self._out is not None

    def _send_output(self, message: Message) -> None:
        if self._out is None:
            self.channel.send(message)
            return
        # the cell's state, if still held, leaves first (its counter is the ``after`` the
        # kernel waits for): output is never recorded before the state of its cell
        self.channel.release_later()
        self._out.send(message)

    def output(self, run_id: str, stream: str, lines: list[tuple[float, str]]) -> None:
        message = Output(run_id, stream, lines)
        out = self._out
        if out is None or self.with_samples is None:
            self._send_output(message)
            return

        def send(samples_run: str, samples: list[Sample]) -> None:
            with out.together():  # (the samples first: where the kernel reads them alone, it
                if samples:  # holds them a few ms while the cell runs, and the line that
                    self.metrics(samples_run, samples)  # follows takes them along)
                self._send_output(message)

        self.with_samples(send)

    def live(self, message: Live) -> None:
        self._send_output(message)

    def display(self, message: Display) -> None:
        self._send_output(message)

    def clear(self, message: ClearOutput) -> None:
        self._send_output(message)

    def state(self, run_id: str, state: str) -> None:
        # Held back: a cell that ends within ~0.1 s says it ran with its end (the kernel records
        # ``running`` then); a longer one's state leaves at the I/O thread's next look, and
        # always before anything else the rank sends.
        self.channel.send_later(State(run_id, state))

    def metrics(self, run_id: str, samples: list[Sample]) -> None:
        message, packed = Metrics(run_id, len(samples)), [pack_samples(samples)]
        if self._out is None:
            self.channel.send(message, packed)
            return
        # on the cell socket too, from whichever thread sends them (the I/O thread's look, or
        # the thread of a line): one connection keeps the batches in order
        self.channel.release_later()
        self._out.send(message, packed)

    def done(self, done: Done, buffers: Sequence[Buffer]) -> None:
        if self.cell is None:
            self.channel.send(done, buffers, drop_later=True)  # (the cell's state, still held)
            return
        self.channel.drop_later()
        self.cell.send(done, buffers)

    def fatal(self, message: str) -> None:
        self.channel.send(Fatal(message))
