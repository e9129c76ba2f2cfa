"""The kernel's end of the ranks' Unix cell sockets (every rank on this machine, ``ipc``).

A rank's cell socket (cells in, their ends out, see ``worker/cellsocket.py``) is a Unix
``SOCK_SEQPACKET`` connection to :class:`CellServer`, in the control channel's directory of
mode 0700; a connection from another user is refused all the same (``SO_PEERCRED``). Which
rank a connection is, the router learns from the first message it verifies on it, as it does
for ZeroMQ's routing ids.

The I/O thread accepts and reads (:class:`CellServer`); whichever thread sends a cell writes it
itself (:meth:`CellPeer.send`, never waiting): a record the socket has no room for waits in the
peer, in order, until the I/O thread sees the socket writable (:meth:`CellPeer.flush`).

A message over the kernel's cap (``limit()``, ``Distributed.max_message_mb``) is refused from
its frame table, before any of it is kept, and its connection is closed: no rank sends one (it
checks its own), so the peer is treated as hostile.
"""

from __future__ import annotations

import functools
import os
import socket
import struct
import threading
from collections import deque
from collections.abc import Callable
from pathlib import Path

import zmq

from ..ioloop import IoLoop
from ..protocol.packets import RECORD, BadPacket, Reassembler, TooLarge, records
from ..protocol.signing import Buffer

_CRED = struct.Struct("3i")  # struct ucred: pid, uid, gid


Take = Callable[[list[tuple["CellPeer", list[Buffer]]]], None]
_BOTH = zmq.POLLIN | zmq.POLLOUT


class CellServer:
    """(I/O thread) Accepts the ranks' cell connections and reads them; the whole messages
    that one round of reads gave (every connection ready at once) go to ``take`` as one batch,
    a connection's end to ``gone`` after them, and why records were dropped to ``reject`` (a
    :class:`TooLarge` closes the connection); no message may pass ``limit()`` bytes."""

    def __init__(
        self,
        directory: Path,
        loop: IoLoop,
        take: Take,
        gone: Callable[[CellPeer], None],
        reject: Callable[[CellPeer, BadPacket], None],
        limit: Callable[[], int],
    ) -> None:
        self.path = directory / "cells"
        self._loop, self._take, self._gone, self._reject = loop, take, gone, reject
        self._limit = limit
        self._peers: dict[int, CellPeer] = {}  # by file descriptor
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self._sock.bind(str(self.path))
            self._sock.listen(128)
            self._sock.setblocking(False)
        except OSError:
            self._sock.close()
            raise
        self._batch: list[tuple[CellPeer, list[Buffer]]] = []  # (of this round of reads)
        self._ended: list[CellPeer] = []
        loop.serve(self._sock.fileno(), self._accept)
        loop.after_serving(self._flush)

    @staticmethod
    def supported() -> bool:
        """Whether this system has what the cell sockets need (Linux does; elsewhere the cell
        sockets stay ZeroMQ)."""
        return hasattr(socket, "SO_PEERCRED") and hasattr(socket, "SOCK_SEQPACKET")

    def close(self, stopped: bool) -> None:
        """Close the listener, and the connections once the I/O thread ``stopped``."""
        if stopped:
            for peer in self._peers.values():
                with peer.lock:
                    peer.close()
        self._sock.close()

    def _accept(self, events: int) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except BlockingIOError:
                return
            cred = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _CRED.size)
            if _CRED.unpack(cred)[1] != os.getuid():
                conn.close()  # (the directory keeps others out already)
                continue
            peer = CellPeer(conn, self._blocked, self._limit)
            self._peers[peer.fd] = peer
            self._serve(peer)

    def _serve(self, peer: CellPeer, events: int = zmq.POLLIN) -> None:
        self._loop.serve(peer.fd, functools.partial(self._on_ready, peer), events)

    def _on_ready(self, peer: CellPeer, events: int) -> None:
        if events & zmq.POLLOUT:
            with peer.lock:
                if peer.flush():
                    self._serve(peer)
        if not events & ~zmq.POLLOUT:
            return
        messages, bad, closed = peer.read()
        for cause in bad:
            self._reject(peer, cause)
        self._batch.extend((peer, m) for m in messages)
        if closed:
            self._loop.unserve(peer.fd)
            del self._peers[peer.fd]
            self._ended.append(peer)

    def _flush(self) -> None:
        """What every ready connection gave, as one batch; then the connections that ended."""
        batch, ended = self._batch, self._ended
        self._batch, self._ended = [], []
        try:
            if batch:
                self._take(batch)
        finally:
            for peer in ended:
                with peer.lock:
                    peer.close()
                self._gone(peer)

    def _blocked(self, peer: CellPeer) -> None:
        """(any thread) ``peer`` has records waiting: write them when the socket has room."""

        def writable() -> None:
            if not peer.closed:
                self._serve(peer, _BOTH)

        self._loop.call(writable)


class CellPeer:
    """One rank's cell connection, seen from the kernel."""

    def __init__(
        self,
        conn: socket.socket,
        blocked: Callable[[CellPeer], None],
        limit: Callable[[], int] | None = None,
    ) -> None:
        conn.setblocking(False)
        self._blocked = blocked
        self._conn = conn
        self.fd = conn.fileno()
        self.lock = threading.Lock()  # held to send, flush or close
        self._in = Reassembler(limit)
        self._buf = bytearray(RECORD)
        self._pending: deque[list[Buffer]] = deque()  # records the socket had no room for
        self.closed = False

    def send(self, frames: list[Buffer]) -> None:
        """Write a message (any thread, holding :attr:`lock`); what does not fit now waits, in
        order, for the I/O thread to :meth:`flush` it when the socket has room."""
        if self.closed:
            return  # (the rank is gone: its end is told by its exit, not by this)
        waiting = bool(self._pending)
        for record in records(frames):
            if not self._pending:
                try:
                    self._conn.sendmsg(record)
                    continue
                except BlockingIOError:
                    pass
                except OSError:
                    return  # gone: the I/O thread reads its end and closes it
            self._pending.append(record)
        if self._pending and not waiting:
            self._blocked(self)

    def flush(self) -> bool:
        """(I/O thread, holding :attr:`lock`) Write what waits; whether nothing is left."""
        while self._pending and not self.closed:
            try:
                self._conn.sendmsg(self._pending[0])
            except BlockingIOError:
                return False
            except OSError:
                self._pending.clear()
                break
            self._pending.popleft()
        return True

    def read(self) -> tuple[list[list[Buffer]], list[BadPacket], bool]:
        """(I/O thread) The whole messages that came, why records were dropped (they made no
        message), and whether the connection ended: the rank closed its end, or sent a message
        over the cap (read no further)."""
        out: list[list[Buffer]] = []
        bad: list[BadPacket] = []
        while True:
            try:
                size = self._conn.recv_into(self._buf)
            except BlockingIOError:
                return out, bad, False
            except OSError:
                return out, bad, True
            if not size:
                return out, bad, True
            try:
                message = self._in.feed(memoryview(self._buf)[:size])
            except BadPacket as exc:
                bad.append(exc)
                if isinstance(exc, TooLarge):
                    return out, bad, True
                continue
            if message is not None:
                out.append(message)

    def close(self) -> None:
        """(holding :attr:`lock`) No sending from now on."""
        self.closed = True
        self._pending.clear()
        self._conn.close()
