"""A rank's side of the control channel: one I/O thread owns the ZeroMQ socket.

Other threads hand messages to :meth:`Channel.send`, which never blocks: a queue keeps their
order and a pipe wakes the I/O thread. Incoming messages are verified and handed to a callback
on the I/O thread; ``tick`` runs there about every 100 ms for periodic work.
"""

from __future__ import annotations

import contextlib
import os
import queue
import threading
from collections.abc import Callable, Sequence
from typing import Any

import zmq

from .protocol import BadMessage, Buffer, Signer

OnMessage = Callable[[dict[str, Any], list[Buffer]], None]


class Channel:
    def __init__(
        self,
        address: str,
        signer: Signer,
        identity: bytes,
        on_message: OnMessage,
        tick: Callable[[], None],
    ) -> None:
        self._signer = signer
        self._on_message = on_message
        self._tick = tick
        self._ctx = zmq.Context()
        self._sock = self._ctx.socket(zmq.DEALER)
        self._sock.setsockopt(zmq.IDENTITY, identity)
        self._sock.setsockopt(zmq.SNDHWM, 0)
        self._sock.setsockopt(zmq.RCVHWM, 0)
        self._sock.setsockopt(zmq.LINGER, 5000)
        self._sock.connect(address)
        self._out: queue.SimpleQueue[tuple[str, dict[str, Any], Sequence[Buffer]] | None] = (
            queue.SimpleQueue()
        )
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self._thread = threading.Thread(target=self._run, daemon=True, name="jd-channel")
        self._stopped = threading.Event()

    def start(self) -> None:
        self._thread.start()

    def send(
        self, msg_type: str, fields: dict[str, Any] | None = None, buffers: Sequence[Buffer] = ()
    ) -> None:
        """Queue a message; safe from any thread, never blocks."""
        self._out.put((msg_type, fields or {}, buffers))
        self._wake()

    def close(self, timeout: float = 5.0) -> None:
        """Send what is queued, then stop the I/O thread."""
        self._out.put(None)
        self._wake()
        self._stopped.wait(timeout)

    def _wake(self) -> None:
        with contextlib.suppress(BlockingIOError):  # a full pipe: the thread is awake anyway
            os.write(self._wake_w, b"\0")

    def _run(self) -> None:
        poller = zmq.Poller()
        poller.register(self._sock, zmq.POLLIN)
        poller.register(self._wake_r, zmq.POLLIN)
        try:
            while True:
                ready = dict(poller.poll(100))
                if self._wake_r in ready:
                    with contextlib.suppress(BlockingIOError):
                        os.read(self._wake_r, 65536)
                if not self._drain():
                    return
                if ready.get(self._sock):
                    self._receive()
                self._tick()
        finally:
            self._sock.close()
            self._ctx.term()
            self._stopped.set()

    def _drain(self) -> bool:
        while True:
            try:
                item = self._out.get_nowait()
            except queue.Empty:
                return True
            if item is None:
                return False
            msg_type, fields, buffers = item
            self._sock.send_multipart(self._signer.pack(msg_type, fields, buffers), copy=False)

    def _receive(self) -> None:
        while True:
            try:
                frames = self._sock.recv_multipart(zmq.NOBLOCK, copy=False)
            except zmq.Again:
                return
            try:
                header, buffers = self._signer.unpack([f.buffer for f in frames])
            except BadMessage:
                continue  # only the kernel holds the secret; ignore anything else
            self._on_message(header, buffers)
