"""The descriptors an :class:`~.ioloop.IoLoop` watches (a pidfd per relay, aggregator or rank on
the kernel's host), behind one descriptor where the platform has ``epoll`` (issue 26).

Each of the loop's waits is a ``zmq_poll`` of every descriptor registered with its poller: with
a pidfd each, a 10,000-rank tree's 90 relays and aggregators cost the kernel's I/O thread ~0.6 µs
each per wake-up (~0.2 ms a trivial cell), a 1,000-rank local cluster's 1,000 pidfds ten times
that. Here they are in one ``epoll`` set, and the poller polls that set's descriptor, readable as
soon as any of them is: a process that ends still wakes the loop at once, and the loop pays for
the watched descriptors only when one is ready. Elsewhere they are polled one by one, as before.
"""

from __future__ import annotations

import contextlib
import os
import select
from collections.abc import Callable

import zmq


class WatchSet:
    """Descriptors whose readiness runs a function once (then the descriptor is closed). Only
    on the loop's thread, but for :meth:`close` once it is done."""

    def __init__(self, poller: zmq.Poller) -> None:
        self._poller = poller
        self._fns: dict[int, Callable[[], None]] = {}
        self._epoll: select.epoll | None = None  # (made at the first add: a rank's loop has none)

    def __len__(self) -> int:
        return len(self._fns)

    def add(self, fd: int, fn: Callable[[], None]) -> None:
        """Run ``fn`` once ``fd`` is readable (the set closes ``fd`` then)."""
        if self._epoll is None and hasattr(select, "epoll"):
            self._epoll = select.epoll()
            self._poller.register(self._epoll.fileno(), zmq.POLLIN)
        self._fns[fd] = fn
        if self._epoll is not None:
            self._epoll.register(fd, select.EPOLLIN)
        else:
            self._poller.register(fd, zmq.POLLIN)

    def fire(self, ready: dict[object, int]) -> None:
        """Run the functions of the descriptors that are ready (``ready``: the poller's)."""
        if not self._fns:
            return
        if self._epoll is None:
            fds = [fd for fd in self._fns if fd in ready]
        elif self._epoll.fileno() in ready:
            fds = [fd for fd, _ in self._epoll.poll(0)]
        else:
            return
        for fd in fds:
            fn = self._fns.pop(fd, None)
            if fn is None:
                continue
            if self._epoll is not None:
                self._epoll.unregister(fd)
            else:
                self._poller.unregister(fd)
            os.close(fd)
            fn()

    def close(self) -> None:
        """Close every descriptor still watched (and the ``epoll`` set)."""
        for fd in self._fns:
            with contextlib.suppress(OSError):
                os.close(fd)
        self._fns.clear()
        if self._epoll is not None:
            self._epoll.close()
