"""From a rank's message to what the kernel records and shows: pure, testable without sockets.

:func:`decode` takes the cluster's view of its ranks (:class:`Ranks`, which it updates: states,
hosts, the output that came before a run began) and one verified message, and returns the
events to record and, when the main thread must act, one typed inbox item.
"""

from __future__ import annotations

import logging
import pickle
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

from ..errors import RankFailure
from ..events import (
    DisplayEvent,
    ErrorEvent,
    MetricEvent,
    OutputEvent,
    OutputLines,
    RankEvent,
    RankState,
    Recorded,
    Stream,
    done_state,
)
from ..interface import LAST_LINES, RankInfo
from ..memcg import Counters, MemorySample
from ..protocol import reports as r
from ..protocol.flight import GroupFlight
from ..protocol.header import Message
from ..protocol.metrics import bad_metric_message, numeric, unpack_samples
from ..protocol.signing import Buffer
from ..protocol.stacks import RankStacks, ThreadStack
from .inbox import (
    Cleared,
    Exited,
    Finished,
    Item,
    LeftDebugger,
    LiveLine,
    Prompted,
    Ready,
    SetupFailed,
    StacksReply,
    StageReached,
)

log = logging.getLogger("jupyter_distributed")
_TEXT = itemgetter(1)  # a line's text, of its (time, text)
EARLY_LINES = 2000  # lines kept per message that arrive before the run began
_PERCENT = re.compile(r"(\d{1,3})%\|")  # tqdm's " 42%|####  |"


@dataclass
class Ranks:
    """The kernel's view of its ranks, owned by the I/O thread."""

    info: dict[int, RankInfo]
    run_id: str = ""
    early: list[OutputEvent] = field(default_factory=list)  # run_id "" until the run begins
    bad_metric_warned: set[int] = field(default_factory=set)

    def begin(self, run_id: str) -> list[OutputEvent]:
        """Start ``run_id``; returns the output that arrived before it, now tagged with it."""
        self.run_id = run_id
        early, self.early = self.early, []
        return [OutputEvent(run_id, e.rank, e.t, e.stream, e.text) for e in early]


@dataclass(frozen=True)
class Decoded:
    events: list[Recorded] = field(default_factory=list)
    item: Item | None = None


def decode(ranks: Ranks, rank: int, message: Message, buffers: list[Buffer]) -> Decoded:
    info = ranks.info.get(rank)
    if info is None:
        return Decoded()
    now = time.time()
    info.last_seen = now
    run_id = str(getattr(message, "run_id", "") or ranks.run_id)
    if isinstance(message, r.Output):
        info.lines.extend(map(_TEXT, message.lines[-LAST_LINES:]))
        stream = Stream(message.stream)
        if not run_id:
            lines = message.lines[:EARLY_LINES]
            ranks.early.extend(OutputEvent("", rank, t, stream, s) for t, s in lines)
            return Decoded()
        return Decoded([OutputLines(run_id, rank, stream, message.lines)] if message.lines else [])
    if isinstance(message, r.Live):
        return _live(run_id, rank, message, now)
    if isinstance(message, r.Display):
        if not run_id:
            return Decoded()
        event = DisplayEvent(
            run_id, rank, now, message.data, message.metadata, message.display_id,
            message.update, message.result,
        )  # fmt: skip
        return Decoded([event])
    if isinstance(message, r.ClearOutput):
        return Decoded(item=Cleared(run_id, rank, message.wait) if run_id else None)
    if isinstance(message, r.Metrics):
        return Decoded(_metrics(ranks, run_id, rank, message, buffers) if run_id else [])
    if isinstance(message, r.Heartbeat):
        info.memory = MemorySample(
            message.rss_mb, message.mem_limit_mb, message.cgroup or "",
            Counters(None, message.oom_kills, message.failcnt),
        )  # fmt: skip
        if not (run_id and ranks.run_id):
            return Decoded()
        return Decoded([MetricEvent(run_id, rank, message.t, message.values())])
    if isinstance(message, r.State):
        info.state = "running"
        return Decoded([RankEvent(run_id, rank, now, RankState.RUNNING, info.host, info.pid)])
    if isinstance(message, r.Done):
        return _done(rank, info, message, buffers, now)
    if isinstance(message, r.Hello):
        if info.pid is not None and info.state != "starting":
            return _restarted(ranks, rank, info, message, now)
        info.host, info.pid, info.state = message.host, message.pid, "idle"
        return Decoded(item=Ready(rank))
    if isinstance(message, r.Fatal):
        return Decoded(item=SetupFailed(rank, message.message))
    if isinstance(message, r.Stage):
        if message.pid and info.pid is None:
            info.pid = message.pid
        return Decoded(item=StageReached(rank, message.stage, message.pid, message.detail))
    if isinstance(message, r.Prompt):
        return Decoded(item=Prompted(rank, message))
    if isinstance(message, r.Resumed):
        return Decoded(item=LeftDebugger(rank, message.run_id))
    if isinstance(message, r.Stacks):
        try:
            stacks = RankStacks(
                rank,
                tuple(ThreadStack.from_json(t) for t in message.threads),
                message.stage,
                flight=_flight(message.flight),
            )
        except (KeyError, TypeError, ValueError) as exc:
            stacks = RankStacks(rank, (), message.stage, "none", f"an unreadable answer: {exc}")
        return Decoded(item=StacksReply(message.request_id, stacks))
    return Decoded()


def _flight(data: Sequence[dict[str, Any]] | None) -> tuple[GroupFlight, ...]:
    """A rank's flight-recorder summary; an unreadable one is left out, the stacks kept."""
    try:
        return tuple(GroupFlight.from_json(g) for g in data or ())
    except (KeyError, TypeError, ValueError, AttributeError):
        return ()


def _live(run_id: str, rank: int, live: r.Live, now: float) -> Decoded:
    """A line redrawn in place: shown live, not recorded; its final state is an output line.
    A tqdm bar's percentage is also recorded as the rank's ``progress`` (0-1) metric."""
    if not run_id:
        return Decoded()
    events: list[Recorded] = []
    found = _PERCENT.search(live.text)
    if found is not None:
        events.append(MetricEvent(run_id, rank, now, {"progress": min(int(found[1]), 100) / 100}))
    if live.final:
        events.append(OutputEvent(run_id, rank, now, Stream(live.stream), live.text))
        return Decoded(events)
    return Decoded(events, LiveLine(run_id, rank, live.stream, live.text))


def _metrics(
    ranks: Ranks, run_id: str, rank: int, message: r.Metrics, buffers: list[Buffer]
) -> list[Recorded]:
    """``report()`` samples: a packed batch from our worker, or JSON (already numbers)."""
    if not buffers:
        return [MetricEvent(run_id, rank, t, v) for t, v in message.samples or ()]
    try:
        samples = unpack_samples(buffers[0])
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError) as exc:
        log.warning("jupyter-distributed: dropped a metrics batch from rank %s: %s", rank, exc)
        return []
    events: list[Recorded] = []
    for t, raw in samples:
        values, bad = numeric(raw)
        if bad and rank not in ranks.bad_metric_warned:
            ranks.bad_metric_warned.add(rank)
            text = bad_metric_message(*bad[0])
            events.append(OutputEvent(run_id, rank, time.time(), Stream.STDERR, text))
        if values:
            events.append(MetricEvent(run_id, rank, float(t), values))
    return events


def _done(rank: int, info: RankInfo, done: r.Done, buffers: list[Buffer], now: float) -> Decoded:
    events: list[Recorded] = []
    if info.state != "running":  # a short cell's end says it ran (no state of its own came)
        events.append(RankEvent(done.run_id, rank, now, RankState.RUNNING, info.host, info.pid))
    info.state = "idle"
    if done.value is not None:
        events.append(OutputEvent(done.run_id, rank, now, Stream.RESULT, done.value))
    if done.failure:
        events.append(ErrorEvent(done.run_id, RankFailure.from_json(done.failure)))
    elif done.status not in ("ok", "interrupted"):  # an error without details is an error
        failure = RankFailure(rank, now, info.host, info.pid, "RankError", done.status)
        events.append(ErrorEvent(done.run_id, failure))
    events.append(RankEvent(done.run_id, rank, now, done_state(done.status), info.host, info.pid))
    return Decoded(events, Finished(rank, done, tuple(buffers)))


def _restarted(ranks: Ranks, rank: int, info: RankInfo, hello: r.Hello, now: float) -> Decoded:
    """A second hello from a rank that was up: its launcher started it again (Slurm's
    ``--requeue``, a retried Ray actor), so the process that held its variables is gone and
    the cluster is lost. The failure names the old process; the new one is not adopted."""
    failure = RankFailure(
        rank,
        now,
        info.host,
        info.pid,
        "RankRestarted",
        f"its launcher started it again on {hello.host} (pid {hello.pid}); the rank's "
        "variables are gone, so the cluster is lost: run the cell again to start a new one",
    )
    info.state = "failed"
    events: list[Recorded] = [ErrorEvent(ranks.run_id, failure)] if ranks.run_id else []
    return Decoded(events, Exited(failure))
