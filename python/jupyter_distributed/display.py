"""Show a run's events under the cell: lines tagged ``[rank N]``, results, failures.

Writes go to the kernel's stdout/stderr and are flushed at most every 20 ms, so output arrives
live without flooding the notebook with messages. A rank that prints faster than a notebook can
show is rate limited here; every line is still in the history (``%distributed logs RUN``).
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

from .events import ErrorEvent, Event, OutputEvent, RankEvent, Stream

FLUSH_EVERY = 0.02
BURST_BYTES = 512 * 1024
BYTES_PER_SECOND = 256 * 1024  # below jupyter_server's default IOPub data rate limit


class CellView:
    def __init__(
        self,
        run_id: str = "",
        out: TextIO | None = None,
        err: TextIO | None = None,
        quiet: bool = False,
    ) -> None:
        self.run_id = run_id
        self._out = out or sys.stdout
        self._err = err or sys.stderr
        self._quiet = quiet
        self._dirty = False
        self._last_flush = 0.0
        self._tokens = float(BURST_BYTES)
        self._refilled = time.monotonic()
        self.suppressed = 0

    def on_event(self, event: Event) -> None:
        if isinstance(event, OutputEvent):
            if event.stream is Stream.RESULT:
                self._write(self._out, f"Out[rank {event.rank}]: {event.text}\n", force=True)
            elif not self._quiet:
                target = self._err if event.stream is Stream.STDERR else self._out
                self._write(target, f"[rank {event.rank}] {event.text}\n")
        elif isinstance(event, ErrorEvent):
            self._write(self._err, f"[rank {event.rank}] {event.failure.summary}\n", force=True)
        elif isinstance(event, RankEvent):
            return
        self.maybe_flush()

    def notice(self, text: str) -> None:
        self._write(self._err, f"[jupyter-distributed] {text}\n", force=True)
        self.flush()

    def maybe_flush(self) -> None:
        if self._dirty and time.monotonic() - self._last_flush >= FLUSH_EVERY:
            self.flush()

    def flush(self) -> None:
        if self._dirty:
            self._out.flush()
            self._err.flush()
            self._dirty = False
        self._last_flush = time.monotonic()

    def finish(self) -> None:
        if self.suppressed:
            self.notice(
                f"{self.suppressed} line(s) were not shown to keep the notebook "
                f"responsive; all are kept: %distributed logs {self.run_id}"
            )
            self.suppressed = 0
        self.flush()

    def _write(self, stream: TextIO, text: str, force: bool = False) -> None:
        now = time.monotonic()
        self._tokens = min(BURST_BYTES, self._tokens + (now - self._refilled) * BYTES_PER_SECOND)
        self._refilled = now
        if not force and self._tokens < len(text):
            self.suppressed += 1
            return
        self._tokens -= len(text)
        stream.write(text)
        self._dirty = True
