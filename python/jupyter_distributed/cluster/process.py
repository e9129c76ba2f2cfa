"""A cluster of rank processes that talk to the kernel over a signed ZeroMQ channel.

Shared by the ``local`` and ``mpi`` backends, which differ only in how processes start (their
:class:`~.liveness.Processes`). The channel's I/O thread is the :class:`~.router.Router`; on it,
the cluster watches the processes and takes cancel/stop requests from the store
(:mod:`.processwatch`). If the thread fails (a full or locked history store, a ZeroMQ error),
the cluster is lost with that cause. Start-up is :mod:`.startup`'s loop.
"""

from __future__ import annotations

import json
import os
import queue
import secrets
import shutil
import socket
import tempfile
import threading
import time
from collections.abc import Sequence
from typing import Any

from ..events import Event, RunEvent, StacksEvent
from ..history.reaper import leftover_prefix
from ..history.store import Store
from ..interface import Cluster, Plan, RankInfo, RunOutcome, RunRequest, RunView, RunWriter
from ..protocol.commands import Shutdown
from ..protocol.header import Message
from ..protocol.signing import BOOTSTRAP_ENV, Buffer
from ..protocol.stacks import RankStacks
from .cellrun import RECORD_AFTER_RELAYED
from .fanin import RANGES
from .fdlimit import make_room
from .hang import snapshot_text
from .inbox import Item, Lost
from .liveness import StartProcesses, wait_leaving
from .pace import PACE_MS
from .processwatch import (
    PACE_REST_MS,
    PACE_SENTINELS_MS,
    WATCH_EVERY,
    WATCH_SENTINELS,
    ProcessWatch,
)
from .relays import place_relays
from .router import Router
from .stackboard import collect
from .startup import wait_ready
from .supervise import execute_run
from .transport import Transport


class ProcessCluster(ProcessWatch, Cluster):
    start_timeout = 120.0
    defers_record = True  # (the router writes the run's events through request.record)
    idle_poll = 0.25  # a cell waits this long for nothing at most: a loss wakes it (mark_lost)
    silence_limit: float | None = None  # see __init__

    def __init__(
        self,
        plan: Plan,
        store: Store,
        start: StartProcesses,
        view: RunView,
        bind_host: str = "127.0.0.1",
        connect_host: str | None = None,
        transport: Transport | None = None,
        silence_limit: float | None = None,
        relays: bool = False,
        aggregators: bool = False,
    ) -> None:
        """``transport`` says how ranks reach the kernel (:mod:`.transport`); without one, TCP
        with CurveZMQ on ``bind_host``, dialled at ``connect_host``. ``silence_limit``: seconds
        without any message (ranks send a heartbeat every second) after which a rank is dead,
        for launchers that cannot see their processes. ``relays``: the backend starts a node
        relay per node (:mod:`.relays`), listening in the kernel's directory where the ranks are
        on this machine (``ipc``), else in a directory of its own on its node. ``aggregators``:
        it starts a second level above them too where there are many nodes, or where
        ``Distributed.relays`` is "tree" (:mod:`.aggregators`)."""
        # (before anything starts: refused in one line, or room made)
        make_room(len(plan.ranks), plan.spec.layout.nodes if relays else 0)
        self.plan = plan
        if silence_limit is not None:
            self.silence_limit = silence_limit
        self.store = store
        self.view = view
        self.id = f"c-{secrets.token_hex(4)}"
        # faulthandler dumps; swept with the kernel's other cluster files if the kernel dies
        self.stacks_dir = tempfile.mkdtemp(prefix=leftover_prefix() + "stacks-")
        key = secrets.token_bytes(32)
        self.info: dict[int, RankInfo] = {
            r.rank: RankInfo(r.rank, r.host, None, "starting", r.coords) for r in plan.ranks
        }
        self._stopping = threading.Event()
        self._stopped = threading.Event()
        self._stop_lock = threading.Lock()
        self._lost = ""
        self._code = ""
        self._last_control = self._last_watch = 0.0
        self._watch_every = WATCH_EVERY
        self._sentinels_only, self._watch_until = False, 0.0
        self._unreachable: set[int] = set()  # ranks behind a dead relay
        self.router = Router(
            f"jd-{self.id}", store, self.info, key, self._tick, self.mark_lost,
            transport or Transport.tcp(bind_host, connect_host),
        )  # fmt: skip
        self.address = self.router.address
        self.inbox: queue.SimpleQueue[Item] = self.router.inbox
        self.router.start()
        boot: dict[str, Any] = {
            "address": self.address,
            "key": key.hex(),
            "curve": self.router.curve,
            "cells": self.router.cells_address,
            "cluster_id": self.id,
            "layout": plan.spec.layout.to_json(),
            "kernel_pid": os.getpid(),
            "kernel_host": socket.gethostname(),
            "stacks_dir": self.stacks_dir,
            "ranges": RANGES,  # a relay sends its ranks' plain ends as ranges (see .fanin)
        }
        # the relays (and their aggregators) the backend starts, where they listen
        self.relays, self.fanout = place_relays(
            boot, plan, self.router.listener.directory, relays, aggregators
        )
        self.aggregators = -(-self.relays // self.fanout) if self.fanout else 0
        try:
            self.processes = start({BOOTSTRAP_ENV: json.dumps(boot)})
            for fd in getattr(self.processes, "sentinels", list)():
                self.router.watch(fd, self._watch_now)
                self._watch_every = WATCH_SENTINELS
            every = getattr(self.processes, "every_sentinel", False)
            self._sentinels_only = every and self.silence_limit is None
            if self._watch_every == WATCH_SENTINELS:  # (deaths and cells wake the I/O thread)
                poll_ms = PACE_REST_MS if self.relays else PACE_MS  # (see PACE_REST_MS)
                self.router.pace(poll_ms, PACE_SENTINELS_MS, PACE_REST_MS)
            if self.relays:  # (their ends are held as long: one transaction per cell)
                self.router.record_after = RECORD_AFTER_RELAYED
            wait_ready(self.inbox, self.info, self.processes, self.stacks, view, self.start_timeout)
        except BaseException:
            self.stop()
            raise

    # -- the Supervised interface ----------------------------------------------------------

    @property
    def alive(self) -> bool:
        return not self._lost and not self._stopping.is_set()

    @property
    def lost(self) -> str:
        return self._lost

    @property
    def unrecorded(self) -> int:
        return self.router.unrecorded

    def ranks(self) -> list[RankInfo]:
        return [self.info[r] for r in sorted(self.info)]

    def peer_count(self) -> int | None:
        return self.router.peer_count()

    def execute(self, request: RunRequest, view: RunView) -> RunOutcome:
        self._code = request.code  # (the lines of a crash stack in the cell)
        return execute_run(self, request, view)

    def send(self, ranks: Sequence[int], message: Message, buffers: Sequence[Buffer] = ()) -> None:
        self.router.send(ranks, message, buffers)

    def begin(self, run_id: str, record: RunWriter | None = None) -> None:
        self.router.begin(run_id, record)

    def end(self) -> None:
        self.router.end()

    def mark_lost(self, why: str) -> None:
        if not self._lost:
            self._lost = why
            self.inbox.put(Lost(why))  # (a waiting cell sees it now: see idle_poll)

    def stacks(self, ranks: Sequence[int], code: str = "") -> dict[int, RankStacks]:
        return collect(
            self.router.board, self.send, self.info, ranks, self.stacks_dir, code,
            unreachable=self._unreachable,
        )  # fmt: skip

    def recorded_end(self, run_id: str) -> RunEvent | None:
        end = self.router.cell.completed
        return end if end is not None and end.run_id == run_id else None

    def record(self, event: Event) -> None:
        self.router.call(lambda: self.router.record([event], []))

    def snapshot(self, ranks: Sequence[int], reason: str, run_id: str = "") -> StacksEvent:
        """Take, diagnose and record the stacks of ``ranks`` (the panel's and the magic's)."""
        stacks = self.stacks(ranks)
        running = {r for r, i in self.info.items() if i.state == "running"}
        text = snapshot_text(stacks, running, ranks, list(self.info))
        event = StacksEvent(
            run_id or self.router.ranks.run_id, time.time(), reason, text,
            {r: s.to_json() for r, s in stacks.items()},
        )  # fmt: skip
        if event.run_id:
            self.record(event)
        return event

    def stop(self, grace: float = 1.0) -> None:
        with self._stop_lock:
            self._stop(grace)

    def _stop(self, grace: float) -> None:
        if self._stopped.is_set():
            return
        if hasattr(self, "processes"):
            idle = [r for r, i in self.info.items() if i.state == "idle"]
            busy = [r for r, i in self.info.items() if i.state in ("running", "starting")]
            self.send(idle, Shutdown())
            if not busy:  # (a busy rank is terminated at once, as is everyone with it)
                wait_leaving(self.processes, self.info, grace)
            self.processes.terminate(grace)
        self._stopping.set()
        self.router.close()
        shutil.rmtree(self.stacks_dir, ignore_errors=True)
        self._stopped.set()
        for info in self.info.values():
            if info.state not in ("failed", "exited"):
                info.state = "stopped"
