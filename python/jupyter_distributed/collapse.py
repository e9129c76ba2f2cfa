"""Identical lines from several ranks, shown once: ``[ranks 0-7] epoch 1 done``.

A :class:`Collapser` takes each rank's lines in the order the rank wrote them, as *runs*: the
lines one rank wrote together. Every line has a number, in the order lines arrive. A line of
another rank with the same text on the same stream, arriving within :data:`WINDOW` seconds of
the run and written within :data:`WINDOW` seconds of it (by the ranks' own clocks, when the
lines carry their times: lines that waited, behind a pdb prompt or a stalled link, are not
taken for one line), joins that line instead of being shown again; a rank joins only a line
numbered after its own previous line, so each rank's lines keep their order. Runs are given back
(:meth:`Collapser.due`) in the order they came, when their window has passed or sooner, once no
rank can join their lines any more (every rank that may write has joined them or written a
later line). Lines that differ stay per rank, as ``[rank 2] ...``.

A flood of lines that differ costs one check per run (whether any of its lines is held already),
not one object per line: a run is shown as it came, in one string.

Pure (the clock is passed in, nothing is written): the cell's view (:mod:`.display`) uses it,
and anything else that shows many ranks' lines can.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Collection, Iterator, Sequence

from .risingmin import RisingMin

WINDOW = 0.1  # seconds a line waits at most for the same line from other ranks
_DONE = float("inf")  # a rank that writes no more lines is past every line
_STALE = 4  # the index of held texts is rebuilt when it holds this many times the held lines


def ranks_text(ranks: Collection[int]) -> str:
    """``0-3,5``: sorted ranks, runs of consecutive ones as ranges."""
    return ",".join(_runs(ranks))


def ranks_brief(ranks: Collection[int], most: int = 8) -> str:
    """:func:`ranks_text` when it has at most ``most`` runs, else the first and last runs and
    the count (``0-2,4,…,9990-9999 (7,412 in all)``): a notice stays one line at 10,000
    ranks."""
    runs = _runs(ranks)
    if len(runs) <= most:
        return ",".join(runs)
    head, tail = runs[: most - 2], runs[-2:]
    return f"{','.join(head)},…,{','.join(tail)} ({len(set(ranks)):,} in all)"


def _runs(ranks: Collection[int]) -> list[str]:
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
    return parts


def label(ranks: Sequence[int]) -> str:
    """``[rank 2]`` for one rank, ``[ranks 0-3,5]`` for several."""
    return f"[rank {ranks[0]}]" if len(ranks) == 1 else f"[ranks {ranks_text(ranks)}]"


def affordable(texts: Sequence[str], budget: float, cost: int) -> tuple[list[str], float, int]:
    """The lines ``budget`` pays for, each ``len(text) + cost``, in order; the budget left;
    how many were not paid for."""
    price = sum(map(len, texts)) + cost * len(texts)
    if price <= budget:  # (the usual case: all of them)
        return list(texts), budget - price, 0
    kept: list[str] = []
    for text in texts:
        if budget < cost:  # no line fits any more
            return kept, budget, len(texts) - len(kept)
        if len(text) + cost <= budget:
            budget -= len(text) + cost
            kept.append(text)
    return kept, budget, len(texts) - len(kept)


class Run:
    """Lines one rank wrote together (``texts``, numbered from ``first``), with the other
    ranks that joined each (``joined``: index in ``texts`` -> ranks)."""

    __slots__ = (
        "alone", "also", "first", "joined", "last", "rank", "stream", "texts", "until", "written"
    )  # fmt: skip

    def __init__(
        self,
        rank: int,
        stream: str,
        texts: list[str],
        first: int,
        until: float,
        alone: bool,
        written: tuple[float, float] | None = None,
        also: Sequence[int] = (),
    ) -> None:
        self.rank, self.stream, self.texts = rank, stream, texts
        self.also = also  # other ranks that wrote every line alike (a relay sent them once)
        self.first, self.until, self.alone = first, until, alone
        self.written = written  # when the rank wrote its first and last line (None: unknown)
        self.last = first + len(texts) - 1  # the number of its last line
        self.joined: dict[int, list[int]] = {}

    def near(self, t: float | None, window: float) -> bool:
        """Whether a line written at ``t`` may be this run's line (None: time unknown)."""
        span = self.written
        return t is None or span is None or span[0] - window <= t <= span[1] + window

    def lines(self) -> Iterator[tuple[list[int], str]]:
        """Each line with the ranks that wrote it (its own rank first)."""
        for i, text in enumerate(self.texts):
            yield [self.rank, *self.also, *self.joined.get(i, ())], text

    def render(self) -> str:
        """As shown: each line labelled (:func:`label`), with its newline."""
        if not self.joined:  # (a run no one joined: one string, as fast as it came)
            prefix = f"{label([self.rank, *self.also])} " if self.also else f"[rank {self.rank}] "
            return prefix + f"\n{prefix}".join(self.texts) + "\n"
        return "".join(f"{label(ranks)} {text}\n" for ranks, text in self.lines())


class Collapser:
    """Collapses the lines of ``ranks`` (those that may write; None: not known, and each
    run then waits its whole window)."""

    def __init__(self, ranks: Collection[int] | None = None, window: float | None = None) -> None:
        self.window = WINDOW if window is None else window
        self._queue: deque[Run] = deque()  # held runs, in the order they came
        self._held = 0  # lines held
        self._index: dict[str, dict[str, Run]] = {}  # stream -> held text -> its latest run
        self._next = 0  # the next line's number
        # rank -> the number of its latest line (-1: none yet); it only rises
        self._last = RisingMin(ranks if ranks is not None else ())
        self._known = ranks is not None

    def __bool__(self) -> bool:
        """Whether lines are held."""
        return bool(self._queue)

    def add(
        self,
        rank: int,
        stream: str,
        texts: Sequence[str],
        now: float,
        budget: float = _DONE,
        cost: int = 0,
        alone: bool = False,
        times: Sequence[float] | None = None,
        also: Sequence[int] = (),
    ) -> tuple[float, int]:
        """One rank's lines, in order (``times``: when the rank wrote each; ``also``: other
        ranks that wrote the same lines, as a relay collapsed them). A line shown anew
        spends ``len(text) + cost`` of ``budget`` (joining another rank's is free); one the
        budget cannot pay is dropped.
        Returns the budget left and how many lines were dropped. ``alone``: lines that
        neither join nor are joined (a rank's result), kept in the rank's order."""
        written = (times[0], times[-1]) if times else None  # (in the order written)
        if alone:
            self._run(rank, stream, list(texts), now, alone, written)
            return budget, 0
        index = self._index.get(stream)
        if index is None or index.keys().isdisjoint(texts):  # (a flood: nothing to join)
            kept, budget, dropped = affordable(texts, budget, cost)
            if kept:
                self._run(rank, stream, kept, now, False, written, also)
            return budget, dropped
        return self._one_by_one(rank, stream, texts, now, budget, cost, times, also)

    def _one_by_one(
        self,
        rank: int,
        stream: str,
        texts: Sequence[str],
        now: float,
        budget: float,
        cost: int,
        times: Sequence[float] | None,
        also: Sequence[int] = (),
    ) -> tuple[float, int]:
        """:meth:`add`, line by line: lines join others' while they can; from the first line
        that does not, the rest are this rank's own (numbered after every held line, they
        could join nothing before them)."""
        ranks = (rank, *also)
        last = self._last.get(rank, -1) if not also else max(self._last.get(r, -1) for r in ranks)
        joined = False
        fresh: list[str] = []  # this rank's own lines: a run of their own
        fresh_times: list[float] = []
        dropped = 0
        for i, text in enumerate(texts):
            t = times[i] if times else None
            run = None if fresh else self._index.get(stream, {}).get(text)
            if (
                run is not None
                and now < run.until
                and run.last > last
                and run.rank != rank
                and run.near(t, self.window)
            ):
                try:
                    at = run.texts.index(text, max(0, int(last) - run.first + 1))
                except ValueError:
                    at = -1
                if at >= 0:
                    others = run.joined.get(at)
                    if others is None:
                        run.joined[at] = list(ranks)
                    else:
                        others.extend(ranks)
                    last, joined = run.first + at, True
                    continue
            if len(text) + cost > budget:
                dropped += 1
                continue
            budget -= len(text) + cost
            fresh.append(text)
            if t is not None:
                fresh_times.append(t)
        if fresh:
            written = (fresh_times[0], fresh_times[-1]) if fresh_times else None
            self._run(rank, stream, fresh, now, False, written, also)
        elif joined:  # (each rank's latest line: the last one it joined)
            for r in ranks:
                self._last.rise(r, last)
        return budget, dropped

    def _run(
        self,
        rank: int,
        stream: str,
        texts: list[str],
        now: float,
        alone: bool,
        written: tuple[float, float] | None = None,
        also: Sequence[int] = (),
    ) -> None:
        run = Run(rank, stream, texts, self._next, now + self.window, alone, written, also)
        self._next += len(texts)
        self._queue.append(run)
        self._held += len(texts)
        if not alone:
            index = self._index.setdefault(stream, {})
            if len(index) > _STALE * self._held + 64:  # (released runs' texts go)
                index = self._index[stream] = {}
                for held in self._queue:
                    if held.stream == stream and not held.alone:
                        index.update(dict.fromkeys(held.texts, held))
            else:
                index.update(dict.fromkeys(texts, run))
        self._last.rise(rank, run.last)
        for other in also:
            self._last.rise(other, run.last)

    def done(self, rank: int) -> None:
        """``rank`` writes no more lines (its cell ended): no line waits for it."""
        if self._known:
            self._last.rise(rank, _DONE)

    def done_span(self, first: int, last: int) -> None:
        """:meth:`done` for ranks ``first`` to ``last`` at once (a node's ends)."""
        if self._known:
            self._last.top(first, last)

    def due(self, now: float) -> list[Run]:
        """The runs to show now, in order: those whose window has passed, and those no rank
        can join any more (see the module docstring)."""
        queue, out = self._queue, []
        while queue:
            run = queue[0]
            if now < run.until and not self._complete(run):
                break
            out.append(self._pop())
        return out

    def drain(self) -> list[Run]:
        """Every held run, in order (the output must go out now)."""
        return [self._pop() for _ in range(len(self._queue))]

    def _complete(self, run: Run) -> bool:
        """Whether no rank can join ``run`` any more: every one has joined its last line or
        written a later line (see :meth:`add`)."""
        return self._known and self._last.least(_DONE) >= run.last

    def _pop(self) -> Run:
        run = self._queue.popleft()
        self._held -= len(run.texts)
        run.until = -1.0  # (its texts left in the index are stale: nothing joins it now)
        return run
