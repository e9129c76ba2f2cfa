"""One I/O thread owns a ZeroMQ socket: the kernel's ROUTER and each rank's DEALER alike.

ZeroMQ sockets are not thread-safe, so every other thread hands work to :meth:`IoLoop.put`
(frames to send) or :meth:`IoLoop.call` (a function to run on the I/O thread), which never
block: a queue keeps their order and a pipe wakes the thread, written only when the thread is
not already due to look (every ``os.write`` lets go of the GIL, and getting it back behind a
busy thread can cost a switch interval, 5 ms). Incoming messages are handed to
``on_batch`` in batches of up to 1000 (so the kernel records each batch in one transaction);
``tick`` runs about every ``poll_ms`` (:meth:`IoLoop.pace` changes it), and after every
wake-up unless ``tick_on_wake`` is False (then only when due: a kernel woken a dozen times by a
cell's messages does not look at its processes and its store a dozen times).
:meth:`IoLoop.watch` adds a file descriptor (e.g. a process's pidfd) whose readiness runs a
function at once, not at the next tick, and :meth:`IoLoop.serve` one whose every readiness does
(a Unix connection the loop reads). An exception on the thread ends it and is handed to
``on_error``: nobody waits forever on a silently dead loop.
"""

from __future__ import annotations

import contextlib
import os
import queue
import select
import threading
import time
from collections.abc import Callable, Sequence
from typing import cast

import zmq

from .protocol.frames import copied
from .protocol.signing import Buffer

Batch = list[list[zmq.Frame]]
_STOP = object()
_BATCH = 1000


class IoLoop:
    def __init__(
        self,
        sock: zmq.Socket[bytes],
        on_batch: Callable[[Batch], None],
        tick: Callable[[], None],
        on_error: Callable[[BaseException], None],
        poll_ms: int = 100,
        name: str = "jd-io",
        tick_on_wake: bool = True,
    ) -> None:
        self.sock = sock
        self._on_batch, self._tick, self._on_error = on_batch, tick, on_error
        self._poll_ms = poll_ms
        self._out: queue.SimpleQueue[object] = queue.SimpleQueue()
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self.stopped = threading.Event()
        self._served: dict[int, Callable[[int], None]] = {}
        self._after_serving: list[Callable[[], None]] = []
        self._poller = zmq.Poller()
        self._watched = _Watched(self._poller)  # (in one epoll set, where there is epoll)
        self._woken = False  # the pipe holds a wake-up the thread has not read yet
        self._again = False  # (I/O thread) something was queued on it: look again at once
        self._pipe_lock = threading.Lock()  # held to write or close the pipe
        self._due: float | None = None  # (I/O thread) run ``tick`` again by then (monotonic)
        self._tick_on_wake = tick_on_wake
        self._ticked = 0.0  # (I/O thread) when ``tick`` last ran (monotonic)
        self._thread = threading.Thread(target=self._run, daemon=True, name=name)

    def start(self) -> None:
        self._thread.start()

    def put(self, frames: Sequence[Buffer], wake: bool = True) -> None:
        """Queue a multipart message; safe from any thread, never blocks. With ``wake``
        False the thread is not woken for it: the caller calls :meth:`wake` after queueing
        more (one wake-up for a cell's messages to every rank)."""
        self._out.put(frames)
        if wake:
            self._wake()

    def call(self, fn: Callable[[], None], wake: bool = True) -> None:
        """Run ``fn`` on the I/O thread, in order with the queued messages. With ``wake``
        False it runs when the thread next wakes (for a message, a put, or its tick): before
        any message received after that, never later."""
        self._out.put(fn)
        if wake:
            self._wake()

    def wake(self) -> None:
        """Have the thread look at its queue now."""
        self._wake()

    def tick_within(self, seconds: float) -> None:
        """Run ``tick`` again within ``seconds`` (not the usual ``poll_ms``) even if nothing
        arrives; only on the I/O thread (from ``on_batch`` or ``tick``), once per need."""
        due = time.monotonic() + seconds
        self._due = due if self._due is None else min(self._due, due)

    def pace(self, poll_ms: int, from_now: bool = False) -> None:
        """Run ``tick`` about every ``poll_ms`` from the thread's next wait on (any thread; a
        wait under way ends as it would: call :meth:`wake` to end it now). ``from_now`` (only
        on the I/O thread): the next tick ``poll_ms`` from now, not at once where the last was
        longer ago (a faster pace after a rest ticks when due, not for being overdue)."""
        self._poll_ms = poll_ms
        if from_now:
            self._ticked = time.monotonic()

    def watch(self, fd: int, fn: Callable[[], None]) -> None:
        """Run ``fn`` on the I/O thread as soon as ``fd`` is readable, once; the loop owns
        ``fd`` from now on and closes it after that (or when the loop ends)."""

        def add() -> None:
            self._watched.add(fd, fn)

        self.call(add)

    def serve(self, fd: int, fn: Callable[[int], None], events: int = zmq.POLLIN) -> None:
        """Run ``fn(events ready)`` on the I/O thread each time ``fd`` is ready for ``events``,
        until :meth:`unserve` (called again: other events). Only on the I/O thread, or before
        :meth:`start`; the caller keeps and closes ``fd``."""
        self._served[fd] = fn
        self._poller.register(fd, events)

    def after_serving(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` on the I/O thread after each round of :meth:`serve`'s functions (what
        several descriptors gave at once is handled at once). Before :meth:`start`."""
        self._after_serving.append(fn)

    def unserve(self, fd: int) -> None:
        """(I/O thread) Stop serving ``fd``."""
        if self._served.pop(fd, None) is not None:
            self._poller.unregister(fd)

    def read_now(self) -> None:
        """(This thread, in ``tick``) Take what the socket and the served descriptors hold
        now: a watched process's end can be seen after the poll that looked at them, while
        what it sent before it ended is already there."""
        ready = dict(self._poller.poll(0))
        if ready.get(self.sock):
            self._receive()
        if self._served:
            self._serve_ready(ready)

    def stop(self, timeout: float = 5.0) -> bool:
        """Send what is queued, then end the thread; whether it ended within ``timeout``."""
        self._out.put(_STOP)
        self._wake()
        return self.stopped.wait(timeout)

    def _wake(self) -> None:
        if self._woken:  # the thread will drain the queue after this item was put
            return
        if threading.get_ident() == self._thread.ident:  # (its next wait ends at once: no
            self._again = True  # write to its own pipe, no wake-up to read)
            return
        self._woken = True
        # (a full pipe: the thread is awake anyway; a closed one's number may be reused)
        with self._pipe_lock, contextlib.suppress(BlockingIOError, OSError):
            if self._wake_w >= 0:
                os.write(self._wake_w, b"\0")

    def _run(self) -> None:
        poller = self._poller
        poller.register(self.sock, zmq.POLLIN)
        poller.register(self._wake_r, zmq.POLLIN)
        try:
            while True:
                timeout = 0 if self._again else self._wait_ms()
                self._again = False
                ready = dict(poller.poll(timeout))
                if self._wake_r in ready:
                    with contextlib.suppress(BlockingIOError):
                        os.read(self._wake_r, 65536)
                    self._woken = False  # (before draining: a later put wakes us again)
                if not self._drain():
                    return
                if ready.get(self.sock):
                    self._receive()
                if self._served:
                    self._serve_ready(ready)
                self._watched.fire(ready)
                self._maybe_tick()
        except Exception as exc:  # noqa: BLE001 (handed on: the owner decides what it means)
            self._on_error(exc)
        finally:
            self._watched.close()
            self.sock.close(linger=None)
            with self._pipe_lock:
                os.close(self._wake_r)
                os.close(self._wake_w)
                self._wake_w = -1
            self.stopped.set()

    def _wait_ms(self) -> int:
        """How long the next wait may last: until the next tick is due."""
        now = time.monotonic()
        timeout = self._poll_ms
        if not self._tick_on_wake:  # (every poll_ms, however often it woke meanwhile)
            timeout = min(timeout, int((self._ticked - now) * 1000 + self._poll_ms + 0.999))
        if self._due is not None:
            timeout = min(timeout, int((self._due - now) * 1000 + 0.999))
        return max(0, timeout)

    def _maybe_tick(self) -> None:
        now = time.monotonic()
        asked = self._due is not None and now >= self._due
        if asked:
            self._due = None  # (this tick is the one asked for)
        if asked or self._tick_on_wake or now - self._ticked >= self._poll_ms / 1000:
            self._ticked = now
            self._tick()

    def _serve_ready(self, ready: dict[object, int]) -> None:
        served = False
        for fd, events in ready.items():
            fn = self._served.get(fd)  # type: ignore[call-overload]
            if fn is not None:
                fn(events)
                served = True
        if served:
            for after in self._after_serving:
                after()

    def _drain(self) -> bool:
        out = self._out
        while not out.empty():  # (only this thread takes: not empty, so get_nowait succeeds)
            item = out.get_nowait()
            if item is _STOP:
                return False
            if callable(item):
                item()
            else:
                frames = cast("Sequence[Buffer]", item)
                self.sock.send_multipart(frames, copy=copied(frames))
        return True

    def _receive(self) -> None:
        batch: Batch = []
        while len(batch) < _BATCH:
            try:
                batch.append(self.sock.recv_multipart(zmq.NOBLOCK, copy=False))
            except zmq.Again:
                break
        if batch:
            self._on_batch(batch)


class _Watched:
    """What :meth:`IoLoop.watch` watches: descriptors whose readiness runs a function once (then
    each is closed). Where there is ``epoll`` they are in one ``epoll`` set, and the loop's poller
    polls its one descriptor (readable as soon as any of them is), not each of them: a wait with a
    pidfd per relay and aggregator, or per rank on the kernel's host, cost the I/O thread ~0.6 µs
    per descriptor (issue 26: ~0.16 ms of polls a trivial cell at 10,000 ranks in a tree, ~0.15 ms a
    wake-up with 1,000 local ranks' pidfds). Elsewhere they are polled one by one. Only on the
    loop's thread, but for :meth:`close` once it is done."""

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
