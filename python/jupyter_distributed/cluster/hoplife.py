"""When a relay or an aggregator (:class:`~.relay.Hop`) may leave on its own: once every
sender it waits for below (its ranks; an aggregator's, the ranks of its nodes) has spoken
through it and no connection from below is left open. A node whose ranks have all ended (a
stop, or every one of them dead) then has no relay left to end: the launcher's step of relays
ends with the ranks' (Slurm: 1.7-2.1 s after them at 64 nodes before, see RESULTS.md), and an
aggregator leaves once its relays have. A relay that leaves exits 0; the kernel does not name
that as a dead node (the ranks' own ends are named by their launcher).

Connections are counted from ZeroMQ's socket monitor (accepted, disconnected), so nothing is
asked of the ranks: a rank that dies closes its connections as one that leaves does. The same
events say which connections closed (:meth:`Connections.closed`, by their file descriptor): a
relay awaits no more ends of a cell from a rank whose connection closed (:mod:`.relay`)."""

from __future__ import annotations

import zmq
from zmq.utils.monitor import recv_monitor_message


class Connections:
    """The connections open on a bound socket, from its monitor (:attr:`socket`, to poll)."""

    def __init__(self, sock: zmq.Socket[bytes]) -> None:
        self.socket = sock.get_monitor_socket(zmq.EVENT_ACCEPTED | zmq.EVENT_DISCONNECTED)
        self._open: set[int] = set()
        self._closed: list[int] = []  # the file descriptors of those closed since closed()
        self.ever = 0  # connections accepted so far

    def none_open(self) -> bool:
        """Take the monitor's events; whether no connection is open (after one was)."""
        self._take()
        return self.ever > 0 and not self._open

    def closed(self) -> list[int]:
        """Take the monitor's events; the file descriptors of the connections that closed
        since the last call, in order (a descriptor is reused only after its close)."""
        self._take()
        out, self._closed = self._closed, []
        return out

    def _take(self) -> None:
        while self.socket.poll(0):
            event = recv_monitor_message(self.socket)
            if event["event"] == zmq.EVENT_ACCEPTED:
                self._open.add(int(event["value"]))
                self.ever += 1
            else:
                self._open.discard(int(event["value"]))
                self._closed.append(int(event["value"]))
