"""One running cell's bookkeeping on the kernel's main thread, item by item from the inbox.

Which ranks are still pending, their failures, values and pulled values; a hint (with stacks)
when ranks keep running after another failed; and stopping the pending ranks, interrupt first,
then the whole cluster when they do not yield. :mod:`.supervise` drives it and decides the
run's final state. It needs only the narrow :class:`Supervised` interface, never a concrete
cluster.
"""

from __future__ import annotations

import logging
import pickle
import queue
import time
from collections.abc import Iterable, Sequence
from itertools import chain
from typing import Protocol

from ..errors import RankFailure
from ..events import ErrorEvent, Event, RunEvent, RunState, StacksEvent, each
from ..interface import RankInfo, RunOutcome, RunRequest, RunView, RunWriter
from ..protocol.commands import Interrupt
from ..protocol.header import Message
from ..protocol.signing import Buffer
from ..protocol.stacks import RankStacks
from .hang import diagnose, last_seen
from .hangflight import ranks_text
from .inbox import (
    CancelRequested,
    Cleared,
    Ended,
    Exited,
    Finished,
    Item,
    LeftDebugger,
    LiveLine,
    Prompted,
    Show,
)
from .prompts import Prompts
from .rankset import RankSet

log = logging.getLogger("jupyter_distributed")

POLL = 0.005  # seconds the main thread waits for an item before flushing what the view holds
# ... while the view holds nothing to flush: how late a lost cluster or --timeout is seen at
# most (a cell on 1,000 ranks is not woken 20-40 times for nothing, issue 26)
IDLE_POLL = 0.05
STRAGGLER_HINT = 5.0  # seconds after a failure before hinting that others may be blocked
# seconds after the stop button's interrupt before the ranks that did not yield are diagnosed
# (shown at once; the grace that decides whether they are killed runs on)
EARLY_STACKS = 0.3


CANCELLED = "cancelled from the Distributed panel"


class Cancelled(Exception):
    """The server extension asked to cancel the running cell (handled like the stop button)."""


class Supervised(Protocol):
    """What supervising a run needs from a cluster."""

    info: dict[int, RankInfo]
    inbox: queue.SimpleQueue[Item]

    @property
    def alive(self) -> bool: ...

    @property
    def lost(self) -> str: ...

    @property
    def unrecorded(self) -> int:
        """Events of the current run that could not be written to the history store."""

    def send(
        self, ranks: Sequence[int], message: Message, buffers: Sequence[Buffer] = ()
    ) -> None: ...

    def begin(self, run_id: str, record: RunWriter | None = None) -> None:
        """The run starts; its events are written through ``record`` when one is given."""

    def end(self) -> None:
        """The run is over: output that arrives now belongs to no run."""

    def mark_lost(self, why: str) -> None: ...

    def stop(self) -> None: ...

    def stacks(self, ranks: Sequence[int], code: str = "") -> dict[int, RankStacks]:
        """Every thread of each of ``ranks`` (within about a second, even in native code)."""

    def record(self, event: Event) -> None:
        """Write ``event`` to the history, in order with the ranks' own events."""

    def recorded_end(self, run_id: str) -> RunEvent | None:
        """The ``completed`` end of ``run_id`` if it was recorded with the ranks' replies."""


class RunTracker:
    """The state of one run on its cluster while the main thread waits for it."""

    def __init__(self, cluster: Supervised, request: RunRequest, view: RunView) -> None:
        self.cluster, self.request, self.view = cluster, request, view
        self.pending = RankSet.of(request.ranks)  # (runs of ranks: see .rankset)
        self.outcome = RunOutcome(RunState.RUNNING)
        self.first_failure: float | None = None
        self.hinted = False
        self.finished: list[Iterable[int]] = []  # the ranks that ended, a range or one each
        self.shown = ""  # the diagnosis last shown under the cell (not repeated as such)
        self.prompts = Prompts(cluster, request.run_id)  # input() and pdb on the ranks
        # a cluster whose loss wakes its inbox is waited on longer (a cell at 1,000 ranks
        # behind relays woke 4-6 times for nothing, ~0.07 ms each, issue 26)
        self._idle_poll: float = getattr(cluster, "idle_poll", IDLE_POLL)

    def take(self, item: Item) -> None:
        if isinstance(item, Show):
            run_id = self.request.run_id
            events = [e for e in item.events if e.run_id == run_id]
            on_events = getattr(self.view, "on_events", None)  # a batch at once, where it can
            if on_events is not None:
                on_events(events)
            else:
                for event in each(events):
                    self.view.on_event(event)
            for shown in events:
                if isinstance(shown, ErrorEvent):
                    self._failed(shown.failure)
        elif isinstance(item, LiveLine):
            if item.run_id == self.request.run_id:
                self.view.live(item.rank, item.stream, item.text)
        elif isinstance(item, Cleared):
            clear = getattr(self.view, "clear", None)  # (views that show displays)
            if item.run_id == self.request.run_id and clear is not None:
                clear(item.rank, item.wait)
        elif isinstance(item, Prompted | LeftDebugger):
            # what the ranks wrote before they asked shows first, held lines too
            self.prompts.take(item, getattr(self.view, "release", self.view.flush))
        elif isinstance(item, Finished):
            self._finished(item)
        elif isinstance(item, Ended):
            if item.run_id == self.request.run_id:  # (no value, nothing pulled)
                self.pending.difference_update(item.ranks)
                self.finished.append(item.ranks)
                if self.prompts.serving is not None and self.prompts.serving in item.ranks:
                    self.prompts.left(self.prompts.serving, self.view.flush)
        elif isinstance(item, CancelRequested):
            if item.run_id == self.request.run_id:
                raise Cancelled(CANCELLED)
        elif isinstance(item, Exited):
            self.view.on_event(ErrorEvent(self.request.run_id, item.failure))
            self._failed(item.failure)
            self.pending.discard(item.failure.rank)
            self.prompts.left(item.failure.rank, self.view.flush)

    def _finished(self, item: Finished) -> None:
        done, rank = item.done, item.rank
        if done.run_id != self.request.run_id:
            return
        self.pending.discard(rank)
        self.finished.append((rank,))
        self.prompts.left(rank, self.view.flush)
        if done.value is not None:
            self.outcome.values[rank] = done.value
        errors = dict(done.pull_errors)
        if item.buffers:
            try:
                self.outcome.pulled[rank] = pickle.loads(  # noqa: S301 (signed by our rank)
                    item.buffers[0], buffers=item.buffers[1:]
                )
            except Exception as exc:  # noqa: BLE001 (any unpickling error is reported)
                errors["*"] = f"cannot load pulled values here: {type(exc).__name__}: {exc}"
        if errors:
            self.outcome.pull_errors[rank] = errors

    def _failed(self, failure: RankFailure) -> None:
        self.outcome.failures.append(failure)
        if self.first_failure is None:
            self.first_failure = time.monotonic()

    def wait(self, until: float | None) -> bool:
        """Process items until every rank is done (True) or ``until`` passes (False); time
        spent at the ranks' prompts moves ``until`` on (--timeout counts none of it)."""
        paused = self.prompts.paused
        while self.pending and self.cluster.alive:
            if until is not None and time.monotonic() >= until + self.prompts.paused - paused:
                return False
            poll = POLL if getattr(self.view, "holding", True) else self._idle_poll
            if until is not None:
                poll = max(0.0, min(poll, until + self.prompts.paused - paused - time.monotonic()))
            try:
                self.take(self.cluster.inbox.get(timeout=poll))
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
                f"{ranks_text(sorted(self.pending))} are still running after a failure; they may "
                "be waiting for a failed rank in a collective. Press stop to interrupt them."
            )
            self.diagnose(sorted(self.pending), "straggler")

    def diagnose(self, ranks: list[int], reason: str, show: bool = True) -> dict[int, RankStacks]:
        """Take the stacks of ``ranks``, record them with the diagnosis and show it."""
        try:
            stacks = self.cluster.stacks(ranks, self.request.code)
        except Exception:  # a diagnosis must never hide the run's own outcome
            log.exception("jupyter-distributed: could not take the stacks of %s", ranks)
            return {}
        finished = sorted(set(chain.from_iterable(self.finished)) - set(ranks))
        diagnosis = diagnose(stacks, self.request.ranks, finished)
        event = StacksEvent(
            self.request.run_id, time.time(), reason, diagnosis.text,
            {r: s.to_json() for r, s in stacks.items()},
        )  # fmt: skip
        try:
            self.cluster.record(event)
        except Exception:  # shown all the same; the store's failure is logged
            log.exception("jupyter-distributed: could not record the stacks of %s", ranks)
        if show and diagnosis.text != self.shown:
            self.shown = diagnosis.text
            self.view.on_event(event)
        return stacks

    def stop_pending(self, kind: str, why: str) -> None:
        """Interrupt the pending ranks; kill the cluster if they do not yield in time."""
        ranks = sorted(self.pending)
        now = time.time()
        self.prompts.stop()
        if kind == "timeout":
            stacks = self.diagnose(ranks, "timeout")
            for rank in ranks:
                info = self.cluster.info[rank]
                s = stacks.get(rank)
                w = s.where if s is not None else None
                evalue = f"{why}; it {w.describe()}" if w is not None else why
                tb = tuple(f"{line}\n" for line in s.format()) if s and s.threads else ()
                self._failed(
                    RankFailure(
                        rank, now, info.host, info.pid, "TimeoutError", evalue, tb, kind="timeout"
                    )
                )
        self.cluster.send(ranks, Interrupt(self.request.run_id))
        grace = time.monotonic() + self.request.interrupt_grace
        try:  # a second stop while waiting (or diagnosing) ends the grace: kill
            done = self.wait(min(grace, time.monotonic() + EARLY_STACKS))
            if not done and self.pending and kind != "timeout":  # a timeout just diagnosed
                self.diagnose(sorted(self.pending), "interrupt")  # on screen within ~1 s
            done = self.wait(grace)
        except (KeyboardInterrupt, Cancelled):
            done = False
        if not done and self.pending:
            stuck = sorted(self.pending)
            # their last stacks, before they are killed (shown in full unless a timeout just did,
            # or the interrupt's diagnosis said the same)
            seen = last_seen(stuck, self.diagnose(stuck, "killed", show=kind != "timeout"))
            self.view.notice(
                f"{ranks_text(stuck)} did not stop within {self.request.interrupt_grace:g}s; "
                "terminating the cluster (its variables are lost)"
                + (f"; last seen: {seen}" if seen else "")
            )
            self.cluster.mark_lost(f"{ranks_text(stuck)} were killed after not yielding")
            self.cluster.stop()
            self.pending.clear()
