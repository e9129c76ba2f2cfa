"""One run's life in the history, from before its ranks start to its truthful end.

A :class:`RunRecorder` is used by the session (every cell), by ``%distributed attach`` and by
the server's follower (SageMaker runs whose kernel is gone):

- ``start`` records the run *before* anything is launched, so a launch that fails (a rank
  that never says hello, ``mpirun`` missing, a bad host) is still in the history, as a failed
  run with its cause (``abort``);
- while the run runs it is the backend's :class:`RunView`: events pass through it to the cell
  and to its observers (e.g. :class:`~.global_batch.GlobalBatch`), never read back from the
  store;
- ``finish`` records the state the outcome carries (never upgraded), sets the pulled values
  and raises for the outcome: :class:`RunFailed`, or a KeyboardInterrupt when interrupted.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Callable, MutableMapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from .errors import DistributedError, RunFailed, StoreError, interrupted
from .events import Event, Recorded, RunEvent, RunState, each
from .history.records import new_run_id as new_run_id
from .history.store import RunRecord, Store
from .interface import Cluster, RunOutcome

if TYPE_CHECKING:
    from .backends.hooks import RecordRun

log = logging.getLogger("jupyter_distributed")


class CellViewLike(Protocol):
    """Where a run is shown: a RunView that can also close its display at the end."""

    def on_event(self, event: Event) -> None: ...

    def notice(self, text: str) -> None: ...

    def flush(self) -> None: ...

    def finish(self, unrecorded: int = 0) -> None: ...


class NamedView(CellViewLike, Protocol):
    """A cell's view that also shows the id of its run."""

    run_id: str


class Observer(Protocol):
    """Watches a run's events as they pass; may record something and warn at its end. A
    message's output lines pass as one :class:`~.events.OutputLines`."""

    def on_event(self, event: Recorded) -> None: ...

    def finish(self, store: Store, run_id: str) -> str | None: ...


def cluster_coords(cluster: Cluster) -> dict[int, dict[str, Any]]:
    """Where each rank of a cluster is, as the store keeps it."""
    return {r.rank: {**r.coords.to_json(), "host": r.host, "pid": r.pid} for r in cluster.ranks()}


class DeferredRecord:
    """A run's record not written yet (a :class:`~.interface.RunWriter`): whichever
    thread writes the run's first events writes it in the same transaction, once."""

    def __init__(
        self, store: Store, record: RunRecord, coords: dict[int, dict[str, Any]] | None
    ) -> None:
        self.store = store
        self._run: tuple[RunRecord, dict[int, dict[str, Any]] | None] | None = (record, coords)
        self._lock = threading.Lock()  # (held while writing: nothing of the run goes before)

    def append(self, events: Sequence[Recorded]) -> None:
        with self._lock:
            if self._run is None:
                self.store.append(events)
            else:
                self.store.append(events, run=self._run)
                self._run = None  # (only once written: a failed write is tried again)


class RunRecorder:
    def __init__(
        self, store: Store, run_id: str, view: CellViewLike, observers: Sequence[Observer] = ()
    ) -> None:
        self.store, self.run_id, self.view = store, run_id, view
        self.observers = tuple(observers)
        self.deferred: DeferredRecord | None = None

    @classmethod
    def start(
        cls,
        store: Store,
        record: RunRecord,
        view: CellViewLike,
        coords: dict[int, dict[str, Any]] | None = None,
        observers: Sequence[Observer] = (),
        deferred: bool = False,
    ) -> RunRecorder:
        """Record a new run (``pending`` while its cluster starts, else ``running``). With
        ``deferred`` (a cell on a live cluster) the record is written with the run's first
        events (see :attr:`deferred`, which the cluster writes them through), at the latest
        with its end: a short cell costs one or two store transactions, not three."""
        recorder = cls(store, record.id, view, observers)
        if deferred:
            recorder.deferred = DeferredRecord(store, record, coords)
        else:
            store.create_run(record, coords)
        return recorder

    def _append(self, events: Sequence[Event]) -> None:
        (self.deferred or self.store).append(events)

    def launched(self, cluster: Cluster) -> None:
        """The run's cluster started: record where its ranks are; the run is running."""
        if self.deferred is not None:
            self.deferred.append([])
        self.store.set_cluster(self.run_id, cluster.id, cluster_coords(cluster))
        self.store.append([RunEvent(self.run_id, time.time(), RunState.RUNNING)])

    def queued(self, reason: str) -> None:
        """The run's ranks wait in a scheduler's queue (``reason`` from it); no time limit."""
        self._append([RunEvent(self.run_id, time.time(), RunState.QUEUED, reason)])
        self.view.notice(
            f"queued: {reason}; the ranks start when the scheduler allocates the nodes"
        )

    # -- the backend's RunView -----------------------------------------------------------

    def on_event(self, event: Event) -> None:
        for observer in self.observers:
            observer.on_event(event)
        self.view.on_event(event)

    def live(self, rank: int, stream: str, text: str) -> None:
        """A line redrawn in place, for views that show one (a :class:`~.display.CellView`)."""
        live = getattr(self.view, "live", None)
        if live is not None:
            live(rank, stream, text)

    def starting(self, text: str) -> None:
        """The cluster's start-up line, for views that show one (a CellView)."""
        starting = getattr(self.view, "starting", None)
        if starting is not None:
            starting(text)

    def clear(self, rank: int, wait: bool) -> None:
        """A rank's ``clear_output(wait)``, for views that show displays (a CellView)."""
        clear = getattr(self.view, "clear", None)
        if clear is not None:
            clear(rank, wait)

    def on_events(self, events: Sequence[Recorded]) -> None:
        """:meth:`on_event` for a batch (the view takes it in one call where it can)."""
        for observer in self.observers:
            for event in events:
                observer.on_event(event)
        on_events = getattr(self.view, "on_events", None)
        if on_events is not None:
            on_events(events)
        else:
            for event in each(events):
                self.view.on_event(event)

    def notice(self, text: str) -> None:
        self.view.notice(text)

    def flush(self) -> None:
        self.view.flush()

    @property
    def holding(self) -> bool:
        """Whether the view holds lines to flush (a view that does not say: it may)."""
        return bool(getattr(self.view, "holding", True))

    def release(self) -> None:
        """Show every line now, lines held for collapsing too (before a prompt)."""
        release = getattr(self.view, "release", None)  # (views that hold lines)
        (release or self.view.flush)()

    # -- the end -------------------------------------------------------------------------

    def abort(self, exc: BaseException, doing: str) -> None:
        """The run ended by ``exc`` while ``doing`` (e.g. "starting the cluster"): record it
        as interrupted (Ctrl-C) or failed, with the cause. The caller re-raises ``exc``."""
        if isinstance(exc, KeyboardInterrupt):
            state, message = RunState.INTERRUPTED, f"interrupted while {doing}"
        elif isinstance(exc, DistributedError):
            state, message = RunState.FAILED, str(exc)
        else:
            state = RunState.FAILED
            message = f"the kernel failed while {doing}: {type(exc).__name__}: {exc}"
        end = RunEvent(self.run_id, time.time(), state, message)
        try:
            self._append([end])
        except Exception:  # the original error is what the user must see; log this one
            log.exception("jupyter-distributed: could not record the end of run %s", self.run_id)
        self.view.on_event(end)  # the inline widget shows how the run ended
        self.view.finish()

    def finish(
        self,
        outcome: RunOutcome,
        pull: Sequence[str] = (),
        ranks: Sequence[int] = (),
        user_ns: MutableMapping[str, Any] | None = None,
        after_interrupt: str = "",
        raise_outcome: bool = True,
    ) -> RunOutcome:
        """Record the outcome's state and message, set the pulled names in ``user_ns``, and
        (with ``raise_outcome``) raise :class:`RunFailed` or a KeyboardInterrupt for it."""
        state = outcome.state
        if state is RunState.COMPLETED and outcome.failures:
            state = RunState.FAILED  # a rank failed: never recorded as completed
        headline = RunFailed(list(outcome.failures)).headline if outcome.failures else ""
        message = outcome.message or headline
        unrecordable = ""
        end = outcome.recorded_end
        if end is None or state is not RunState.COMPLETED or message:
            end = RunEvent(self.run_id, time.time(), state, message)
            try:
                self._append([end])
            except (sqlite3.Error, StoreError) as exc:  # the store failed: say so
                unrecordable = f"the end of the run could not be recorded ({exc})"
        self.view.on_event(end)  # the inline widget shows how the run ended
        for observer in self.observers:
            warning = observer.finish(self.store, self.run_id)
            if warning:
                self.view.notice(warning)
        if user_ns is not None:
            self._set_pulled(pull, ranks, outcome, user_ns)
        self.view.finish(unrecorded=outcome.unrecorded)
        if not raise_outcome:
            return outcome
        if state in (RunState.INTERRUPTED, RunState.STOPPED):
            text = "the cell was interrupted on every rank"
            raise interrupted(f"{text}; {after_interrupt}" if after_interrupt else text)
        if state is RunState.FAILED or unrecordable:
            cause = "; ".join(filter(None, [outcome.message, unrecordable]))
            raise RunFailed(list(outcome.failures), self.run_id, cause)
        return outcome

    def _set_pulled(
        self,
        pull: Sequence[str],
        ranks: Sequence[int],
        outcome: RunOutcome,
        user_ns: MutableMapping[str, Any],
    ) -> None:
        for name in pull:
            problems = [
                f"rank {r}: {e.get(name) or e.get('*')}"
                for r, e in sorted(outcome.pull_errors.items())
                if name in e or "*" in e
            ]
            missing = [r for r in ranks if name not in outcome.pulled.get(r, {})]
            if problems or missing:
                self.view.notice(
                    f"--pull {name}: not set; "
                    + "; ".join(problems or [f"ranks {missing} did not finish"])
                )
                continue
            user_ns[name] = [outcome.pulled[r][name] for r in ranks]


def recording(store: Store, view: Callable[[], CellViewLike]) -> RecordRun:
    """The ``record(run)`` a backend's hooks get (:class:`~.backends.hooks.CommandContext`):
    a :class:`RunRecorder` of ``run`` shown in a new ``view()``, the run's record written first
    when ``store`` does not hold it yet (``%distributed attach`` of a job it never saw)."""

    def record(run: RunRecord) -> RunRecorder:
        shown = view()
        if store.run(run.id) is None:
            return RunRecorder.start(store, run, shown)
        return RunRecorder(store, run.id, shown)

    return record
