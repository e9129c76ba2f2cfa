"""What the kernel knows of each rank (:class:`RankInfo`), and of spans of ranks at once.

A relay's reduction (``cluster/fanin.py``) says that ranks 0-124 ended their cell: their
``state`` and ``last_seen`` change together. Written rank by rank, that is 1,000 writes per cell
at 1,000 ranks; here it is one write to the :class:`RankSpan` the ranks belong to (issue 26).
A rank reads its span's value wherever the span was written after the rank's own value (a
rank's own message, a failure, the stop), so every reader (the liveness check, ``%distributed
status``, the stack diagnosis, the stop) sees what a write per rank would have given. Which
members wrote their own value since the span's last write, the span keeps (``own_state``,
``own_seen``), so a look at a span's ranks reads those alone and the span once for the rest.
"""

from __future__ import annotations

import bisect
import itertools
import time
from collections import deque
from collections.abc import Iterable, Mapping

from .layout import RankCoords
from .memcg import MemorySample

LAST_LINES = 20  # a dead rank's last lines shown with the cause of its death
_STAMPS = itertools.count(1)  # the order of the writes to ranks' and spans' views
#: Consecutive ranks of a span on one host: ``(first, last, host, pids)``, ``pids[i]`` rank
#: ``first + i``'s (a span an aggregator's reduction names crosses nodes, so hosts).
HostRun = tuple[int, int, str, tuple[int | None, ...]]


class RankSpan:
    """The ``state`` and ``last_seen`` of ranks ``first`` to ``last``, written at once."""

    __slots__ = ("at", "first", "ident", "last", "last_seen", "own_seen", "own_state", "state")

    def __init__(self, first: int, last: int) -> None:
        self.first, self.last = first, last
        self.state = ""
        self.last_seen: float | None = None
        self.at = 0  # the stamp of its last write (0: none, its ranks read their own)
        self.own_state: set[int] = set()  # members whose own state was written after it
        self.own_seen: set[int] = set()  # ... whose own last_seen
        self.ident: tuple[HostRun, ...] | None = None  # its ranks by host (once known)

    def set(self, state: str, seen: float) -> None:
        """Every member's ``state`` and ``last_seen`` (what each rank's own write would do)."""
        self.state, self.last_seen, self.at = state, seen, next(_STAMPS)
        self.own_state.clear()
        self.own_seen.clear()

    def whole(self) -> bool:
        """Whether every member's ``state`` is the span's (none wrote its own since)."""
        return self.at > 0 and not self.own_state


class RankInfo:
    """One rank as the kernel knows it. ``state`` and ``last_seen`` are its own or its span's,
    whichever was written last; ``host`` and ``pid`` written anew forget the span's ``ident``."""

    __slots__ = (
        "_host",
        "_pid",
        "_seen",
        "_seen_at",
        "_state",
        "_state_at",
        "coords",
        "lines",
        "memory",
        "rank",
        "since",
        "span",
    )  # fmt: skip

    def __init__(
        self,
        rank: int,
        host: str,
        pid: int | None,
        state: str,
        coords: RankCoords,
        last_seen: float | None = None,
        memory: MemorySample | None = None,
        lines: deque[str] | None = None,
        since: float | None = None,
    ) -> None:
        self.rank, self._host, self._pid, self.coords = rank, host, pid, coords
        self.span: RankSpan | None = None
        self.state, self.last_seen = state, last_seen
        # what tells the cause of its death: its last memory sample, its last lines, and
        # since when (CLOCK_MONOTONIC, the kernel log's clock) the kernel log can speak of it
        self.memory = memory
        self.lines = deque(maxlen=LAST_LINES) if lines is None else lines
        self.since = time.monotonic() if since is None else since

    @property
    def state(self) -> str:
        span = self.span
        return span.state if span is not None and span.at > self._state_at else self._state

    @state.setter
    def state(self, value: str) -> None:
        self._state, self._state_at = value, next(_STAMPS)
        if self.span is not None:
            self.span.own_state.add(self.rank)

    @property
    def last_seen(self) -> float | None:
        span = self.span
        return span.last_seen if span is not None and span.at > self._seen_at else self._seen

    @last_seen.setter
    def last_seen(self, value: float | None) -> None:
        self._seen, self._seen_at = value, next(_STAMPS)
        if self.span is not None:
            self.span.own_seen.add(self.rank)

    @property
    def host(self) -> str:
        return self._host

    @host.setter
    def host(self, value: str) -> None:
        self._host = value
        if self.span is not None:
            self.span.ident = None

    @property
    def pid(self) -> int | None:
        return self._pid

    @pid.setter
    def pid(self, value: int | None) -> None:
        self._pid = value
        if self.span is not None:
            self.span.ident = None

    def __repr__(self) -> str:
        return (
            f"RankInfo(rank={self.rank}, host={self.host!r}, pid={self.pid}, "
            f"state={self.state!r}, last_seen={self.last_seen})"
        )

    def leave(self) -> None:
        """Leave its span, keeping what it reads now as its own."""
        span = self.span
        if span is not None:
            if span.at > self._state_at:
                self._state, self._state_at = span.state, span.at
            if span.at > self._seen_at:
                self._seen, self._seen_at = span.last_seen, span.at
            self.span = None


class RankSpans:
    """The spans of ranks whose views are written at once (I/O thread only): the ranges that
    relays' reductions name, each made once and used again while reductions name it."""

    def __init__(self, info: Mapping[int, RankInfo]) -> None:
        self._info = info
        self._ranks = sorted(info)  # (a cluster's ranks are known from its start)
        self._spans: dict[tuple[int, int], RankSpan] = {}

    def spans(self) -> list[RankSpan]:
        return list(self._spans.values())

    def span(self, first: int, last: int) -> RankSpan:
        """The span of ranks ``first`` to ``last`` (all known ranks), made where none is: its
        ranks leave the spans they were in (those are no longer used)."""
        span = self._spans.get((first, last))
        if span is not None:
            return span
        span = RankSpan(first, last)
        members = self.members(first, last)
        for old in {id(i.span): i.span for i in members if i.span is not None}.values():
            self._spans.pop((old.first, old.last), None)
        for info in members:
            info.leave()
            info.span = span
        self._spans[first, last] = span
        return span

    def members(self, first: int, last: int) -> list[RankInfo]:
        return [self._info[r] for r in range(first, last + 1)]

    def ident(self, span: RankSpan) -> tuple[HostRun, ...]:
        """The span's ranks as runs of consecutive ranks on one host, with their pids (one run
        for a node's span; one per node, or fewer, for a span across nodes). Made once, until
        a member's host or pid is written."""
        if span.ident is None:
            runs: list[tuple[int, int, str, list[int | None]]] = []
            for i in self.members(span.first, span.last):
                if runs and runs[-1][2] == i.host:
                    runs[-1][3].append(i.pid)
                else:
                    runs.append((i.rank, i.rank, i.host, [i.pid]))
            span.ident = tuple((f, f + len(p) - 1, h, tuple(p)) for f, _, h, p in runs)
        return span.ident

    def gaps(self) -> Iterable[int]:
        """The known ranks in no span (each reads its own view)."""
        ranks, at = self._ranks, 0
        for first, last in sorted(self._spans):
            stop = bisect.bisect_left(ranks, first, at)
            yield from ranks[at:stop]
            at = bisect.bisect_right(ranks, last, stop)
        yield from ranks[at:]
