"""Run one cell on a cluster of ranks and supervise it from the kernel's main thread.

Shows events as they come, collects results and pulled values, enforces ``--timeout``, and
turns the notebook's stop button into an interrupt of every rank, escalating to terminate and
kill when a rank does not yield within a short grace. A cluster lost while ranks were still
working (a rank died, or the kernel's I/O thread failed, e.g. on a full history store) ends the
run ``failed`` with that cause: never ``completed``.

It needs only the narrow :class:`~.tracker.Supervised` interface, never a concrete cluster;
the run's bookkeeping, item by item, is :class:`~.tracker.RunTracker`'s.
"""

from __future__ import annotations

import logging
import socket
import time
from typing import Any

from ..errors import SpecError
from ..events import RunState
from ..interface import RunOutcome, RunRequest, RunView
from ..protocol.bundles import DEFAULT_MAX_BYTES
from ..protocol.commands import Execute
from ..protocol.frames import MAX_HEADER, too_large
from ..protocol.shared import SHARED_MIN_BYTES, remove_shared, write_shared
from .tracker import CANCELLED, Cancelled, RunTracker, Supervised

log = logging.getLogger("jupyter_distributed")
STOPPED_REMOTELY = "a stop request from the Distributed panel"


def _send_execute(cluster: Supervised, request: RunRequest) -> dict[str, Any] | None:
    """Send the cell (and pushed values) to its ranks; returns the shared-memory file that
    carries a large push to ranks on this host, which the caller removes after the run. A push
    over the cap on a message is refused before anything is sent, however it would travel."""
    buffers: list[Any] = []
    shared = None
    if request.push is not None:
        buffers = request.push.frames
        size = sum(memoryview(b).nbytes for b in buffers) + len(request.code.encode())
        if size > request.max_message:
            raise SpecError("--push: " + too_large("the cell", size, request.max_message))
        here = socket.gethostname()
        if request.push.buffer_bytes >= SHARED_MIN_BYTES and all(
            cluster.info[r].host == here for r in request.ranks
        ):
            try:
                shared = write_shared(request.push.buffers)
            except OSError as exc:  # e.g. /dev/shm is full: send the bytes instead
                log.warning("jupyter-distributed: push through ZeroMQ, not shared memory: %s", exc)
            else:
                buffers = [request.push.data]
    cluster.begin(request.run_id, request.record)
    execute = Execute(
        request.run_id, request.code, tuple(request.pull), shared,
        _display_max(request), request.figures, request.max_message, request.stdin,
        request.break_rank, request.debug,
    )  # fmt: skip
    cluster.send(request.ranks, execute, buffers)
    return shared


def _display_max(request: RunRequest) -> int | None:
    """The cap on one display bundle, within the cap on a message."""
    room = request.max_message - MAX_HEADER
    return min(request.display_max or DEFAULT_MAX_BYTES, room)


def execute_run(cluster: Supervised, request: RunRequest, view: RunView) -> RunOutcome:
    shared = _send_execute(cluster, request)
    try:
        return _supervise(cluster, request, view)
    finally:
        if shared is not None:
            remove_shared(shared)


def _supervise(cluster: Supervised, request: RunRequest, view: RunView) -> RunOutcome:
    run = RunTracker(cluster, request, view)
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
    # ranks still working when the cluster was lost never said they were done: a failed run
    lost = bool(run.pending) and not cluster.alive and not stopped
    if not cluster.alive:
        if run.pending and not stopped:  # their last stacks, before they are stopped with it
            run.diagnose(sorted(run.pending), "killed")
        run.pending.clear()  # the cluster was lost: the others are stopped with it
        cluster.stop()
    cluster.end()
    outcome = run.outcome
    outcome.unrecorded = cluster.unrecorded
    if stopped:
        outcome.state, outcome.message, outcome.failures = RunState.STOPPED, STOPPED_REMOTELY, []
    elif interrupted:
        outcome.state = RunState.INTERRUPTED
    elif outcome.failures or lost or outcome.unrecorded:
        outcome.state = RunState.FAILED
        if not outcome.failures:  # no rank failed: the cluster's own cause is the root
            outcome.message = cluster.lost or "the cluster was lost while ranks were running"
    else:
        outcome.state = RunState.COMPLETED
        outcome.recorded_end = cluster.recorded_end(request.run_id)
    timed_out = {f.rank for f in outcome.failures if f.kind == "timeout"}
    outcome.failures = [
        f
        for f in outcome.failures
        if not (f.kind == "interrupted" and (interrupted or f.rank in timed_out))
    ]
    return outcome
