"""The kernel's sockets of the control channel, opened and closed: its ROUTER socket, bound
where the ranks connect (where, and how it keeps others out, is :mod:`.transport`'s
business), and beside it, where every rank is on this machine, the server of the ranks' cell
sockets (:mod:`.cellpeers`). What goes through them is the :class:`~.router.Router`'s.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import zmq

from .cellpeers import CellServer
from .transport import Transport, listen


class Endpoint:
    """A ZeroMQ context and its ROUTER socket, listening as ``transport`` says; on a failure
    to listen nothing is left open."""

    def __init__(self, transport: Transport) -> None:
        self.ctx = zmq.Context()
        self.sock = self.ctx.socket(zmq.ROUTER)
        for opt in (zmq.SNDHWM, zmq.RCVHWM):
            self.sock.setsockopt(opt, 0)
        self.sock.setsockopt(zmq.LINGER, 0)
        try:
            self.listener = listen(self.ctx, self.sock, transport)
        except BaseException:
            self.sock.close(linger=0)
            self.ctx.term()
            raise
        self.cells: CellServer | None = None

    def serve_cells(self, serve: Callable[[Path], CellServer]) -> None:
        """Serve the ranks' cell sockets (``serve``: a :class:`.CellServer` in the directory it
        is given), where the listener has a directory of its own and the system has what they
        need; if that fails, the sockets are closed."""
        if self.listener.directory is None or not CellServer.supported():
            return
        try:
            self.cells = serve(self.listener.directory)
        except BaseException:
            self.listener.close()
            self.sock.close(linger=0)
            self.ctx.term()
            raise

    def close(self, stopped: bool) -> None:
        """Close the listeners, and the context once the I/O thread ``stopped``."""
        if self.cells is not None:
            self.cells.close(stopped)
        self.listener.close()
        if stopped:
            self.ctx.term()
