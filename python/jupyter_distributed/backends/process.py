"""A cluster of rank processes that talk to the kernel over a signed ZeroMQ channel.

Shared by the ``local`` and ``mpi`` backends, which differ only in how processes start (their
:class:`Processes`). One I/O thread owns the ROUTER socket: it verifies every message, writes
events to the store at once (one transaction per batch, so a dying kernel loses nothing), watches
the processes, and forwards what the running cell must show to the main thread.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import pickle
import queue
import secrets
import socket
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import zmq

from ..errors import LaunchError, RankFailure
from ..events import ErrorEvent, Event, MetricEvent, OutputEvent, RankEvent, RankState, Stream
from ..store import Store
from ..worker.metrics import bad_metric_message, numeric, unpack_samples
from ..worker.protocol import BOOTSTRAP_ENV, BadMessage, Buffer, Signer, digest
from .base import Cluster, Plan, RankInfo, RunView
from .supervise import STOPPED_REMOTELY, execute_run

log = logging.getLogger("jupyter_distributed")

CONTROL_POLL = 0.25  # seconds between looks at the store for cancel/stop from the server


class Processes(Protocol):
    """The OS processes behind a cluster, as a backend started them."""

    def exited(self) -> list[tuple[int | None, int]]:
        """(rank, or None for a launcher process; return code) of processes that ended since the
        last call. A negative code is the signal that killed it."""

    def running(self) -> bool:
        """Whether any of the processes is still running."""

    def terminate(self, grace: float) -> None:
        """SIGTERM every process (group), then SIGKILL what is left after ``grace`` seconds."""

    def log_tail(self, rank: int | None) -> str:
        """The last lines a process wrote before its output was captured (start-up errors)."""


StartProcesses = Callable[[dict[str, str]], Processes]


class ProcessCluster(Cluster):
    start_timeout = 120.0

    def __init__(
        self,
        plan: Plan,
        store: Store,
        start: StartProcesses,
        view: RunView,
        bind_host: str = "127.0.0.1",
        connect_host: str | None = None,
    ) -> None:
        self.plan = plan
        self.store = store
        self.id = f"c-{secrets.token_hex(4)}"
        self._signer = Signer(secrets.token_bytes(32))
        self._ctx = zmq.Context()
        self._router = self._ctx.socket(zmq.ROUTER)
        for opt in (zmq.SNDHWM, zmq.RCVHWM):
            self._router.setsockopt(opt, 0)
        self._router.setsockopt(zmq.LINGER, 0)
        port = self._router.bind_to_random_port(f"tcp://{bind_host}")
        self.address = f"tcp://{connect_host or bind_host}:{port}"
        self.inbox: queue.SimpleQueue[tuple[Any, ...]] = queue.SimpleQueue()
        self._out: queue.SimpleQueue[tuple[Any, ...]] = queue.SimpleQueue()
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self._stopping = threading.Event()
        self._stopped = threading.Event()
        self._stop_lock = threading.Lock()
        self.run_id = ""
        self._early: list[tuple[int, str, float, str]] = []
        self.info: dict[int, RankInfo] = {
            r.rank: RankInfo(r.rank, r.host, None, "starting", r.coords) for r in plan.ranks
        }
        self._lost = ""
        self._bad_metric_warned: set[int] = set()
        self._thread = threading.Thread(target=self._loop, daemon=True, name=f"jd-{self.id}")
        self._thread.start()
        boot = {
            "address": self.address,
            "key": self._signer._key.hex(),
            "cluster_id": self.id,
            "layout": plan.spec.layout.to_json(),
            "kernel_pid": os.getpid(),
            "kernel_host": socket.gethostname(),
        }
        try:
            self.processes = start({BOOTSTRAP_ENV: json.dumps(boot)})
            self._wait_ready(view)
        except BaseException:
            self.stop()
            raise

    # -- public --------------------------------------------------------------------------

    @property
    def alive(self) -> bool:
        return not self._lost and not self._stopping.is_set()

    @property
    def lost(self) -> str:
        return self._lost

    def ranks(self) -> list[RankInfo]:
        return [self.info[r] for r in sorted(self.info)]

    def execute(self, request: Any, view: RunView) -> Any:
        return execute_run(self, request, view)

    def send(
        self,
        ranks: Sequence[int],
        msg_type: str,
        fields: dict[str, Any] | None = None,
        buffers: Sequence[Buffer] = (),
    ) -> None:
        digests = [digest(b) for b in buffers]
        for rank in ranks:
            frames = self._signer.pack(msg_type, fields, buffers, digests)
            self._out.put(("send", f"rank-{rank}".encode(), frames))
        self._wake()

    def begin(self, run_id: str) -> None:
        self.run_id = run_id
        self._out.put(("begin", run_id))
        self._wake()

    def mark_lost(self, why: str) -> None:
        if not self._lost:
            self._lost = why

    def stop(self, grace: float = 1.0) -> None:
        with self._stop_lock:
            self._stop(grace)

    def _stop(self, grace: float) -> None:
        if self._stopped.is_set():
            return
        if hasattr(self, "processes"):
            idle = [r for r, i in self.info.items() if i.state == "idle"]
            busy = [r for r, i in self.info.items() if i.state in ("running", "starting")]
            self.send(idle, "shutdown")
            deadline = time.monotonic() + (0 if busy else grace)
            while self.processes.running() and time.monotonic() < deadline:
                time.sleep(0.01)
            self.processes.terminate(grace)
        self._stopping.set()
        self._wake()
        self._stopped.wait(5)
        self._ctx.term()
        self._stopped.set()
        for info in self.info.values():
            if info.state not in ("failed", "exited"):
                info.state = "stopped"

    # -- start-up ------------------------------------------------------------------------

    def _wait_ready(self, view: RunView) -> None:
        waiting = set(self.info)
        deadline = time.monotonic() + self.start_timeout
        while waiting:
            try:
                item = self.inbox.get(timeout=0.05)
            except queue.Empty:
                if time.monotonic() > deadline:
                    raise LaunchError(
                        f"rank(s) {sorted(waiting)} did not start within {self.start_timeout:.0f}s"
                    ) from None
                continue
            kind = item[0]
            if kind == "hello":
                waiting.discard(item[1])
            elif kind == "fatal":
                raise LaunchError(f"rank {item[1]} could not start: {item[2]}")
            elif kind == "exit":
                failure: RankFailure = item[1]
                tail = self.processes.log_tail(failure.rank if failure.rank >= 0 else None)
                raise LaunchError(
                    f"{failure.summary} before it was ready" + (f": {tail}" if tail else "")
                )

    # -- the I/O thread ------------------------------------------------------------------

    def _wake(self) -> None:
        with contextlib.suppress(BlockingIOError, OSError):
            os.write(self._wake_w, b"\0")

    def _loop(self) -> None:
        poller = zmq.Poller()
        poller.register(self._router, zmq.POLLIN)
        poller.register(self._wake_r, zmq.POLLIN)
        last_ping = last_watch = last_control = 0.0
        try:
            while not self._stopping.is_set():
                ready = dict(poller.poll(50))
                if self._wake_r in ready:
                    with contextlib.suppress(BlockingIOError):
                        os.read(self._wake_r, 65536)
                self._drain_out()
                if ready.get(self._router):
                    self._receive()
                now = time.monotonic()
                if now - last_watch >= 0.05 and hasattr(self, "processes"):
                    last_watch = now
                    self._watch()
                if now - last_control >= CONTROL_POLL:
                    last_control = now
                    self._take_controls()
                if now - last_ping >= 2.0:
                    last_ping = now
                    self.send([i for i, r in self.info.items() if r.pid], "ping")
        except Exception:  # never die silently: the cell would wait forever
            log.exception("jupyter-distributed: control channel failed")
            self.mark_lost("the control channel failed; see the kernel log")
        finally:
            self._router.close(0)
            self._stopped.set()

    def _take_controls(self) -> None:
        """Act on cancel/stop requests the server extension queued in the store."""
        for control in self.store.take_controls(self.id):
            if control.action == "cancel" and control.target == self.run_id:
                self.inbox.put(("control", "cancel", control.target))
            elif control.action == "stop" and not self._lost:
                # a running cell sees the cluster is no longer alive and records its run as
                # stopped; stop() cannot run on this thread (it waits for this loop to end)
                self.mark_lost(STOPPED_REMOTELY)
                threading.Thread(target=self.stop, daemon=True, name=f"jd-stop-{self.id}").start()

    def _drain_out(self) -> None:
        while True:
            try:
                item = self._out.get_nowait()
            except queue.Empty:
                return
            if item[0] == "send":
                self._router.send_multipart([item[1], *item[2]], copy=False)
            elif item[0] == "begin":
                early, self._early = self._early, []
                self.store.append(
                    OutputEvent(item[1], r, t, Stream(s), text) for r, s, t, text in early
                )
                for r, s, t, text in early:
                    self.inbox.put(("event", OutputEvent(item[1], r, t, Stream(s), text)))

    def _receive(self) -> None:
        events: list[Event] = []
        items: list[tuple[Any, ...]] = []
        for _ in range(1000):
            try:
                frames = self._router.recv_multipart(zmq.NOBLOCK, copy=False)
            except zmq.Again:
                break
            identity = bytes(frames[0].buffer).decode(errors="replace")
            try:
                header, buffers = self._signer.unpack([f.buffer for f in frames[1:]])
                rank = int(identity.removeprefix("rank-"))
            except (BadMessage, ValueError) as exc:
                log.warning(
                    "jupyter-distributed: rejected a message on %s from %r: %s",
                    self.address,
                    identity,
                    exc,
                )
                continue
            new, control = self._handle(rank, header, buffers)
            events.extend(new)
            items.extend(("event", ev) for ev in new)
            if control is not None:
                items.append(control)
        if events:  # recorded before anyone is told: the history is never behind the cell
            self.store.append(events)
        for item in items:
            self.inbox.put(item)

    def _handle(
        self, rank: int, h: dict[str, Any], buffers: list[Buffer]
    ) -> tuple[list[Event], tuple[Any, ...] | None]:
        """Events to record and show, and a control item for the main thread, in order."""
        kind = h["type"]
        info = self.info.get(rank)
        if info is None:
            return [], None
        info.last_seen = time.time()
        run_id = str(h.get("run_id") or self.run_id)
        if kind == "output":
            if not run_id:
                self._early.extend((rank, h["stream"], t, s) for t, s in h["lines"][:2000])
                return [], None
            stream = Stream(h["stream"])
            return [OutputEvent(run_id, rank, t, stream, text) for t, text in h["lines"]], None
        if kind == "metrics" and run_id:
            return self._metrics(run_id, rank, h, buffers), None
        if kind == "heartbeat" and run_id and self.run_id:
            values = {"sys.cpu_percent": h["cpu"], "sys.rss_mb": h["rss_mb"]}
            for key in ("gpu_util", "gpu_mem_mb"):
                if key in h:
                    values[f"sys.{key}"] = h[key]
            return [MetricEvent(run_id, rank, h["t"], values)], None
        if kind == "state":
            info.state = "running"
            return [
                RankEvent(run_id, rank, time.time(), RankState.RUNNING, info.host, info.pid)
            ], None
        if kind == "done":
            return self._done(rank, info, h, buffers)
        if kind == "hello":
            info.host, info.pid, info.state = str(h["host"]), int(h["pid"]), "idle"
            return [], ("hello", rank, h)
        if kind == "fatal":
            return [], ("fatal", rank, str(h["message"]))
        return [], None

    def _metrics(
        self, run_id: str, rank: int, h: dict[str, Any], buffers: list[Buffer]
    ) -> list[Event]:
        """``report()`` samples: a binary batch from our worker, or JSON (already numbers)."""
        if not buffers:
            return [MetricEvent(run_id, rank, t, v) for t, v in h["samples"]]
        try:
            samples = unpack_samples(buffers[0])
        except (pickle.UnpicklingError, EOFError, ValueError, TypeError) as exc:
            log.warning("jupyter-distributed: dropped a metrics batch from rank %s: %s", rank, exc)
            return []
        events: list[Event] = []
        for t, raw in samples:
            values, bad = numeric(raw)
            if bad and rank not in self._bad_metric_warned:
                self._bad_metric_warned.add(rank)
                text = bad_metric_message(*bad[0])
                events.append(OutputEvent(run_id, rank, time.time(), Stream.STDERR, text))
            if values:
                events.append(MetricEvent(run_id, rank, float(t), values))
        return events

    def _done(
        self, rank: int, info: RankInfo, h: dict[str, Any], buffers: list[Buffer]
    ) -> tuple[list[Event], tuple[Any, ...]]:
        run_id, status = str(h["run_id"]), str(h["status"])
        state = {"ok": RankState.DONE, "interrupted": RankState.INTERRUPTED}.get(
            status, RankState.FAILED
        )
        info.state = "idle"
        now = time.time()
        events: list[Event] = []
        if h.get("value") is not None:
            events.append(OutputEvent(run_id, rank, now, Stream.RESULT, str(h["value"])))
        if h.get("failure"):
            events.append(ErrorEvent(run_id, RankFailure.from_json(h["failure"])))
        events.append(RankEvent(run_id, rank, now, state, info.host, info.pid))
        return events, ("done", rank, h, buffers)

    def _watch(self) -> None:
        exits = self.processes.exited()
        if not exits:
            return
        events: list[Event] = []
        for rank, code in exits:
            r = -1 if rank is None else rank
            info = self.info.get(r)
            failure = RankFailure(
                rank=r,
                t=time.time(),
                host=info.host if info else socket.gethostname(),
                pid=info.pid if info else None,
                kind="exit",
                exit_code=code if code >= 0 else None,
                signal=-code if code < 0 else None,
            )
            if info is not None:
                info.state = "exited" if code == 0 else "failed"
            if self._stopping.is_set() or self._lost == STOPPED_REMOTELY:
                continue
            self.mark_lost(failure.summary)
            if self.run_id:
                events.append(ErrorEvent(self.run_id, failure))
            self.inbox.put(("exit", failure))
        if events:
            self.store.append(events)
