"""A rank's second connection to the kernel, owned by its main thread: cells in, their ends out.

The control channel (:mod:`.channel`) is a socket owned by the rank's I/O thread, so a cell
that came on it crossed two threads before it ran (the I/O thread, then the main thread) and
its end crossed two more on the way back: each a wake-up and a hand-over of the GIL, most of a
warm round trip on a busy machine. On this socket the main thread waits for the next
:class:`~..protocol.commands.Execute` (or ``Shutdown``) itself, without the GIL, and sends the
cell's ``Done`` itself. Everything else (samples, heartbeats, interrupts, stacks; output but where
the socket is a Unix one, see below) stays on the control channel, whose I/O thread keeps
answering while a cell runs.

Two connections have no common order, so every message sent here carries ``after``: the
counter of the last message this rank queued on its control channel before it. The kernel
handles it only once that message arrived (``backends/router.py``): a cell's output always
comes before its end. The socket signs as :func:`~..protocol.signing.cell_name`, with its own
counters, and is set up like the control channel (the same CurveZMQ keys across hosts).

Where every rank is on the kernel's machine (``ipc``), the socket is not ZeroMQ but a Unix
``SOCK_SEQPACKET`` socket beside the control channel's, in the same directory of mode 0700
(the bootstrap's ``cells``): a cell goes from the kernel's thread straight to this one and its
end straight back to the kernel's I/O thread, without a ZeroMQ I/O thread on either side
(:mod:`~..protocol.packets` says how a message becomes records). The kernel closing it (it
stopped, or died) reads as ``Shutdown``. There the rank's output (lines, lines redrawn in place,
displays, ``clear_output``) travels on it too, sent by whichever thread has it (a capture
reader, the main thread; :attr:`CellSocket.local`, see ``worker/report.py``): a line wakes
neither the rank's I/O thread nor a ZeroMQ thread on either side, and the one socket keeps a
cell's output before its end.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable, Iterator, Sequence

import zmq

from ..protocol.commands import Shutdown
from ..protocol.frames import copied, split_large
from ..protocol.header import BadHeader, Message
from ..protocol.messages import parse
from ..protocol.packets import RECORD, BadPacket, Reassembler, records
from ..protocol.signing import BadMessage, Buffer, Signer
from .channel import dealer

SEND_BUFFER = 4 << 20  # bytes a Unix cell socket may have in flight (see _Unix)


class CellSocket:
    def __init__(
        self,
        ctx: zmq.Context[zmq.Socket[bytes]],
        address: str,
        signer: Signer,
        after: Callable[[], int],
        curve: dict[str, str] | None = None,
        cells: str | None = None,
    ) -> None:
        """A Unix socket connected to ``cells`` where it is given, else a ZeroMQ socket of
        ``ctx`` (the control channel's: one ZeroMQ I/O thread per rank) to ``address``."""
        self._signer = signer
        self._after = after  # the control channel's last queued counter
        self._wire: _Unix | _Zmq = _Unix(cells) if cells else _Zmq(dealer(ctx, address, curve))
        #: a Unix socket any thread may send on (a ZeroMQ one only the main thread may)
        self.local = isinstance(self._wire, _Unix)
        self._lock = threading.RLock()  # held to sign and send: counters leave in order
        self._gathered: list[list[Buffer]] | None = None  # (see together)

    def send(self, message: Message, buffers: Sequence[Buffer] = ()) -> None:
        """Send ``message`` now, ordered after the control channel's: from the main thread,
        or, where the socket is :attr:`local`, from any thread (a message leaves whole)."""
        frames, parts = split_large(buffers)
        header = message.to_header()
        if parts is not None:
            header["parts"] = parts
        with self._lock:
            header["after"] = self._after()
            packed = self._signer.pack(header, frames)
            if self._gathered is not None:
                self._gathered.append(packed)
            else:
                self._wire.send(packed)

    @contextlib.contextmanager
    def together(self) -> Iterator[None]:
        """What this thread sends inside leaves at the end, back to back (the kernel reads it
        in one wake-up); no other thread sends meanwhile."""
        with self._lock:
            self._gathered = []
            try:
                yield
            finally:
                gathered, self._gathered = self._gathered, None
                for packed in gathered:
                    self._wire.send(packed)

    def recv(self) -> tuple[Message, list[Buffer]]:
        """The next command from the kernel (blocks, main thread only); anything not signed
        with the cluster's secret, or of a kind this version does not know, is skipped."""
        while True:
            frames = self._wire.recv()
            if frames is None:
                return Shutdown(), []
            try:
                header, buffers = self._signer.unpack(frames)
                message = parse(header)
            except (BadMessage, BadHeader):
                continue  # only the kernel holds the secret
            if message is not None:
                return message, buffers

    def close(self) -> None:
        """Close the socket (before the control channel, which ends the context), sending
        what is left within 5 s."""
        self._wire.close()


class _Zmq:
    def __init__(self, sock: zmq.Socket[bytes]) -> None:
        self._sock = sock

    def send(self, frames: list[Buffer]) -> None:
        self._sock.send_multipart(frames, copy=copied(frames))

    def recv(self) -> list[Buffer] | None:
        return [f.buffer for f in self._sock.recv_multipart(copy=False)]

    def close(self) -> None:
        self._sock.close(linger=5000)


class _Unix:
    def __init__(self, path: str) -> None:
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        # room for a flood's records in flight (the system caps it at net.core.wmem_max): a
        # thread that sends output here waits for the kernel only when that much is unread
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER)
        self._sock.connect(path)
        self._in = Reassembler()
        self._buf = bytearray(RECORD)

    def send(self, frames: list[Buffer]) -> None:
        try:
            for record in records(frames):
                self._sock.sendmsg(record)
        except ConnectionError:
            pass  # the kernel is gone: nobody is left to tell

    def recv(self) -> list[Buffer] | None:
        """The next whole message; ``None`` once the kernel closed the socket."""
        while True:
            try:
                size = self._sock.recv_into(self._buf)
            except ConnectionError:
                return None
            if not size:
                return None
            try:
                message = self._in.feed(memoryview(self._buf)[:size])
            except BadPacket:
                continue  # (only the kernel can reach this socket)
            if message is not None:
                return message

    def close(self) -> None:
        self._sock.close()
