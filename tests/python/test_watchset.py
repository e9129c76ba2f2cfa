"""The descriptors the kernel's I/O thread watches (a pidfd per relay, aggregator or local
rank) cost its waits one descriptor, not one each (issue 26), and each still runs its function
once, at once, when it is ready.

These assert the behaviour (how many, how often), never a time."""

from __future__ import annotations

import os
import select
import threading
import time

import pytest
import zmq

from jupyter_distributed.ioloop import IoLoop


def _synced(loop: IoLoop) -> None:
    done = threading.Event()
    loop.call(done.set)
    assert done.wait(10)


def _until(ok: object, seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while not ok() and time.monotonic() < deadline:  # type: ignore[operator]
        time.sleep(0.01)


@pytest.mark.skipif(not hasattr(select, "epoll"), reason="epoll: Linux")
def test_a_hundred_watched_descriptors_are_one_in_each_wait_and_each_fires_once() -> None:
    ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    loop = IoLoop(ctx.socket(zmq.DEALER), lambda batch: None, lambda: None, lambda exc: None)
    loop.start()
    pipes = [os.pipe() for _ in range(100)]
    fired: list[int] = []
    try:
        _synced(loop)
        polled_before = len(loop._poller.sockets)
        for i, (r, _) in enumerate(pipes):
            loop.watch(r, lambda i=i: fired.append(i))  # type: ignore[misc]
        _synced(loop)
        assert len(loop._poller.sockets) == polled_before + 1  # the set, not 100
        assert fired == []  # watched, none ready
        for i in (3, 70):  # two processes end at once
            os.write(pipes[i][1], b"x")
        _until(lambda: len(fired) == 2)
        _synced(loop)
        assert sorted(fired) == [3, 70]
        for i in (3, 70):  # the loop closed what fired
            with pytest.raises(OSError, match="Bad file descriptor"):
                os.fstat(pipes[i][0])
        os.write(pipes[99][1], b"x")  # a later one: still watched, once
        _until(lambda: len(fired) == 3)
        _synced(loop)
        _synced(loop)
        assert sorted(fired) == [3, 70, 99]
    finally:
        assert loop.stop(5)
        ctx.term()
    for i, (r, w) in enumerate(pipes):  # what was still watched is closed with the loop
        if i not in (3, 70, 99):
            with pytest.raises(OSError, match="Bad file descriptor"):
                os.fstat(r)
        os.close(w)
