"""A rank's second connection to the kernel, owned by its main thread: cells in, their ends out.

The control channel (:mod:`.channel`) is a socket owned by the rank's I/O thread, so a cell
that came on it crossed two threads before it ran (the I/O thread, then the main thread) and
its end crossed two more on the way back: each a wake-up and a hand-over of the GIL, most of a
warm round trip on a busy machine. On this socket the main thread waits for the next
:class:`~..protocol.commands.Execute` (or ``Shutdown``) itself, without the GIL, and sends the
cell's ``Done`` itself. Everything else (output, samples, heartbeats, interrupts, stacks) stays
on the control channel, whose I/O thread keeps answering while a cell runs.

Two connections have no common order, so every message sent here carries ``after``: the
counter of the last message this rank queued on its control channel before it. The kernel
handles it only once that message arrived (``backends/router.py``): a cell's output always
comes before its end. The socket signs as :func:`~..protocol.signing.cell_name`, with its own
counters, and is set up like the control channel (the same CurveZMQ keys across hosts).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import zmq

from ..protocol.frames import copied, split_large
from ..protocol.header import BadHeader, Message
from ..protocol.messages import parse
from ..protocol.signing import BadMessage, Buffer, Signer
from .channel import dealer


class CellSocket:
    def __init__(
        self,
        ctx: zmq.Context[zmq.Socket[bytes]],
        address: str,
        signer: Signer,
        after: Callable[[], int],
        curve: dict[str, str] | None = None,
    ) -> None:
        """A socket of ``ctx`` (the control channel's: one ZeroMQ I/O thread per rank)."""
        self._signer = signer
        self._after = after  # the control channel's last queued counter
        self._sock = dealer(ctx, address, curve)

    def send(self, message: Message, buffers: Sequence[Buffer] = ()) -> None:
        """Send ``message`` now (main thread only), ordered after the control channel's."""
        frames, parts = split_large(buffers)
        header = {**message.to_header(), "after": self._after()}
        if parts is not None:
            header["parts"] = parts
        signed = self._signer.pack(header, frames)
        self._sock.send_multipart(signed, copy=copied(signed))

    def recv(self) -> tuple[Message, list[Buffer]]:
        """The next command from the kernel (blocks, main thread only); anything not signed
        with the cluster's secret, or of a kind this version does not know, is skipped."""
        while True:
            frames = self._sock.recv_multipart(copy=False)
            try:
                header, buffers = self._signer.unpack([f.buffer for f in frames])
                message = parse(header)
            except (BadMessage, BadHeader):
                continue  # only the kernel holds the secret
            if message is not None:
                return message, buffers

    def close(self) -> None:
        """Close the socket (before the control channel, which ends the context), sending
        what is left within 5 s."""
        self._sock.close(linger=5000)
