"""Show a run's events under the cell: lines tagged ``[rank N]``, results, failures, rich
displays (MIME bundles, as ``display_data`` labelled by rank) and live lines (a rank's progress
bar, one display per rank updated in place).

What a rank shows under the cell is its *area*: its displays and its live line, each a display
with an id. ``clear_output(wait)`` on a rank (:meth:`CellView.clear`) clears that area: each of
those displays is emptied in place, at once or, with ``wait``, just before the rank shows
something new; the rank's next displays fill its emptied displays first, so a loop that
clears and redraws a figure keeps one figure under the cell (a live line is emptied only).
Text lines (prints, the ``[rank N] image/png ...`` labels) share the cell's streams with
every rank: they stay.

Identical lines of several ranks are shown once, ``[ranks 0-7] text`` (:mod:`.collapse`), and
``--output`` chooses whose lines show (:mod:`.celllines`). Lines are collected and written to
the kernel's stdout/stderr every 10 ms at most (a failure at once), rate limited
(:mod:`.cellstreams`); every line is still in the history (``%distributed logs RUN``), unless
the history store failed, which the closing notice then says.
"""

from __future__ import annotations

import sys
from collections.abc import Collection, Sequence
from typing import TextIO

from .celllines import ShownLines, Tails, closing_notes, stacks_text, tagged
from .cellstreams import Streams
from .displayarea import Areas
from .events import (
    DisplayEvent,
    ErrorEvent,
    Event,
    OutputBatch,
    OutputEvent,
    OutputLines,
    RankEvent,
    RankStates,
    Recorded,
    SharedLines,
    StacksEvent,
    Stream,
    each,
)

LIVE_FAILURES = 8  # ranks' failures shown as they come; the cell's end lists them all


class CellView:
    def __init__(
        self,
        run_id: str = "",
        out: TextIO | None = None,
        err: TextIO | None = None,
        quiet: bool = False,
        display_ranks: Collection[int] | None = None,
        output_ranks: Collection[int] | None = None,
        collapse: bool = True,
        ranks: Collection[int] | None = None,
        progress: bool = False,
    ) -> None:
        """``progress``: with ``quiet``, the start-up line and the lines redrawn in place still
        show (a probe's progress), each emptied once it ends."""
        self._progress = progress
        # --output and the collapsed lines (with --quiet, nothing shows: nothing to say)
        self.lines = ShownLines(None if quiet else output_ranks, collapse and not quiet, ranks)
        self._held = self.lines.held
        self.areas = Areas(
            run_id, quiet, progress, display_ranks,
            lambda text: self._streams.write(self._out, text, force=True), self.release,
        )  # fmt: skip
        self._out = out or sys.stdout
        self._err = err or sys.stderr
        self._quiet = quiet
        self._streams = Streams(self._out, self._err, self.lines)  # (what waits to be shown)
        self.failures = 0  # shown as they come up to LIVE_FAILURES, then once counted
        self.tails = Tails()  # each rank's last lines, shown at the end if the limit cut them

    @property
    def suppressed(self) -> int:
        """Lines the rate limit cut (:mod:`.cellstreams`), since the last :meth:`finish`."""
        return self._streams.suppressed

    @property
    def run_id(self) -> str:
        return self.areas.run_id

    @run_id.setter
    def run_id(self, run_id: str) -> None:  # (the session names the run once it starts)
        self.areas.run_id = run_id

    def on_event(self, event: Event) -> None:
        if self.areas.waiting and isinstance(event, OutputEvent | DisplayEvent):
            self.areas.clear_waiting(event.rank)
        if isinstance(event, OutputEvent):
            if self.lines.hides(event.rank, event.stream):
                self.lines.hidden += 1
                self.tails.lines += 1
                return
            self.tails.add(event.rank, event.stream, [event.text])
            suppressed = self.suppressed
            self._output(event)
            if self.suppressed > suppressed:
                self.tails.cut(event.rank)
        elif isinstance(event, ErrorEvent):
            self.failures += 1
            if self.failures > LIVE_FAILURES + 1:
                return  # (the cell's end lists every failure, those alike once)
            text = f"[rank {event.rank}] {event.failure.summary}"
            if self.failures > LIVE_FAILURES:
                text = "[jupyter-distributed] more ranks failed: all are listed when the cell ends"
            self._streams.write(self._err, text + "\n", force=True)
            self.flush()  # a failure is shown at once
            return
        elif isinstance(event, DisplayEvent):
            self.areas.display(event)
        elif isinstance(event, StacksEvent):
            self._streams.write(
                self._err, f"[jupyter-distributed] {stacks_text(event)}\n", force=True
            )
        elif isinstance(event, RankEvent):
            self.lines.ended(event.rank, event.state)
            return
        self.maybe_flush()

    def _output(self, event: OutputEvent) -> None:
        """A line of a rank whose lines show."""
        if self.areas.ended_live(event.rank, event.stream.value, event.text):
            return  # (its final state, shown in its place)
        if event.stream is Stream.RESULT:
            if self._held is not None and event.rank not in self.areas.rich_results:
                self._collapse(event.rank, event.stream, [(event.t, event.text)])
            elif event.rank not in self.areas.rich_results:
                self._streams.write(
                    self._out, f"Out[rank {event.rank}]: {event.text}\n", force=True
                )
        elif self._held is not None and not self._quiet:
            self._collapse(event.rank, event.stream, [(event.t, event.text)])
        elif not self._quiet:
            target = self._err if event.stream is Stream.STDERR else self._out
            self._streams.write(target, f"[rank {event.rank}] {event.text}\n")

    def live(self, rank: int, stream: str, text: str) -> None:
        """A rank's line redrawn in place: one display per rank and stream, updated."""
        if (self._quiet and not self._progress) or self.lines.hides(rank, Stream(stream)):
            return
        self.areas.live(rank, stream, text)

    def starting(self, text: str) -> None:
        """The cluster's start-up line (:meth:`.Areas.starting`)."""
        self.areas.starting(text)

    def clear(self, rank: int, wait: bool = False) -> None:
        """A rank's ``clear_output(wait)`` (:meth:`.Areas.clear`)."""
        self.areas.clear(rank, wait)

    def on_events(self, events: Sequence[Recorded]) -> None:
        """:meth:`on_event` for each, with a message's output lines (the bulk of a flood)
        handled in one pass: a line costs a token check, and once the tokens are spent the
        rest of the message's lines cost a count."""
        if type(self).on_event is not CellView.on_event:  # a subclass watches every event
            for one in each(events):
                self.on_event(one)
            return
        self._streams.refill()
        for event in events:
            if isinstance(event, RankStates):  # a relay's reduction: each rank's end, at once
                for rank, state, _host, _pid in event.states:
                    self.lines.ended(rank, state)
                for first, last, states, _host, _pids in event.spans:
                    self.lines.ended_span(first, last, states[-1])
            elif isinstance(event, SharedLines):
                self._shared(event)
            elif isinstance(event, OutputBatch):
                self._batch(event)
            elif not isinstance(event, OutputLines):
                self.on_event(event)
            elif self.areas.live_ids or self.areas.waiting:  # (a live line ends in on_event)
                for line in event.events():
                    self.on_event(line)
            elif self.lines.hides(event.rank, event.stream):
                self.lines.hidden += len(event.lines)
                self.tails.lines += len(event.lines)
            else:
                self._many(event)
        self.maybe_flush()

    def _many(self, event: OutputLines) -> None:
        """A message's lines of a rank whose lines show."""
        self.tails.add(event.rank, event.stream, [text for _t, text in event.lines])
        suppressed = self.suppressed
        if self._held is not None and not self._quiet:
            self._collapse(event.rank, event.stream, event.lines)
        elif not self._quiet:
            self._lines(event, self._err if event.stream is Stream.STDERR else self._out)
        if self.suppressed > suppressed:
            self.tails.cut(event.rank)

    def _shared(self, event: SharedLines) -> None:
        """Lines several ranks wrote alike, as their relay sent them once: held once for them
        all (each rank's lines one by one where some do not show, or are not collapsed)."""
        ranks, stream = event.ranks, event.stream
        if (
            self._held is None
            or self._quiet
            or self.areas.live_ids
            or self.areas.waiting
            or any(self.lines.hides(rank, stream) for rank in ranks)
        ):
            self.on_events(event.per_rank())
            return
        for rank in ranks:
            self.tails.add(rank, stream, event.texts)
        suppressed = self.suppressed
        lines = list(zip(event.times[0], event.texts, strict=True))
        self._streams.pay(lambda tokens: self.lines.add(ranks[0], stream, lines, tokens, ranks[1:]))
        if self.suppressed > suppressed:
            for rank in ranks:
                self.tails.cut(rank)

    def _batch(self, event: OutputBatch) -> None:
        """A relay's batch of ranks' messages: in one pass where every rank's lines show and
        are collapsed (else each message as :meth:`_many` takes it)."""
        slow = self._held is None or self._quiet or self.areas.live_ids or self.areas.waiting
        if slow or self.lines.output_ranks is not None:
            return self.on_events(event.per_rank())
        self._streams.pay(lambda tokens: self.lines.add_each(event, tokens, self.tails))

    def _lines(self, event: OutputLines, target: TextIO) -> None:
        """A message's lines, each shown while the tokens last."""
        texts = [text for _t, text in event.lines]
        self._streams.tokens, text, dropped = tagged(event.rank, texts, self._streams.tokens)
        self._streams.suppressed += dropped
        if text:
            self._streams.pending.append((target, text))

    def _collapse(self, rank: int, stream: Stream, lines: Sequence[tuple[float, str]]) -> None:
        """A rank's lines, held for the same lines of other ranks (:mod:`.collapse`)."""
        self._streams.pay(lambda tokens: self.lines.add(rank, stream, lines, tokens))

    def notice(self, text: str) -> None:
        self._streams.write(self._err, f"[jupyter-distributed] {text}\n", force=True)
        self.flush()

    def release(self) -> None:
        """Show every line now, held ones too (before the notebook asks for input)."""
        self._streams.release(everything=True)
        self.flush()

    @property
    def holding(self) -> bool:
        """Whether lines wait to be shown (held for collapsing, or written but not flushed):
        while none do, the main thread need not wake to :meth:`flush`."""
        return self._streams.holding

    def maybe_flush(self) -> None:
        if self._streams.due():
            self.flush()

    def flush(self) -> None:
        self._streams.flush()

    def finish(self, unrecorded: int = 0) -> None:
        """End the cell's output; ``unrecorded``: events the history store could not keep
        (then the notice never claims that every line is kept)."""
        self._streams.release(everything=True)
        if self.suppressed:  # the rate limit cut some: each cut rank's last lines show
            for stderr, text in self.tails.shown():
                self._streams.write(self._err if stderr else self._out, text, force=True)
        hidden, lines = self.lines.note(), self.tails.lines
        for note in closing_notes(self.run_id, hidden, self.suppressed, unrecorded, lines):
            self.notice(note)
        self._streams.suppressed = 0
        self.flush()
