"""A rank's side of the control channel: a DEALER socket on the shared I/O loop.

Other threads call :meth:`Channel.send` with a message, which never blocks. Incoming messages
are verified (a message without the cluster's secret is dropped before anything is unpickled),
parsed, and handed to a callback on the I/O thread; ``tick`` runs there about every 100 ms, or,
while the rank rests (:meth:`Channel.rest`: no cell for a while), only when its owner says the
next thing is due (a heartbeat a second), so that hundreds of idle ranks do not each wake ten
times a second; a cell's start (:meth:`Channel.send_later`) brings the 100 ms back at once.

The socket has no self-chosen identity: the kernel knows a rank by the signed ``src`` of its
messages. With ``curve`` (the kernel's public key and this cluster's client keypair, from the
bootstrap environment) the connection is encrypted and the kernel admits it. A buffer over
:data:`~..protocol.frames.MAX_FRAME` (the most the kernel reads in one frame) is cut into frames,
their counts in the header's ``parts``.
"""

from __future__ import annotations

import threading
import time
import traceback
from collections.abc import Callable, Sequence

import zmq

from ..ioloop import Batch, IoLoop
from ..protocol.frames import split_large
from ..protocol.header import BadHeader, Message
from ..protocol.messages import parse
from ..protocol.signing import BadMessage, Buffer, Signer

OnMessage = Callable[[Message, list[Buffer]], None]
POLL_MS = 100  # the I/O thread's tick while a cell runs
REST_MS = 1000  # the longest wait of a resting one (the owner's ``rest`` sets when it ticks)


def dealer(
    ctx: zmq.Context[zmq.Socket[bytes]], address: str, curve: dict[str, str] | None
) -> zmq.Socket[bytes]:
    """A rank's connection to the kernel: no queue limits, 5 s to send what is left at close,
    CurveZMQ with the bootstrap's keys across hosts."""
    sock = ctx.socket(zmq.DEALER)
    if curve:
        sock.setsockopt(zmq.CURVE_SERVERKEY, curve["server"].encode())
        sock.setsockopt(zmq.CURVE_PUBLICKEY, curve["public"].encode())
        sock.setsockopt(zmq.CURVE_SECRETKEY, curve["secret"].encode())
    for opt in (zmq.SNDHWM, zmq.RCVHWM):
        sock.setsockopt(opt, 0)
    sock.setsockopt(zmq.LINGER, 5000)
    sock.connect(address)
    return sock


class Channel:
    def __init__(
        self,
        address: str,
        signer: Signer,
        on_message: OnMessage,
        tick: Callable[[], None],
        curve: dict[str, str] | None = None,
    ) -> None:
        self._signer = signer
        self._on_message = on_message
        self._lock = threading.Lock()
        self.context: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
        sock = dealer(self.context, address, curve)
        self._loop = IoLoop(sock, self._receive, tick, self._failed, POLL_MS, "jd-channel")
        self._later: Message | None = None  # held back by send_later, since _later_since
        self._later_since = 0.0
        self._resting = False  # the I/O thread ticks only when due (see rest)

    def start(self) -> None:
        self._loop.start()

    def send(
        self, message: Message, buffers: Sequence[Buffer] = (), drop_later: bool = False
    ) -> None:
        """Queue a message; safe from any thread, never blocks. What :meth:`send_later` holds
        back leaves first, unless ``drop_later`` (this message says it too)."""
        header = message.to_header()
        frames, parts = split_large(buffers)
        if parts is not None:
            header = {**header, "parts": parts}
        with self._lock:  # counters leave in order, whichever thread sends
            later, self._later = self._later, None
            if later is not None and not drop_later:
                self._loop.put(self._signer.pack(later.to_header()), wake=False)
            self._loop.put(self._signer.pack(header, frames))

    def send_later(self, message: Message) -> None:
        """Hold ``message`` back: it leaves before the next message sent, or at the I/O
        thread's next look once it has waited (:meth:`flush_later`), without a wake-up of
        that thread now (which would take the GIL from the cell as it starts)."""
        with self._lock:
            self._later, self._later_since = message, time.monotonic()
        if self._resting:  # (a cell starts after a rest: the thread looks within 100 ms again)
            self._resting = False
            self._loop.pace(POLL_MS)
            self._loop.wake()

    def drop_later(self) -> None:
        """Forget what :meth:`send_later` holds (a message sent elsewhere says it too)."""
        with self._lock:
            self._later = None

    def holding(self) -> bool:
        """Whether :meth:`send_later` holds a message back."""
        return self._later is not None

    def rest(self, due: float | None) -> None:
        """(I/O thread) ``due``: in how many seconds the owner's next periodic work is due
        (it rests, or its cell runs quietly); the thread ticks then (or when something
        arrives), not every 100 ms. None: every 100 ms again."""
        if due is None:
            if self._resting:
                self._resting = False
                self._loop.pace(POLL_MS)
            return
        if not self._resting:
            self._resting = True
            self._loop.pace(REST_MS)
        self._loop.tick_within(due)

    def sent(self) -> int:
        """The counter of the last message queued (0: none yet): a message on another
        connection that must not overtake it names this (see ``cellsocket``)."""
        return self._signer.sent

    def release_later(self) -> None:
        """Send what :meth:`send_later` holds now, if anything (any thread): a message on
        another connection is about to name it as its ``after``."""
        if self._later is None:
            return
        with self._lock:
            later, self._later = self._later, None
            if later is not None:
                self._loop.put(self._signer.pack(later.to_header()))

    def flush_later(self, after: float) -> None:
        """Send what is held back if it has waited ``after`` seconds (on the I/O thread)."""
        if self._later is not None and time.monotonic() - self._later_since >= after:
            self.release_later()

    def close(self, timeout: float = 5.0) -> None:
        """Send what is queued, then stop the I/O thread."""
        self.flush_later(0.0)
        if self._loop.stop(timeout):
            self.context.term()

    def _failed(self, exc: BaseException) -> None:
        traceback.print_exception(exc)  # the kernel sees the rank go quiet, then exit

    def _receive(self, batch: Batch) -> None:
        for frames in batch:
            try:
                header, buffers = self._signer.unpack([f.buffer for f in frames])
                message = parse(header)
            except (BadMessage, BadHeader):
                continue  # only the kernel holds the secret; ignore anything else
            if message is not None:
                self._on_message(message, buffers)
