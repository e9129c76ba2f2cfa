"""A relay's reduction recorded and shown as one event (issue 26: expand on read, not on write).

A reduction (:mod:`.fanin`) brings the ends of a cell on one node's ranks. Each rank's ``Done``
is still verified, ordered and decoded as if it had come directly (its counter, its ``after``,
its value, any failure: an error is its own event, named with its rank, host and cause), but
the rank states the ends give (``running`` where the rank had not said so, then ``done``) are
gathered into ONE :class:`~..events.RankStates`, which the history keeps as one row and the
cell's view takes in one pass; the ranks' ``Finished`` items follow it. Plain ends that came
as ranges are kept as spans (``ranks 0-124: running, done``), never one tuple per state, and
set their ranks' views in one write per span (:mod:`~..rankviews`): an aggregator's span across
its nodes is one write and one :class:`~.inbox.Ended`, its states one span per host (the
history's row keeps a host per span, as before) and one ``ranks`` update (see
``history/rowupdates.py``).
Readers of the history (the live stream, ``%distributed runs``, the panel) get each rank's
events back from that row, in the same order; the ``ranks`` table's rows are updated as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import chain

from ..events import RankEvent, RankState, RankStates, Recorded, StateSpan
from ..kept import Kept
from ..rankviews import HostRun, RankSpans
from .inbox import Ended, Item, Show

_RAN = (RankState.RUNNING, RankState.DONE)  # a short cell's end says it ran
_DONE = (RankState.DONE,)
#: a whole span's states as spans by host, kept per its runs' tuple (the same for every cell)
_HOSTED: Kept[tuple[HostRun, ...], None, bool] = Kept()  # (every run's host known)
_CHUNKS: Kept[tuple[HostRun, ...], tuple[RankState, ...], tuple[StateSpan, ...]] = Kept()


@dataclass
class Compacting:
    """What the ranks' ends in one reduction gave, while it is taken."""

    states: dict[str, list[tuple[int, RankState, str, int | None]]] = field(default_factory=dict)
    spans: dict[str, list[Sequence[StateSpan]]] = field(default_factory=dict)  # in chunks
    t: float = 0.0
    finished: list[Item] = field(default_factory=list)

    def took(self, events: list[Recorded], decoded: list[Recorded], item: Item) -> None:
        """A rank's decoded end: its states here, its other events (a value, a failure) into
        ``events`` as they come; its ``Finished`` held until the reduction is taken."""
        for event in decoded:
            if isinstance(event, RankEvent):
                states = self.states.setdefault(event.run_id, [])
                states.append((event.rank, event.state, event.host, event.pid))
                self.t = max(self.t, event.t)
            else:
                events.append(event)
        self.finished.append(item)

    def ended(
        self, views: RankSpans, run_id: str, ranges: Sequence[tuple[int, int]], now: float
    ) -> list[Ended]:
        """Plain ``ok`` ends of the ranks of ``ranges`` (``(first, last)`` each): the states
        and the rank views' changes a ``Done`` each would have given (as
        :func:`~.decode.decode` makes them), as spans of consecutive ranks on one host, and an
        :class:`~.inbox.Ended` per range. A range is one write to its ranks' span (their
        ``state`` and ``last_seen``, see :mod:`~..rankviews`); its states are read from the
        span, unless some of its ranks said something of their own since (``running``)."""
        spans = self.spans.setdefault(run_id, [])
        out = []
        for first, last in ranges:
            span = views.span(first, last)
            runs = views.ident(span)  # (by host: several where the range crosses nodes)
            if span.whole() and _HOSTED.get(runs, None, _hosted):  # no look at each rank's state
                states = _DONE if span.state == "running" else _RAN
                spans.append(_CHUNKS.get(runs, states, _chunk))
            else:
                each: list[StateSpan] = []
                self._each(views, first, last, each)
                spans.append(each)
            span.set("idle", now)
            ended = Ended(run_id, range(first, last + 1))
            self.finished.append(ended)
            out.append(ended)
        self.t = max(self.t, now)
        return out

    @staticmethod
    def _each(views: RankSpans, first: int, last: int, spans: list[StateSpan]) -> None:
        """The states of ranks ``first`` to ``last`` rank by rank, as spans of those alike."""
        start = prev = first - 1
        key: tuple[tuple[RankState, ...], str] = ((), "")
        pids: list[int | None] = []
        for i in views.members(first, last):
            this = (_DONE if i.state == "running" else _RAN, i.host)
            if this != key:
                if pids:
                    spans.append((start, prev, key[0], key[1], pids))
                start, key, pids = i.rank, this, []
            pids.append(i.pid)
            prev = i.rank
        if pids:
            spans.append((start, prev, key[0], key[1], pids))

    def close(self, events: list[Recorded], items: list[Item], shown: int) -> int:
        """The reduction is taken: its states as one event per run, the events not shown yet
        as one :class:`Show`, then the ranks' ``Finished``. Returns the new ``shown``."""
        for run_id in dict.fromkeys([*self.states, *self.spans]):
            states, chunks = self.states.get(run_id, []), self.spans.get(run_id, [])
            # (one chunk, the common case: its kept tuple itself, so what the history makes
            # of it is kept too, see staterows.write_states)
            spans = chunks[0] if len(chunks) == 1 else tuple(chain.from_iterable(chunks))
            if states or spans:
                events.append(RankStates(run_id, self.t, states, spans))
        if len(events) > shown:
            items.append(Show(tuple(events[shown:])))
            shown = len(events)
        items.extend(self.finished)
        return shown


def _chunk(runs: Sequence[HostRun], states: tuple[RankState, ...]) -> tuple[StateSpan, ...]:
    return tuple((f, la, states, host, pids) for f, la, host, pids in runs)


def _hosted(runs: Sequence[HostRun], _: None) -> bool:
    return all(run[2] for run in runs)
