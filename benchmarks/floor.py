"""What a warm cell cannot cost less than, part by part, on this machine (for
``cell_timeline.py``): IPython running a cell magic that does nothing, a bare round trip to N
processes (over ZeroMQ: a ROUTER, N DEALERs that answer at once; and over Unix
``SOCK_SEQPACKET`` sockets, as the local cell sockets, the answers read by a second thread as
the kernel's I/O thread reads them), and one store transaction of a warm cell's shape (its
run's record, each rank's two states, its end); and what one send costs its sender when it wakes
the process on the other end, against the same send when nobody waits (``wake_cost``)."""

from __future__ import annotations

import multiprocessing
import queue
import select
import socket
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import zmq


def _noop(line: str, cell: str) -> None:
    return None


def noop_magic(ip: Any, count: int) -> float:
    """Median seconds of ``ip.run_cell`` for a cell magic that does nothing."""
    ip.register_magic_function(_noop, "cell", "jd_noop")
    times = []
    for _ in range(count):
        t0 = time.perf_counter()
        ip.run_cell("%%jd_noop -n 2\npass")
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _peer(address: str) -> None:
    sock = zmq.Context().socket(zmq.DEALER)
    sock.connect(address)
    sock.send(b"hello")
    while (frames := sock.recv_multipart())[0] != b"stop":
        sock.send_multipart([b"done", frames[0][:8]])


def zmq_round_trip(ranks: int, count: int) -> float:
    """Median seconds for a 300-byte message out to ``ranks`` processes and their answers back."""
    ctx = zmq.Context()
    router = ctx.socket(zmq.ROUTER)
    port = router.bind_to_random_port("tcp://127.0.0.1")
    spawn = multiprocessing.get_context("spawn")
    peers = [spawn.Process(target=_peer, args=(f"tcp://127.0.0.1:{port}",)) for _ in range(ranks)]
    for p in peers:
        p.start()
    try:
        ids = [router.recv_multipart()[0] for _ in peers]
        times = []
        for _ in range(count):
            t0 = time.perf_counter()
            for peer in ids:
                router.send_multipart([peer, b"x" * 300])
            for _ in ids:
                router.recv_multipart()
            times.append(time.perf_counter() - t0)
        for peer in ids:
            router.send_multipart([peer, b"stop"])
    finally:
        for p in peers:
            p.join(5)
            if p.is_alive():
                p.kill()
        router.close(0)
        ctx.term()
    return statistics.median(times)


def _unix_peer(path: str) -> None:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    sock.connect(path)
    while (data := sock.recv(65536)) != b"stop":
        sock.send(b"done" + data[:8])


def unix_round_trip(ranks: int, count: int) -> float:
    """Median seconds for a 300-byte message out to ``ranks`` processes over Unix sockets, sent
    from this thread, and their answers read by another one (which then wakes this one)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "cells")
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        listener.bind(path)
        listener.listen()
        spawn = multiprocessing.get_context("spawn")
        peers = [spawn.Process(target=_unix_peer, args=(path,)) for _ in range(ranks)]
        for p in peers:
            p.start()
        conns = [listener.accept()[0] for _ in peers]
        done: queue.SimpleQueue[None] = queue.SimpleQueue()
        reader = threading.Thread(target=_answers, args=(conns, done, count), daemon=True)
        reader.start()
        times = []
        try:
            for _ in range(count):
                t0 = time.perf_counter()
                for conn in conns:
                    conn.send(b"x" * 300)
                done.get()
                times.append(time.perf_counter() - t0)
        finally:
            for conn in conns:
                conn.send(b"stop")
            for p in peers:
                p.join(5)
                if p.is_alive():
                    p.kill()
            for conn in conns:
                conn.close()
            listener.close()
    return statistics.median(times)


def _napping_peer(path: str) -> None:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    sock.connect(path)
    while (data := sock.recv(65536)) != b"stop":
        if data == b"nap":  # asleep, but not on the socket: a send now wakes nobody
            time.sleep(0.004)
            continue
        sock.send(b"ok")


def wake_cost(count: int) -> tuple[float, float]:
    """Median CPU seconds (the sender's own, in the system call) of a 300-byte send to another
    process over a Unix socket: when that process waits on the socket (the send wakes it, as a
    cell wakes a rank and a rank's end the kernel's I/O thread), and when it sleeps elsewhere
    (the same send, no wake-up). Each send follows 1–2 ms of quiet, as a cell's sends do."""
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "wake")
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        listener.bind(path)
        listener.listen()
        peer = multiprocessing.get_context("spawn").Process(target=_napping_peer, args=(path,))
        peer.start()
        conn = listener.accept()[0]
        woke: list[int] = []
        quiet: list[int] = []
        try:
            for _ in range(count):
                time.sleep(0.002)  # the peer waits in recv()
                t0 = time.thread_time_ns()
                conn.send(b"x" * 300)
                woke.append(time.thread_time_ns() - t0)
                conn.recv(64)
                conn.send(b"nap")
                time.sleep(0.001)  # the peer sleeps in time.sleep(), not on the socket
                t0 = time.thread_time_ns()
                conn.send(b"x" * 300)
                quiet.append(time.thread_time_ns() - t0)
                conn.recv(64)
        finally:
            conn.send(b"stop")
            peer.join(5)
            if peer.is_alive():
                peer.kill()
            conn.close()
            listener.close()
    return statistics.median(woke) / 1e9, statistics.median(quiet) / 1e9


def _answers(conns: list[socket.socket], done: queue.SimpleQueue[None], count: int) -> None:
    poll = select.poll()
    for conn in conns:
        poll.register(conn, select.POLLIN)
    by_fd = {conn.fileno(): conn for conn in conns}
    for _ in range(count):
        left = len(conns)
        while left:
            for fd, _ in poll.poll():
                by_fd[fd].recv(65536)
                left -= 1
        done.put(None)


def store_transaction(ranks: int, count: int) -> float:
    """Median seconds of one ``Store.append`` of a warm cell's record, replies and end."""
    from jupyter_distributed.events import RankEvent, RankState, RunEvent, RunState
    from jupyter_distributed.history.store import RunRecord, Store

    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "history.sqlite3")
        coords = {r: {"host": "h", "pid": 100 + r, "rank": r} for r in range(ranks)}
        times = []
        for i in range(count):
            run_id = f"20261125-000000-{i:08x}"
            now = time.time()
            record = RunRecord(
                id=run_id, backend="local", world_size=ranks, ranks=list(range(ranks)),
                state=RunState.RUNNING, cluster_id="c", spec={"layout": {"nodes": 1}},
                source="pass", started=now,
            )  # fmt: skip
            events = [
                RankEvent(run_id, r, now, state, "h", 100 + r)
                for r in range(ranks)
                for state in (RankState.RUNNING, RankState.DONE)
            ]
            t0 = time.perf_counter()
            store.append([*events, RunEvent(run_id, now, RunState.COMPLETED)], run=(record, coords))
            times.append(time.perf_counter() - t0)
        store.close()
    return statistics.median(times[count // 10 :])
