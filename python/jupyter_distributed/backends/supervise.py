"""Run one cell on a :class:`ProcessCluster` and supervise it from the kernel's main thread.

Shows events as they come, collects results and pulled values, enforces ``--timeout``, and
turns the notebook's stop button into an interrupt of every rank, escalating to terminate and
kill when a rank does not yield within a short grace.
"""

from __future__ import annotations

import logging
import pickle
import queue
import socket
import time
from typing import TYPE_CHECKING, Any

import cloudpickle

from ..errors import RankFailure
from ..events import ErrorEvent, RunState
from ..worker.shared import SHARED_MIN_BYTES, remove_shared, write_shared
from .base import RunOutcome, RunRequest, RunView

if TYPE_CHECKING:
    from .process import ProcessCluster

log = logging.getLogger("jupyter_distributed")
STOPPED_REMOTELY = "a stop request from the Distributed panel"

INTERRUPT_GRACE = 2.0  # seconds a rank gets to yield to KeyboardInterrupt
STRAGGLER_HINT = 5.0  # seconds after a failure before hinting that others may be blocked


CANCELLED = "cancelled from the Distributed panel"


class Cancelled(Exception):
    """The server extension asked to cancel the running cell (handled like the stop button)."""


class _Run:
    def __init__(self, cluster: ProcessCluster, request: RunRequest, view: RunView) -> None:
        self.cluster, self.request, self.view = cluster, request, view
        self.pending = set(request.ranks)
        self.outcome = RunOutcome(RunState.RUNNING)
        self.first_failure: float | None = None
        self.hinted = False

    def take(self, item: tuple[Any, ...]) -> None:
        kind = item[0]
        if kind == "event":
            event = item[1]
            if getattr(event, "run_id", None) != self.request.run_id:
                return
            self.view.on_event(event)
            if isinstance(event, ErrorEvent):
                self._failed(event.failure)
        elif kind == "done":
            _, rank, header, buffers = item
            if header.get("run_id") != self.request.run_id:
                return
            self.pending.discard(rank)
            if header.get("value") is not None:
                self.outcome.values[rank] = str(header["value"])
            errors = dict(header.get("pull_errors") or {})
            if buffers:
                try:
                    self.outcome.pulled[rank] = pickle.loads(  # noqa: S301 (signed by our rank)
                        buffers[0], buffers=buffers[1:]
                    )
                except Exception as exc:  # noqa: BLE001 (any unpickling error is reported)
                    errors["*"] = f"cannot load pulled values here: {type(exc).__name__}: {exc}"
            if errors:
                self.outcome.pull_errors[rank] = errors
        elif kind == "control":
            if item[1] == "cancel" and item[2] == self.request.run_id:
                raise Cancelled(CANCELLED)
        elif kind == "exit":
            failure: RankFailure = item[1]
            self.view.on_event(ErrorEvent(self.request.run_id, failure))
            self._failed(failure)
            self.pending.discard(failure.rank)

    def _failed(self, failure: RankFailure) -> None:
        self.outcome.failures.append(failure)
        if self.first_failure is None:
            self.first_failure = time.monotonic()

    def wait(self, until: float | None) -> bool:
        """Process items until every rank is done (True) or ``until`` passes (False)."""
        while self.pending and self.cluster.alive:
            if until is not None and time.monotonic() >= until:
                return False
            try:
                self.take(self.cluster.inbox.get(timeout=0.02))
            except queue.Empty:
                self.view.flush()
                self._maybe_hint()
        self._drain()
        return not self.pending

    def _drain(self) -> None:
        while True:
            try:
                self.take(self.cluster.inbox.get_nowait())
            except queue.Empty:
                return

    def _maybe_hint(self) -> None:
        if self.hinted or self.first_failure is None:
            return
        if time.monotonic() - self.first_failure > STRAGGLER_HINT:
            self.hinted = True
            self.view.notice(
                f"rank(s) {sorted(self.pending)} are still running after a failure; they may be "
                "waiting for a failed rank in a collective. Press stop to interrupt them."
            )

    def stop_pending(self, kind: str, why: str) -> None:
        """Interrupt the pending ranks; kill the cluster if they do not yield in time."""
        ranks = sorted(self.pending)
        now = time.time()
        if kind == "timeout":
            for rank in ranks:
                info = self.cluster.info[rank]
                self._failed(
                    RankFailure(rank, now, info.host, info.pid, "TimeoutError", why, kind="timeout")
                )
        self.cluster.send(ranks, "interrupt", {"run_id": self.request.run_id})
        try:
            done = self.wait(time.monotonic() + INTERRUPT_GRACE)
        except (KeyboardInterrupt, Cancelled):
            done = False
        if not done and self.pending:
            stuck = sorted(self.pending)
            self.view.notice(
                f"rank(s) {stuck} did not stop within {INTERRUPT_GRACE:.0f}s; "
                "terminating the cluster (its variables are lost)"
            )
            self.cluster.mark_lost(f"rank(s) {stuck} were killed after not yielding")
            self.cluster.stop()
            self.pending.clear()


def _send_execute(cluster: ProcessCluster, request: RunRequest) -> dict[str, Any] | None:
    """Send the cell (and pushed values) to its ranks; returns the shared-memory file that
    carries a large push to ranks on this host, which the caller removes after the run."""
    fields: dict[str, Any] = {
        "run_id": request.run_id,
        "code": request.code,
        "pull": list(request.pull),
    }
    buffers: list[Any] = []
    shared = None
    if request.push:
        pickled: list[pickle.PickleBuffer] = []
        data = cloudpickle.dumps(request.push, protocol=5, buffer_callback=pickled.append)
        raw = [b.raw() for b in pickled]
        buffers = [data, *raw]
        here = socket.gethostname()
        if sum(b.nbytes for b in raw) >= SHARED_MIN_BYTES and all(
            cluster.info[r].host == here for r in request.ranks
        ):
            try:
                shared = write_shared(raw)
            except OSError as exc:  # e.g. /dev/shm is full: send the bytes instead
                log.warning("jupyter-distributed: push through ZeroMQ, not shared memory: %s", exc)
            else:
                fields["shared"] = shared
                buffers = [data]
    cluster.begin(request.run_id)
    cluster.send(request.ranks, "execute", fields, buffers)
    return shared


def execute_run(cluster: ProcessCluster, request: RunRequest, view: RunView) -> RunOutcome:
    shared = _send_execute(cluster, request)
    try:
        return _supervise(cluster, request, view)
    finally:
        if shared is not None:
            remove_shared(shared)


def _supervise(cluster: ProcessCluster, request: RunRequest, view: RunView) -> RunOutcome:
    run = _Run(cluster, request, view)
    deadline = time.monotonic() + request.timeout if request.timeout else None
    interrupted = False
    try:
        if not run.wait(deadline) and run.pending and cluster.alive:
            run.stop_pending("timeout", f"the cell exceeded --timeout {request.timeout:g}s")
    except KeyboardInterrupt:
        interrupted = True
        run.stop_pending("interrupted", "interrupted")
    except Cancelled:
        interrupted = True
        run.outcome.message = CANCELLED
        view.notice(f"the run was {CANCELLED}")
        run.stop_pending("interrupted", "interrupted")
    stopped = bool(run.pending) and cluster.lost == STOPPED_REMOTELY
    if not cluster.alive:
        run.pending.clear()  # the cluster was lost: the others are stopped with it
        cluster.stop()
    cluster.run_id = ""
    outcome = run.outcome
    if stopped:
        outcome.state, outcome.message, outcome.failures = RunState.STOPPED, STOPPED_REMOTELY, []
    elif interrupted:
        outcome.state = RunState.INTERRUPTED
    elif outcome.failures:
        outcome.state = RunState.FAILED
    else:
        outcome.state = RunState.COMPLETED
    timed_out = {f.rank for f in outcome.failures if f.kind == "timeout"}
    outcome.failures = [
        f
        for f in outcome.failures
        if not (f.kind == "interrupted" and (interrupted or f.rank in timed_out))
    ]
    return outcome
