"""Warnings about rejected messages, rate-limited: a flood of junk gives a few lines."""

from __future__ import annotations

import logging
import time

log = logging.getLogger("jupyter_distributed")
WARN_BURST = 5  # rejected-message warnings per WARN_WINDOW; the rest are counted
WARN_WINDOW = 60.0


class Throttled:
    """Warnings about rejected messages, at most ``burst`` per ``window`` seconds; the number
    left out is told once the window ends (a flood of junk gives a few lines, not thousands)."""

    def __init__(self, burst: int = WARN_BURST, window: float = WARN_WINDOW) -> None:
        self.burst, self.window = burst, window
        self._start, self._shown, self.dropped = time.monotonic(), 0, 0

    def warning(self, msg: str, *args: object) -> None:
        self.flush()
        if self._shown < self.burst:
            self._shown += 1
            log.warning(msg, *args)
        else:
            self.dropped += 1

    def flush(self) -> None:
        now = time.monotonic()
        if now - self._start < self.window:
            return
        if self.dropped:
            log.warning(
                "jupyter-distributed: %d more messages rejected in the last %.0f s",
                self.dropped,
                now - self._start,
            )
        self._start, self._shown, self.dropped = now, 0, 0
