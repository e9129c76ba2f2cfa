"""Waiting for a new cluster's ranks to be ready, and failing the start with its first cause.

Apart from :mod:`.process` because start-up is its own loop on the main thread: it reads the
inbox until every rank said hello, holds its clock while a scheduler queues the job, names
ranks slow in a stage (:mod:`.startwatch`) and turns the first failure (a setup error, a lost
channel, an exit) into one :class:`LaunchError`.
"""

from __future__ import annotations

import math
import queue
import time
from collections.abc import Callable, Sequence

from ..errors import LaunchError
from ..interface import RankInfo, RunView
from ..protocol.stacks import RankStacks
from .hangflight import ranks_text
from .inbox import ChannelLost, Exited, Item, Ready, SetupFailed, StageReached
from .liveness import Processes
from .startwatch import StartWatch, watch_start

#: the start-up line is drawn again at most this often (seconds): it names every rank's stage,
#: so drawing it for each of 10,000 ranks' messages made a start quadratic (81 s at 10,000)
PROGRESS_EVERY = 0.2
#: a rank that ended while starting is failed this long after its end was seen, unless its
#: own word on why (a setup error it sent just before it exited) comes first: the process's
#: end (its pidfd, on the I/O thread) can be seen before the message that it sent is read
LAST_WORDS = 0.5


def wait_ready(
    inbox: queue.SimpleQueue[Item],
    info: dict[int, RankInfo],
    processes: Processes,
    stacks: Callable[[Sequence[int]], dict[int, RankStacks]],
    view: RunView,
    timeout: float,
) -> None:
    """Return once every rank in ``info`` is ready; raise :class:`LaunchError` when one fails
    to start, or when not all are ready ``timeout`` seconds after the start (or the queue).
    Meanwhile the view shows one line with the stage each rank is at, gone at the end."""
    try:
        waiting = set(info)
        now = time.monotonic()
        deadline = now + timeout
        watch = StartWatch(info, now)
        queued = getattr(processes, "waiting", None)  # a scheduler's queue (slurm)
        shown = line = ""
        drawn, changed = -math.inf, True  # when the line was last drawn; changed since?
        ended: tuple[Exited, float] | None = None  # a rank's end, and when it fails the start
        while waiting or ended is not None:  # (a rank may end after it said hello)
            if ended is not None and time.monotonic() >= ended[1]:
                raise _exit_error(ended[0], processes)
            if changed and time.monotonic() - drawn >= PROGRESS_EVERY:
                drawn, changed, text = time.monotonic(), False, watch.progress()
                if text != line:
                    line = text
                    view.starting(line)
            try:
                item = inbox.get(timeout=0.05 if ended is None else LAST_WORDS / 10)
            except queue.Empty:
                if ended is not None:
                    continue
                reason = queued() if queued is not None else ""
                if reason:  # no start timeout (nor stage clock) while the job waits in the queue
                    deadline = time.monotonic() + timeout
                    watch, changed = StartWatch(info, time.monotonic()), True
                    if reason != shown:
                        shown = reason
                        view.queued(reason)
                    continue
                now = time.monotonic()
                if now > deadline:
                    raise LaunchError(
                        f"{ranks_text(sorted(waiting))} did not start within "
                        f"{timeout:.0f}s ({watch.describe(waiting, now)})"
                    ) from None
                watch_start(watch, now, list(info), stacks, view.notice)
                continue
            changed = True
            if isinstance(item, StageReached):
                watch.reached(item.rank, item.stage, time.monotonic(), item.detail)
            elif isinstance(item, Ready):
                waiting.discard(item.rank)
                watch.reached(item.rank, "ready", time.monotonic())
            elif isinstance(item, SetupFailed):
                raise LaunchError(f"rank {item.rank} could not start: {item.message}")
            elif isinstance(item, ChannelLost):
                if ended is not None:  # (the rank's end first: it may be why)
                    raise _exit_error(ended[0], processes)
                raise LaunchError(f"the cluster was lost while starting: {item.cause}")
            elif isinstance(item, Exited) and ended is None:
                ended = item, time.monotonic() + LAST_WORDS
    finally:
        view.starting("")


def _exit_error(item: Exited, processes: Processes) -> LaunchError:
    failure = item.failure
    tail = processes.log_tail(failure.rank if failure.rank >= 0 else None)
    return LaunchError(f"{failure.summary} before it was ready" + (f": {tail}" if tail else ""))
