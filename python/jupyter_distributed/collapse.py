"""Identical lines from several ranks, shown once: ``[ranks 0-7] epoch 1 done``.

A :class:`Collapser` takes each rank's lines in the order the rank wrote them. A line that no
open group has yet opens a group; the same line (same text, same stream) from another rank
within :data:`WINDOW` seconds of the first joins it. A group is given back (:meth:`Collapser.due`)
when its window has passed, or sooner when it is complete: every rank that could still join it
has joined or written a later line. Groups are given back in the order they were opened, and a
rank joins only a group opened after its own previous line's, so each rank's lines keep their
order; lines that differ stay one group per rank, as ``[rank 2] ...``.

Pure (the clock is passed in, nothing is written): the cell's view (:mod:`.display`) uses it,
and anything else that shows many ranks' lines can.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

WINDOW = 0.1  # seconds a line waits at most for the same line from other ranks
_DONE = float("inf")  # a rank that writes no more lines is past every group


def ranks_text(ranks: Iterable[int]) -> str:
    """``0-3,5``: sorted ranks, runs of consecutive ones as ranges."""
    parts: list[str] = []
    ordered = sorted(set(ranks))
    start = prev = ordered[0] if ordered else 0
    for rank in ordered[1:]:
        if rank != prev + 1:
            parts.append(f"{start}-{prev}" if prev > start else str(start))
            start = rank
        prev = rank
    if ordered:
        parts.append(f"{start}-{prev}" if prev > start else str(start))
    return ",".join(parts)


def label(ranks: Sequence[int]) -> str:
    """``[rank 2]`` for one rank, ``[ranks 0-3,5]`` for several."""
    return f"[rank {ranks[0]}]" if len(ranks) == 1 else f"[ranks {ranks_text(ranks)}]"


@dataclass(slots=True)
class Group:
    """One line as shown: its text, its stream, and the ranks that wrote it (in arrival order)."""

    seq: int
    stream: str
    text: str
    until: float  # the end of its window
    ranks: list[int]
    alone: bool = False  # a line no other joins (in its rank's order all the same)


class Collapser:
    """Collapses the lines of ``ranks`` (those that may write; None: not known, and each
    group then waits its whole window)."""

    def __init__(self, ranks: Collection[int] | None = None, window: float | None = None) -> None:
        self.window = WINDOW if window is None else window
        self._queue: deque[Group] = deque()  # open groups, in the order they were opened
        self._open: dict[tuple[str, str], list[Group]] = {}  # (stream, text) -> open groups
        self._seq = 0
        # rank -> the seq of its latest group (-1: none yet); only for known ranks
        self._last: dict[int, float] = dict.fromkeys(ranks, -1) if ranks is not None else {}
        self._known = ranks is not None
        self._low = -1.0  # a lower bound of min(_last.values())

    def __bool__(self) -> bool:
        """Whether lines are held."""
        return bool(self._queue)

    def add(
        self,
        rank: int,
        stream: str,
        texts: Iterable[str],
        now: float,
        budget: float = _DONE,
        cost: int = 0,
        alone: bool = False,
    ) -> tuple[float, int]:
        """One rank's lines, in order. A line that opens a group spends ``len(text) + cost``
        of ``budget`` (joining one is free); one the budget cannot pay is dropped. Returns
        the budget left and how many lines were dropped. ``alone``: lines that neither join
        nor are joined (a rank's result), kept in the rank's order."""
        last = self._last.get(rank, -1)
        opened = self._open
        queue = self._queue
        dropped = 0
        for text in texts:
            key = (stream, text)
            groups = None if alone else opened.get(key)
            if groups is not None:
                joined = None
                for group in groups:  # the first one opened after this rank's previous line
                    if group.seq > last and now < group.until:
                        joined = group
                        break
                if joined is not None:
                    joined.ranks.append(rank)
                    last = joined.seq
                    continue
            price = len(text) + cost
            if price > budget:
                dropped += 1
                continue
            budget -= price
            self._seq += 1
            last = seq = self._seq
            group = Group(seq, stream, text, now + self.window, [rank], alone)
            queue.append(group)
            if alone:
                continue
            if groups is None:
                opened[key] = [group]
            else:
                groups.append(group)
        if self._known:
            self._last[rank] = last
        return budget, dropped

    def done(self, rank: int) -> None:
        """``rank`` writes no more lines (its cell ended): no group waits for it."""
        if self._known:
            self._last[rank] = _DONE

    def due(self, now: float) -> list[Group]:
        """The groups to show now, in order: those whose window has passed, and those
        complete sooner (see the module docstring)."""
        queue, out = self._queue, []
        while queue:
            group = queue[0]
            if now < group.until and not self._complete(group):
                break
            out.append(self._pop())
        return out

    def drain(self) -> list[Group]:
        """Every held group, in order (the output must go out now)."""
        return [self._pop() for _ in range(len(self._queue))]

    def _complete(self, group: Group) -> bool:
        """Whether no rank can join ``group`` any more: every one has joined it (its latest
        group is this one) or written a later line (see :meth:`add`)."""
        if not self._known:
            return False
        if self._low < group.seq:  # (a bound that only rises: recomputed only when short)
            self._low = min(self._last.values(), default=_DONE)
        return self._low >= group.seq

    def _pop(self) -> Group:
        group = self._queue.popleft()
        if group.alone:
            return group
        key = (group.stream, group.text)
        groups = self._open[key]
        if len(groups) == 1:
            del self._open[key]
        else:
            groups.remove(group)
        return group
