"""Capture a process's stdout and stderr at the file-descriptor level.

File descriptors 1 and 2 are replaced by pipes, so output written by C libraries and child
processes is captured too. One thread per pipe reads continuously (a rank that floods stderr
never blocks), splits lines and hands them on. :meth:`FdCapture.sync` returns once everything
written before it has been handed on, so a cell's output always precedes its result.
"""

from __future__ import annotations

import codecs
import contextlib
import os
import select
import sys
import threading
import time
from collections.abc import Callable

Emit = Callable[[str, list[tuple[float, str]]], None]

_CHUNK = 1 << 16
_MAX_LINE = 1 << 16
_PARTIAL_AFTER = 0.1  # seconds before an unterminated line is handed on as it is


class FdCapture:
    def __init__(self, emit: Emit) -> None:
        self._emit = emit
        self._token = os.urandom(6).hex()
        self._acks: dict[str, threading.Event] = {}
        self._threads: list[threading.Thread] = []
        self.saved: dict[str, int] = {}

    def start(self) -> None:
        for fd, stream in ((1, "stdout"), (2, "stderr")):
            r, w = os.pipe()
            self.saved[stream] = os.dup(fd)
            os.dup2(w, fd)
            os.close(w)
            t = threading.Thread(
                target=self._read, args=(r, stream), daemon=True, name=f"jd-capture-{stream}"
            )
            t.start()
            self._threads.append(t)
        for out in (sys.stdout, sys.stderr):
            reconfigure = getattr(out, "reconfigure", None)
            if reconfigure is not None:
                reconfigure(line_buffering=True, write_through=True)

    def sync(self, timeout: float = 5.0) -> None:
        """Wait until everything written so far to fd 1 and 2 has been emitted."""
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        waits = []
        for fd in (1, 2):
            marker = f"\x00jd-sync-{self._token}-{time.monotonic_ns()}\x00"
            event = threading.Event()
            self._acks[marker] = event
            os.write(fd, f"{marker}\n".encode())
            waits.append(event)
        deadline = time.monotonic() + timeout
        for event in waits:
            event.wait(max(0.0, deadline - time.monotonic()))

    def _read(self, fd: int, stream: str) -> None:
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        partial = ""
        while True:
            if partial:
                ready, _, _ = select.select([fd], [], [], _PARTIAL_AFTER)
                if not ready:
                    self._emit(stream, [(time.time(), partial)])
                    partial = ""
                    continue
            try:
                data = os.read(fd, _CHUNK)
            except OSError:
                data = b""
            if not data:
                if partial:
                    self._emit(stream, [(time.time(), partial)])
                return
            text = partial + decoder.decode(data)
            *complete, partial = text.split("\n")
            if len(partial) > _MAX_LINE:
                complete.append(partial)
                partial = ""
            now = time.time()
            lines: list[tuple[float, str]] = []
            acked: list[threading.Event] = []
            for line in complete:
                if line.endswith("\x00") and "\x00jd-sync-" in line:
                    head, _, marker = line.rpartition("\x00jd-sync-")
                    event = self._acks.pop("\x00jd-sync-" + marker, None)
                    if event is not None:
                        if head:
                            lines.append((now, head))
                        acked.append(event)
                        continue
                lines.append((now, line))
            if lines:
                self._emit(stream, lines)
            for event in acked:
                event.set()
