"""A cell's text on the kernel's stdout and stderr, rate limited and written in batches.

What a cell shows as text waits in order until the next flush (lines held for the same lines of
other ranks, :mod:`.celllines`, join it once due), which writes it in one write
per run of lines to one stream, so output arrives live without flooding the notebook with
messages (a flood costs the kernel one write per flush, not one per line). A rank that prints
faster than a notebook can show is cut here: lines may take ``BURST_BYTES`` at once, then
``BYTES_PER_SECOND`` (below jupyter_server's default IOPub data rate limit); the lines cut are
counted (every line is still in the history). What :mod:`.display` shows, and when it flushes,
is its own business.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TextIO

from .celllines import ShownLines

FLUSH_EVERY = 0.01
BURST_BYTES = 512 * 1024
BYTES_PER_SECOND = 256 * 1024  # below jupyter_server's default IOPub data rate limit


class Streams:
    """The text written to ``out`` and ``err`` and not flushed yet, with the lines ``lines``
    holds, and what it may still take: ``tokens`` (bytes), spent by the lines shown;
    ``suppressed``: lines cut."""

    def __init__(self, out: TextIO, err: TextIO, lines: ShownLines) -> None:
        self._out, self._err, self._held = out, err, lines.held
        self._lines = lines
        self.pending: list[tuple[TextIO, str]] = []  # in order, written at the next flush
        self._last_flush = 0.0
        self.tokens = float(BURST_BYTES)
        self._refilled = time.monotonic()
        self.suppressed = 0

    def refill(self) -> None:
        now = time.monotonic()
        self.tokens = min(BURST_BYTES, self.tokens + (now - self._refilled) * BYTES_PER_SECOND)
        self._refilled = now

    def pay(self, add: Callable[[float], tuple[float, int]]) -> None:
        """Lines paid from the tokens by ``add`` (given them, it returns the tokens left and
        how many lines they could not pay)."""
        self.refill()
        self.tokens, dropped = add(self.tokens)
        self.suppressed += dropped  # (what is due goes out at the next flush)

    def release(self, everything: bool = False) -> None:
        """The held lines that are due (``everything``: all, for what must follow them)."""
        if self._held:
            due = self._lines.drain() if everything else self._lines.due()
            self.pending += [(self._err if e else self._out, text) for e, text in due]

    @property
    def holding(self) -> bool:
        """Whether lines wait to be shown (held for collapsing, or written but not flushed)."""
        return bool(self.pending) or bool(self._held)

    def write(self, stream: TextIO, text: str, force: bool = False) -> None:
        """``text`` to ``stream`` at the next flush, if the tokens allow it, or at once after
        the held lines with ``force``."""
        if force:  # (what is written at once comes after the held lines)
            self.release(everything=True)
        self.refill()
        if not force and self.tokens < len(text):
            self.suppressed += 1
            return
        self.tokens -= len(text)
        self.pending.append((stream, text))

    def due(self) -> bool:
        """Whether text waits (held lines now due too) and the last flush is ``FLUSH_EVERY``
        ago or more."""
        self.release()
        return bool(self.pending) and time.monotonic() - self._last_flush >= FLUSH_EVERY

    def flush(self) -> None:
        self.release()
        if self.pending:
            pending, self.pending = self.pending, []
            start = 0
            for i in range(1, len(pending) + 1):  # one write per run of lines to one stream
                if i == len(pending) or pending[i][0] is not pending[start][0]:
                    pending[start][0].write("".join(text for _s, text in pending[start:i]))
                    start = i
            self._out.flush()
            self._err.flush()
            self._last_flush = time.monotonic()  # (after a quiet spell the next line goes at once)
