"""A fake rank's two connections, cheap (``fake_ranks.py``; issue 26).

A fake rank stands for a rank on another host: the work of its connections there is not the
kernel's, nor its relay's. So where a rank's end is a ZeroMQ DEALER dialling an ``ipc://``
address without CurveZMQ (a node's relay, or the kernel on its host), it speaks ZMTP 3.0 with
the NULL mechanism (RFC 23, what libzmq speaks on that socket) itself, over a plain Unix
socket: one ``send`` per message, one ``recv`` for what came, and no ZeroMQ I/O thread handing
each message across threads in the helper. The other end is the real ROUTER (the relay's or
the kernel's), which reads the same bytes as from a ZeroMQ DEALER: the greeting, ``READY``
with ``Socket-Type`` DEALER and an empty ``Identity`` (the ROUTER names the peer), then each
message's frames. Elsewhere (CurveZMQ, tcp) a real ZeroMQ DEALER (``ZmqWire``), and the
kernel's Unix cell socket (``SeqpacketWire``, ``protocol/packets.py``'s records) as before.

Every wire has ``fileno()`` (for one ``epoll`` over all of a helper's connections),
``read()`` (the messages that came, each a list of frames; None once the other end closed it)
and ``send(frames)``.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Sequence
from typing import Any

import zmq

from jupyter_distributed.protocol.packets import RECORD, BadPacket, Reassembler, records
from jupyter_distributed.worker.channel import dealer  # (the real rank's connection)

Frames = list[bytes]
# ZMTP 3.0: the signature, version 3.0, the NULL mechanism, not a server, the filler
GREETING = b"\xff" + bytes(7) + b"\x01\x7f" + b"\x03\x00" + b"NULL".ljust(20, b"\0") + bytes(32)
MORE, LONG, COMMAND = 1, 2, 4  # a frame's flags
DIAL_S = 120.0  # how long a rank dials a ROUTER that does not listen yet


def _command(name: bytes, properties: Sequence[tuple[bytes, bytes]]) -> bytes:
    body = bytes([len(name)]) + name
    for key, value in properties:
        body += bytes([len(key)]) + key + len(value).to_bytes(4, "big") + value
    return bytes([COMMAND, len(body)]) + body


READY = _command(b"READY", [(b"Socket-Type", b"DEALER"), (b"Identity", b"")])


def encode(frames: Sequence[bytes]) -> bytes:
    """A message's frames as ZMTP writes them."""
    out = bytearray()
    last = len(frames) - 1
    for i, frame in enumerate(frames):
        size, more = len(frame), MORE if i < last else 0
        out += (
            bytes((more, size)) if size < 256 else bytes((more | LONG,)) + size.to_bytes(8, "big")
        )
        out += frame
    return bytes(out)


class ZmtpWire:
    """A DEALER's end of a ZMTP connection to a ROUTER at ``ipc://PATH`` (no CurveZMQ). The
    greeting and ``READY`` go at once; :meth:`wait_ready` waits for the ROUTER's (libzmq takes
    a message that came before its own ``READY`` went out for a bad command, and drops the
    connection), after which messages may go."""

    def __init__(self, address: str) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        path, waited = address.removeprefix("ipc://"), 0.0
        while True:  # (as ZeroMQ dials again until the relay or the kernel listens)
            try:
                self.sock.connect(path)
                break
            except (FileNotFoundError, ConnectionRefusedError):
                if waited > DIAL_S:
                    raise
                time.sleep(0.01)
                waited += 0.01
        self.sock.sendall(GREETING + READY)
        self._buf = bytearray()
        self._greeted = self._ready = False
        self._parts: Frames = []
        self._early: list[Frames] = []  # (messages read while waiting for READY)

    def fileno(self) -> int:
        return self.sock.fileno()

    def wait_ready(self) -> None:
        while not self._ready:
            data = self.sock.recv(1 << 16)
            if not data:
                raise ConnectionError("the ROUTER closed the connection in its handshake")
            self._buf += data
            self._early += self._parse()

    def send(self, frames: Sequence[bytes]) -> None:
        self.sock.sendall(encode(frames))

    def read(self) -> list[Frames] | None:
        try:
            data = self.sock.recv(1 << 16, socket.MSG_DONTWAIT)
        except BlockingIOError:
            return []
        if not data:
            return None
        self._buf += data
        out, self._early = self._early + self._parse(), []
        return out

    def _parse(self) -> list[Frames]:
        """The whole messages in what was read (commands taken: the ROUTER's ``READY``)."""
        buf = self._buf
        pos, end, out = 0, len(buf), []
        if not self._greeted:
            if end < len(GREETING):
                return out
            if buf[0] != 0xFF or buf[9] & 1 != 1 or buf[10] < 3:
                raise ConnectionError("not a ZMTP 3 peer")
            pos, self._greeted = len(GREETING), True
        while end - pos >= 2:
            flags = buf[pos]
            if flags & LONG:
                if end - pos < 9:
                    break
                size, head = int.from_bytes(buf[pos + 1 : pos + 9], "big"), 9
            else:
                size, head = buf[pos + 1], 2
            if end - pos - head < size:
                break
            frame = bytes(buf[pos + head : pos + head + size])
            pos += head + size
            if flags & COMMAND:  # (no heartbeats are asked for: READY is the only one)
                self._ready = self._ready or frame.startswith(b"\x05READY")
                continue
            self._parts.append(frame)
            if not flags & MORE:
                out.append(self._parts)
                self._parts = []
        del buf[:pos]
        return out


class ZmqWire:
    """A real ZeroMQ DEALER (CurveZMQ, tcp), read through its ``ZMQ_FD``."""

    def __init__(self, ctx: zmq.Context[Any], address: str, curve: Any) -> None:
        self.sock = dealer(ctx, address, curve)

    def fileno(self) -> int:
        return int(self.sock.get(zmq.FD))

    def wait_ready(self) -> None:
        """(ZeroMQ queues what is sent until its handshake is done.)"""

    def send(self, frames: Sequence[bytes]) -> None:
        self.sock.send_multipart(frames)

    def read(self) -> list[Frames] | None:
        out = []
        while self.sock.get(zmq.EVENTS) & zmq.POLLIN:  # (also clears its ZMQ_FD's signal)
            out.append(self.sock.recv_multipart(zmq.NOBLOCK))
        return out


class SeqpacketWire:
    """The kernel's Unix cell socket (``protocol/packets.py``)."""

    def __init__(self, path: str) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.sock.connect(path)
        self._in, self._buf = Reassembler(), bytearray(RECORD)

    def fileno(self) -> int:
        return self.sock.fileno()

    def wait_ready(self) -> None:
        """(Connected: nothing to wait for.)"""

    def send(self, frames: Sequence[bytes]) -> None:
        for record in records(list(frames)):
            self.sock.sendmsg(record)

    def read(self) -> list[Frames] | None:
        try:
            size = self.sock.recv_into(self._buf, 0, socket.MSG_DONTWAIT)
        except BlockingIOError:
            return []
        if not size:
            return None
        try:
            frames = self._in.feed(memoryview(self._buf)[:size])
        except BadPacket:
            return []
        return [[bytes(f) for f in frames]] if frames is not None else []


def connect(ctx: zmq.Context[Any], address: str, curve: Any) -> ZmtpWire | ZmqWire:
    """A rank's DEALER end to ``address``: ZMTP of its own where it may, else ZeroMQ's."""
    if address.startswith("ipc://") and not curve:
        return ZmtpWire(address)
    return ZmqWire(ctx, address, curve)
