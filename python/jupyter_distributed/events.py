"""Events: the timestamped records of a run, and the forms that bring many at once (a
message's lines, a relay's batch, a node's rank states) as the kernel records them. The kinds
of event one at a time, with their JSON form, are :mod:`.eventkinds`; this module gives their
names too.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import ClassVar

from .eventkinds import (
    DisplayEvent,
    ErrorEvent,
    Event,
    MetricEvent,
    OutputEvent,
    RankEvent,
    RankState,
    RunEvent,
    RunState,
    StacksEvent,
    Stream,
    done_state,
)
from .kept import Kept

__all__ = [
    "DisplayEvent",
    "ErrorEvent",
    "Event",
    "MetricEvent",
    "OutputBatch",
    "OutputEvent",
    "OutputLines",
    "RankEvent",
    "RankState",
    "RankStates",
    "Recorded",
    "RunEvent",
    "RunState",
    "SharedLines",
    "StacksEvent",
    "StateSpan",
    "Stream",
    "count",
    "done_state",
    "each",
]


#: Consecutive ranks that took the same states on one host, ``(first, last, states, host,
#: pids)``: each rank of ``first..last`` in turn took ``states`` in order; ``pids[i]`` is rank
#: ``first + i``'s pid (a relay's span of plain ends, issue 26: ``ranks 0-124 done``).
StateSpan = tuple[int, int, tuple["RankState", ...], str, Sequence[int | None]]


@dataclass(frozen=True, slots=True)
class RankStates:
    """Rank states of one run that one relay's reduction brought (its node's ranks' ends of a
    cell, issue 26): recorded as ONE history row and shown in one pass, instead of one
    :class:`RankEvent` per rank. Not a kind of its own: the history gives its readers rank
    events (each with its own seq); :meth:`events` gives them one by one, ``states`` (one
    each) first, then each of ``spans``' ranks' states, rank by rank."""

    kind: ClassVar[str] = "rank"
    run_id: str
    t: float
    states: Sequence[tuple[int, RankState, str, int | None]] = ()  # (rank, state, host, pid)
    spans: Sequence[StateSpan] = ()

    @property
    def count(self) -> int:
        """How many states (events) these are."""
        spans = self.spans
        if type(spans) is tuple:  # (a kept chunk: counted once, see span_rows)
            return len(self.states) + _COUNTS.get(spans, None, lambda s, _: _count(s))
        return len(self.states) + _count(spans)

    def each(self) -> list[tuple[int, RankState, str, int | None]]:
        """Every state as ``(rank, state, host, pid)``, in order (the spans' spread)."""
        out = list(self.states)
        for first, _last, states, host, pids in self.spans:
            out.extend((first + i, s, host, pid) for i, pid in enumerate(pids) for s in states)
        return out

    def events(self) -> list[RankEvent]:
        run_id, t = self.run_id, self.t
        return [RankEvent(run_id, r, t, state, host, pid) for r, state, host, pid in self.each()]

    def rows(self) -> list[tuple[int, str, str, int | None]]:
        """Each of ``states`` as the history's row keeps it: (rank, state, host, pid)."""
        return [(r, s.value, h, p) for r, s, h, p in self.states]

    def span_rows(self) -> Sequence[tuple[int, int, list[str], str, Sequence[int | None]]]:
        """Each of ``spans`` as the history's row keeps it (see ``staterows.States``; the pids
        as given: a node's tuple, the same for every cell, is encoded once). Where ``spans``
        is a tuple (a reduction's kept chunk, see ``cluster/fancompact.py``), the rows are
        made once for it and given again (a tuple: never changed by a reader)."""
        spans = self.spans
        if type(spans) is tuple:
            return _SPAN_ROWS.get(spans, None, lambda s, _: tuple(_span_rows(s)))
        return _span_rows(spans)


def _span_rows(
    spans: Sequence[StateSpan],
) -> list[tuple[int, int, list[str], str, Sequence[int | None]]]:
    return [(f, la, [s.value for s in ss], h, p) for f, la, ss, h, p in spans]


def _count(spans: Sequence[StateSpan]) -> int:
    return sum((s[1] - s[0] + 1) * len(s[2]) for s in spans)


_COUNTS: Kept[tuple[StateSpan, ...], None, int] = Kept()
_SpanRow = tuple[int, int, list[str], str, Sequence[int | None]]
_SPAN_ROWS: Kept[tuple[StateSpan, ...], None, tuple[_SpanRow, ...]] = Kept()


@dataclass(frozen=True, slots=True)
class OutputLines:
    """Lines one rank wrote to one stream, as one message brought them: how the kernel's I/O
    thread records a flood (the store writes them into its rows at once) and hands them to the
    main thread, instead of one :class:`OutputEvent` per line. Not a kind of its own: the
    history and every reader see output lines; :meth:`events` gives them one by one."""

    kind: ClassVar[str] = "output"
    run_id: str
    rank: int
    stream: Stream
    lines: Sequence[tuple[float, str]]  # (time, text) per line, in order; never empty

    @property
    def t(self) -> float:
        """The first line's time."""
        return float(self.lines[0][0])

    def events(self) -> list[OutputEvent]:
        """One :class:`OutputEvent` per line (made without the frozen dataclass's checks:
        the fields are already what they must be)."""
        new, cls = object.__new__, OutputEvent
        run_id, rank, stream = self.run_id, self.rank, self.stream
        out = []
        for t, text in self.lines:
            event = new(cls)
            event.__dict__.update(run_id=run_id, rank=rank, t=t, stream=stream, text=text)
            out.append(event)
        return out


@dataclass(frozen=True, slots=True)
class SharedLines:
    """Lines that several ranks wrote alike to one stream, as their node's relay sent them up
    once (issue 26): each rank's lines are its own in the history (with its own times); the
    cell's view shows them once, ``[ranks 4-7] text``. Not a kind of its own: readers see each
    rank's output lines; :meth:`per_rank` and :meth:`events` give them back."""

    kind: ClassVar[str] = "output"
    run_id: str
    stream: Stream
    ranks: Sequence[int]  # never empty
    texts: Sequence[str]  # never empty
    times: Sequence[Sequence[float]]  # each rank's times of its lines, in the order of ranks

    @property
    def t(self) -> float:
        """The first rank's first line's time."""
        return float(self.times[0][0])

    def per_rank(self) -> list[OutputLines]:
        """Each rank's lines, as its own message would have brought them."""
        run_id, stream, texts = self.run_id, self.stream, self.texts
        return [
            OutputLines(run_id, rank, stream, list(zip(times, texts, strict=True)))
            for rank, times in zip(self.ranks, self.times, strict=True)
        ]

    def events(self) -> list[OutputEvent]:
        """Each rank's lines as :class:`OutputEvent`\\ s, rank by rank."""
        return [event for lines in self.per_rank() for event in lines.events()]


@dataclass(frozen=True, slots=True)
class OutputBatch:
    """Several ranks' messages of output of one run, as a relay's batch brought them (each
    rank its own lines, issue 26): recorded (one row per message, as for each rank's
    :class:`OutputLines`) and shown in one pass. Not a kind of its own: :meth:`per_rank` gives
    each message back, in the order they came."""

    kind: ClassVar[str] = "output"
    run_id: str
    ranks: Sequence[int]  # never empty; a rank appears once per message it sent
    streams: Sequence[Stream]
    texts: Sequence[Sequence[str]]  # each message's lines, never empty
    times: Sequence[Sequence[float]]  # each message's times: one per line, or one for all

    @property
    def t(self) -> float:
        """The first message's first line's time."""
        return float(self.times[0][0])

    def per_rank(self) -> list[OutputLines]:
        """Each message as its rank's :class:`OutputLines`, in order."""
        run_id, out = self.run_id, []
        for rank, stream, texts, times in zip(
            self.ranks, self.streams, self.texts, self.times, strict=True
        ):
            at = times if len(times) == len(texts) else [times[0]] * len(texts)
            out.append(OutputLines(run_id, rank, stream, list(zip(at, texts, strict=True))))
        return out

    def events(self) -> list[OutputEvent]:
        """Each line as an :class:`OutputEvent`, message by message."""
        return [event for lines in self.per_rank() for event in lines.events()]


#: What the kernel records and shows: an event, or a message's lines of output (expanded into
#: :class:`OutputEvent`\ s where one line at a time is needed).
Recorded = Event | OutputLines | RankStates | SharedLines | OutputBatch


def count(events: Iterable[Recorded]) -> int:
    """How many events ``events`` hold (each line of an :class:`OutputLines` is one)."""
    return sum(
        len(e.lines)
        if isinstance(e, OutputLines)
        else len(e.ranks) * len(e.texts)
        if isinstance(e, SharedLines)
        else sum(map(len, e.texts))
        if isinstance(e, OutputBatch)
        else e.count
        if isinstance(e, RankStates)
        else 1
        for e in events
    )


def each(events: Iterable[Recorded]) -> list[Event]:
    """``events`` one at a time: an :class:`OutputLines`' lines as :class:`OutputEvent`\\ s."""
    out: list[Event] = []
    for event in events:
        if isinstance(event, OutputLines | RankStates | SharedLines | OutputBatch):
            out.extend(event.events())
        else:
            out.append(event)
    return out
