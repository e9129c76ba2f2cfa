"""What a :class:`~.process.ProcessCluster` does on its channel's I/O thread (the
:class:`~.router.Router`'s tick): it watches the processes (:mod:`.liveness` says which ranks
are dead, :mod:`.hopdeaths` which relays and aggregators) and takes cancel/stop/stacks requests
from the store.

Mixed into :class:`~.process.ProcessCluster`, which provides the attributes declared below.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..errors import RankFailure
from ..eventkinds import Stream
from ..events import ErrorEvent, OutputLines, Recorded, StacksEvent
from ..history.store import Store
from ..interface import RankInfo
from .deaths import explain, parent_gone
from .hopdeaths import dead_hops
from .inbox import CancelRequested, Exited, Item, Show
from .leftovers import leftovers
from .liveness import Processes, exit_failures, silent_ranks
from .router import Router
from .supervise import STOPPED_REMOTELY

log = logging.getLogger("jupyter_distributed")

CONTROL_POLL = 0.25  # seconds between looks at the store for cancel/stop from the server
# ... and while no cell runs (the panel's stop within ~0.5 s plus the stop, under the issue's
# 1 s): each look is a query (~0.08 ms of the I/O thread), 2 a second at rest, not 4 (issue 26)
CONTROL_REST = 0.5
WATCH_EVERY = 0.05  # seconds between looks at the processes (at once on a sentinel)
# ... where the processes have sentinels (a pidfd each wakes the look at once): a look polls
# every process (1,000 ranks: ~3 ms), so it is done twice a second, for what has no pidfd
WATCH_SENTINELS = 0.5
# ... and then, where a cell reaches its ranks through relays (a message to them wakes the
# I/O thread; a held reply or the run's record asks for its own tick), the I/O thread's tick
# (its look at the controls) every 250 ms, not 50: ~0.12 ms of the kernel's CPU each, 3 to 4
# per trivial cell at 1,000 ranks and 20 a second at rest (issue 26; behind relays now 500 ms,
# see PACE_REST_MS); without relays, while a cell's ranks are awaited (see Router.pace): a
# training loop's kernel ticks 4 times a second
PACE_SENTINELS_MS = 250
# ... and every 500 ms while no cell runs: what is due then (the controls' look, CONTROL_REST;
# the processes' look where it is periodic, WATCH_SENTINELS; the pings every 2 s) is due that
# often or less; a held reply or a death asks for its own tick, and a cell's send wakes the
# I/O thread (to relays, or over the local cell sockets: Outbox.wake_cells), so an idle local
# cluster's kernel wakes twice a second, not 20 times (issue 26).
# Behind relays the tick keeps this pace while a cell runs too, and the controls are looked at
# every CONTROL_REST: a cell's messages, its ends (held replies, the run's record) and the
# relays' and aggregators' deaths wake the I/O thread or ask for their own tick, so nothing
# due in a cell needs a tick more often than the controls' look; at 10,000 fake ranks a trivial
# cell (~0.3 s of wall, 80 relays on two cores) took 1-1.7 ticks and as many looks (~0.27-0.38
# ms of the kernel's CPU). The panel's cancel or stop of a running cell is then taken within
# 0.5 s, as at rest (the bound: 1 s with the stop itself) (issue 26)
PACE_REST_MS = 500
SLACK = 0.02  # (a look due within this is done now, not a whole tick later)
# Where every process has a sentinel (and no rank is declared dead by its silence), nothing
# is left for a periodic look to find: the processes are looked at when a sentinel fires, then
# every WATCH_SENTINELS seconds for this long (an end that a fork server reports late), and
# not at rest (issue 26: ~0.26 ms of the I/O thread each look at 10,000 fake ranks' 93)
AFTER_SENTINEL = 5.0


def on_schedule(last: float, now: float, every: float) -> float | None:
    """Whether a look done last at ``last`` (as scheduled) is due again at ``now``: the time
    to keep as its own, or None. Kept to its schedule, ``last + every``, not to when the tick
    came: ticks ``every`` apart, one a little late and the next on time, would otherwise find
    the look not yet due every other time, and look once per two intervals (the panel's stop
    taken within 1 s, not 0.5). A look more than an interval late starts the schedule anew."""
    due = last + every
    if now < due - SLACK:
        return None
    return due if now - due < every else now


class ProcessWatch:
    """The cluster's part on the I/O thread: its tick, the processes' watch and the controls."""

    if TYPE_CHECKING:  # provided by ProcessCluster
        id: str
        info: dict[int, RankInfo]
        store: Store
        router: Router
        inbox: queue.SimpleQueue[Item]
        processes: Processes
        relays: int
        fanout: int
        stacks_dir: str
        silence_limit: float | None
        _stopping: threading.Event
        _lost: str
        _code: str
        _last_control: float
        _last_watch: float
        _watch_every: float
        _sentinels_only: bool  # (every process has a sentinel: see AFTER_SENTINEL)
        _watch_until: float
        _unreachable: set[int]

        def mark_lost(self, why: str) -> None: ...

        def snapshot(self, ranks: Sequence[int], reason: str, run_id: str = "") -> StacksEvent: ...

        def stop(self, grace: float = 1.0) -> None: ...

    def _tick(self) -> None:
        now = time.monotonic()
        periodic = not self._sentinels_only or now < self._watch_until
        due = self._last_watch == 0.0 or (
            periodic and now - self._last_watch >= self._watch_every - SLACK
        )
        if due and hasattr(self, "processes"):
            self._last_watch = now
            self._watch()
        every = CONTROL_POLL if self.router.ranks.run_id and not self.relays else CONTROL_REST
        looked = on_schedule(self._last_control, now, every)
        if looked is not None:
            self._last_control = looked
            self._take_controls()

    def _watch_now(self) -> None:
        """A process ended: look at this round's tick, once however many ended at once."""
        self._last_watch = 0.0
        self._watch_until = time.monotonic() + AFTER_SENTINEL
        self.router.tick_now()

    def _take_controls(self) -> None:
        """Act on cancel/stop requests the server extension queued in the store."""
        for control in self.store.take_controls(self.id):
            if control.action == "cancel" and control.target == self.router.ranks.run_id:
                self.inbox.put(CancelRequested(control.target))
            elif control.action == "stop" and not self._lost:
                # stop() cannot run on this thread (it waits for this loop to end)
                threading.Thread(
                    target=self._stop_remotely, daemon=True, name=f"jd-stop-{self.id}"
                ).start()
            elif control.action == "stacks" and not self._lost:
                ranks = sorted(r for r in self.info if control.rank in (None, r))
                # answered off this thread (the answers arrive on it); recorded in the store
                threading.Thread(
                    target=self.snapshot, args=(ranks, "request", control.target),
                    daemon=True, name=f"jd-stacks-{self.id}",
                ).start()  # fmt: skip

    def _stop_remotely(self) -> None:
        """The panel's stop: the busy ranks' last stacks are recorded, then every rank stops (a
        running cell sees the cluster is no longer alive and records its run as stopped)."""
        busy = [r for r, i in self.info.items() if i.state == "running"]
        if busy and self.router.ranks.run_id:
            try:
                self.snapshot(busy, "killed")
            except Exception:  # the stop must happen whatever the stacks do
                log.exception("jupyter-distributed: no stacks before stopping %s", self.id)
        self.mark_lost(STOPPED_REMOTELY)
        self.stop()

    def _explain(self, failures: list[RankFailure]) -> list[RankFailure]:
        """The failures with the cause of each death (:mod:`.deaths`); where the fork server
        that started the processes ended, that (a backend's ``death_cause``)."""
        why = getattr(self.processes, "death_cause", str)() if failures else ""
        return [
            parent_gone(explain(f, self.info.get(f.rank), self.stacks_dir, self._code), why)
            for f in failures
        ]

    def _dead_nodes(self, now: float) -> list[RankFailure]:
        """The failures of the relays and aggregators that ended (:mod:`.hopdeaths`)."""
        dead = dead_hops(self.processes, self.info, self.relays, self.fanout, now)
        for _, ranks in dead:
            self._cut_off(ranks)
        return [failure for failure, _ in dead]

    def _cut_off(self, ranks: list[int]) -> None:
        for rank in ranks:
            self._unreachable.add(rank)
            if self.info[rank].state not in ("exited", "failed"):
                self.info[rank].state = "failed"

    def _last_words(
        self, failures: list[RankFailure], now: float
    ) -> tuple[list[Recorded], list[Item]]:
        """What the dead ranks said last and had not been taken: their messages that wait
        for a control message lost with them (:meth:`.Intake.orphans`), then the output they
        wrote and never sent (:mod:`.leftovers`), as their last lines (shown with the cause)
        and, in a cell, as the cell's output."""
        dead = sorted({f.rank for f in failures if f.kind == "exit" and f.rank in self.info})
        if dead:  # (what they sent before they ended first: it may be here, not yet read)
            self.router.read_now()
        taken = self.router.intake.orphans(dead)
        events, items = taken.events, taken.items
        run_id = self.router.ranks.run_id
        for rank, streams in leftovers(self.stacks_dir, failures, self.info).items():
            for stream, lines in streams:
                self.info[rank].lines.extend(lines)
                if run_id:
                    events.append(
                        OutputLines(run_id, rank, Stream(stream), [(now, t) for t in lines])
                    )
        if events:
            items.append(Show(tuple(events)))
        return events, items

    def _watch(self) -> None:
        events: list[Recorded] = []
        items: list[Item] = []
        lost = ""
        now = time.time()
        failures = silent_ranks(self.info, self.silence_limit, now, self.router.intake.spans)
        failures += exit_failures(self.info, self.processes.exited(), now)
        failures += self._dead_nodes(now)
        if failures and not (self._stopping.is_set() or self._lost == STOPPED_REMOTELY):
            events, items = self._last_words(failures, now)
        for failure in self._explain(failures):
            if self._stopping.is_set() or self._lost == STOPPED_REMOTELY:
                continue
            lost = lost or failure.summary
            if self.router.ranks.run_id:
                events.append(ErrorEvent(self.router.ranks.run_id, failure))
            items.append(Exited(failure))
        # the exit is in the inbox before the cluster reads as lost: a cell that sees the
        # cluster lost always finds the failure that lost it. Nothing to record: what the
        # cell's replies hold back stays held (one transaction per cell, see .cellrun)
        try:
            if events or items:
                self.router.record(events, items)
        finally:
            if lost:
                self.mark_lost(lost)
