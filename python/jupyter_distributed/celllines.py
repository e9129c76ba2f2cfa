"""Whose lines show under a cell, and how: ``--output`` (the ranks whose lines show; the
others' are counted, and kept in the history) and the collapsing of identical lines
(:mod:`.collapse`), as the cell's view (:class:`~.display.CellView`) writes them."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Collection, Sequence

from .collapse import Collapser, Run, affordable, ranks_text
from .events import OutputBatch, RankState, StacksEvent, Stream
from .protocol.flight import LABEL as FLIGHT_LABEL

_RUNNING = (RankState.STARTING, RankState.RUNNING)
_FOREVER = float("inf")
TAIL_LINES = 5  # a rate-limited rank's last lines, always shown when its cell ends


class Tails:
    """Each rank's last :data:`TAIL_LINES` lines, and the ranks the rate limit cut: when a
    cell was rate limited, its end shows each cut rank's last lines (what the user reads),
    even if the limit hid them; ``lines``: every output line the cell wrote (the history's)."""

    def __init__(self) -> None:
        self.lines = 0
        self._tails: dict[int, deque[tuple[bool, str]]] = {}
        self._cut: set[int] = set()

    def add(self, rank: int, stream: Stream, texts: Sequence[str]) -> None:
        """A rank's lines as they came (a result is no line of its tail)."""
        self.lines += len(texts)
        if stream is Stream.RESULT:
            return
        tail = self._tails.get(rank)
        if tail is None:
            tail = self._tails[rank] = deque(maxlen=TAIL_LINES)
        stderr = stream is Stream.STDERR
        tail.extend([(stderr, text) for text in texts[-TAIL_LINES:]])

    def cut(self, rank: int) -> None:
        """Some of ``rank``'s lines were not shown (the rate limit)."""
        self._cut.add(rank)

    def shown(self) -> list[tuple[bool, str]]:
        """What to write at the cell's end, ``(to stderr, text)``: each cut rank's last lines,
        tagged, after a line that says what they are (then the ranks count as shown)."""
        cut, self._cut = sorted(r for r in self._cut if r in self._tails), set()
        if not cut:
            return []
        head = f"[jupyter-distributed] the last lines of rank(s) {ranks_text(cut)}:\n"
        tails = [(rank, line) for rank in cut for line in self._tails[rank]]
        return [(True, head), *((e, f"[rank {rank}] {text}\n") for rank, (e, text) in tails)]


_kept: tuple[tuple[int, ...], Collection[int]] | None = None  # (see _every) the last tuple's


def _every(ranks: Collection[int]) -> Collection[int]:
    """``ranks`` as a ``range`` where consecutive (a node's ends then cost O(1), see
    :meth:`.RisingMin.top`), else a frozenset; made once while the same tuple comes again (a
    spec's ranks are one tuple per world size: each cell's view of a cluster, ~0.2 ms at
    10,000 ranks)."""
    global _kept  # (one pair, replaced whole)
    kept = _kept
    if kept is not None and kept[0] is ranks:
        return kept[1]
    every: Collection[int] = frozenset(ranks)
    if every and len(every) == len(ranks) and max(every) - min(every) + 1 == len(every):
        every = range(min(every), max(every) + 1)
    if isinstance(ranks, tuple):
        _kept = (ranks, every)
    return every


class ShownLines:
    """``output_ranks``: whose lines show (None: every rank's); ``collapse``: identical lines
    of several ranks shown once; ``ranks``: the cell's ranks (None: not known)."""

    def __init__(
        self,
        output_ranks: Collection[int] | None = None,
        collapse: bool = True,
        ranks: Collection[int] | None = None,
    ) -> None:
        self.output_ranks = None if output_ranks is None else frozenset(output_ranks)
        self.hidden = 0  # lines of the other ranks, not shown
        every = None if ranks is None else _every(ranks)  # (never changed: see RisingMin)
        out = self.output_ranks
        shown = every if every is None or not out else frozenset(r for r in out if r in every)
        # (nothing to collapse when one rank at most shows lines)
        self.held = Collapser(shown) if collapse and (shown is None or len(shown) > 1) else None

    def hides(self, rank: int, stream: Stream) -> bool:
        """Whether ``--output`` keeps this line of ``rank`` from the cell (a result shows)."""
        out = self.output_ranks
        return out is not None and rank not in out and stream is not Stream.RESULT

    def add(
        self,
        rank: int,
        stream: Stream,
        lines: Sequence[tuple[float, str]],
        tokens: float,
        also: Sequence[int] = (),
    ) -> tuple[float, int]:
        """A rank's lines (time, text) into the collapser, each new line paid from
        ``tokens`` with its label (one that joins another rank's is free; a result is always
        shown, in its rank's order). Returns the tokens left and how many lines the tokens
        could not pay; :meth:`due` gives what is to be shown. ``also``: other ranks that wrote
        the same lines (a relay sent them once)."""
        assert self.held is not None  # noqa: S101 (only called with collapsing on)
        cost = len(str(rank)) + 10  # (the label's and the newline's)
        result = stream is Stream.RESULT
        if not result and tokens < cost:  # no line fits: a flood past the rate costs a count
            return tokens, len(lines)
        texts = [text for _t, text in lines]
        budget = _FOREVER if result else tokens
        left, dropped = self.held.add(
            rank,
            stream.value,
            texts,
            time.monotonic(),
            budget,
            cost,
            result,
            [t for t, _text in lines],
            also,
        )
        return tokens if result else left, dropped

    def add_each(self, batch: OutputBatch, tokens: float, tails: Tails) -> tuple[float, int]:
        """:meth:`add` for each message of ``batch`` (of stdout and stderr only), its lines
        kept in ``tails`` too (a rank the tokens cut is cut there). Returns the tokens left and
        how many lines they could not pay."""
        assert self.held is not None  # noqa: S101 (only called with collapsing on)
        add, now, dropped = self.held.add, time.monotonic(), 0
        each = zip(batch.ranks, batch.streams, batch.texts, batch.times, strict=True)
        for rank, stream, texts, times in each:
            tails.add(rank, stream, texts)
            cost = len(str(rank)) + 10  # (the label's and the newline's)
            if tokens < cost:  # no line fits: a flood past the rate costs a count
                cut = len(texts)
            else:
                at = times if len(times) == len(texts) else [times[0]] * len(texts)
                tokens, cut = add(rank, stream.value, texts, now, tokens, cost, False, at)
            if cut:
                dropped += cut
                tails.cut(rank)
        return tokens, dropped

    def ended(self, rank: int, state: RankState) -> None:
        """A rank's state changed: once its cell ended, no line waits for it."""
        if self.held is not None and state not in _RUNNING:
            self.held.done(rank)

    def ended_span(self, first: int, last: int, state: RankState) -> None:
        """:meth:`ended` for each rank of ``first..last``, its state now ``state``."""
        if self.held is not None and state not in _RUNNING:
            self.held.done_span(first, last)

    def due(self) -> list[tuple[bool, str]]:
        """The lines to show now, each ``(to stderr, text with its newline)``, in order."""
        return _shown(self.held.due(time.monotonic())) if self.held else []

    def drain(self) -> list[tuple[bool, str]]:
        """Every held line, for what must show after them at once (a display, a failure)."""
        return _shown(self.held.drain()) if self.held else []

    def note(self) -> str:
        """What ``--output`` did not show, for the closing notes (then counts anew)."""
        if not self.hidden or self.output_ranks is None:
            return ""
        hidden, self.hidden = self.hidden, 0
        return f"{hidden} line(s) of the ranks not in --output {ranks_text(self.output_ranks)}"


def closing_notes(
    run_id: str, hidden: str, suppressed: int, unrecorded: int, lines: int = 0
) -> list[str]:
    """The notes that end a cell's output: lines ``--output`` did not show (``hidden``, from
    :meth:`ShownLines.note`), lines the rate limit did not show (of ``lines`` in all), events
    the history could not keep (then no note claims that every line is kept)."""
    lost = (
        f"{unrecorded} event(s) of this run could not be written to the history, "
        "so its log is incomplete"
    )
    notes = []
    if hidden:
        kept = lost if unrecorded else "the history has them"
        notes.append(f"{hidden} were not shown; {kept}: %distributed logs {run_id}")
    if suppressed:
        kept = lost if unrecorded else f"the history has all {max(lines, suppressed)} lines"
        notes.append(
            f"{suppressed} line(s) were not shown to keep the notebook responsive; "
            f"{kept}: %distributed logs {run_id}"
        )
    elif unrecorded:
        notes.append(f"{lost}; what is shown above is all there is")
    return notes


def stacks_text(event: StacksEvent) -> str:
    """The ranks' stacks as the cell shows them: on a timeout each rank's failure shows its
    stack, so the diagnosis' headline is enough, with the ranks' collective sequence ids when
    the flight recorder gave them."""
    if event.reason != "timeout":
        return event.diagnosis
    head, *rest = event.diagnosis.split("\n")
    return "\n".join([head, *(line for line in rest if FLIGHT_LABEL in line)])


def tagged(rank: int, texts: list[str], tokens: float) -> tuple[float, str, int]:
    """A message's lines of ``rank`` tagged ``[rank N]``, each while ``tokens`` last (a line
    costs its length and its tag's). Returns the tokens left, the text to write and how many
    lines were not shown."""
    prefix = f"[rank {rank}] "
    shown, tokens, dropped = affordable(texts, tokens, len(prefix) + 1)
    if not shown:
        return tokens, "", dropped
    return tokens, prefix + f"\n{prefix}".join(shown) + "\n", dropped


def _shown(runs: list[Run]) -> list[tuple[bool, str]]:
    return [
        (False, "".join(f"Out[rank {run.rank}]: {text}\n" for text in run.texts))
        if run.alone
        else (run.stream == "stderr", run.render())
        for run in runs
    ]
