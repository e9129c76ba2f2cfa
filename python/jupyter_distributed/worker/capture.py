"""Capture a process's stdout and stderr at the file-descriptor level.

File descriptors 1 and 2 are replaced by pipes, so output written by C libraries and child
processes is captured too. One thread per pipe reads continuously (a rank that floods stderr
never blocks), splits lines and hands them on. :meth:`FdCapture.sync` returns once everything
written before it has been handed on, so a cell's output always precedes its result. When both
pipes are empty, no reader is inside a chunk and no line is left unfinished (the common case
after a quiet cell), it returns at once, without a round trip through the reader threads.

A carriage return works as in a notebook cell: the line shows what follows the last one. A line
redrawn in place (a progress bar) is handed to ``live`` as it reads now, at most every
``LIVE_EVERY`` seconds, and once more, ``final``, when a newline ends it.
"""

from __future__ import annotations

import codecs
import contextlib
import fcntl
import io
import os
import sys
import termios
import threading
import time
from collections.abc import Callable
from typing import NoReturn, TextIO

from .descriptors import readable
from .guard import capture_pipes

Emit = Callable[[str, list[tuple[float, str]]], None]
Live = Callable[[str, str, bool], None]  # stream, text, final

_CHUNK = 1 << 16
_MAX_LINE = 1 << 16
_PARTIAL_AFTER = 0.1  # seconds before an unterminated line is handed on as it is
# seconds a reader waits for more lines when it handed lines on less than that before (a
# flood): one message carries hundreds of lines, not one; the first line after a pause goes at once
_GATHER = 0.001
LIVE_EVERY = 0.2  # seconds between two states of a line redrawn in place
EXIT_SYNC = 1.0  # seconds at most that os._exit waits for the output written before it


def line_stream(out: TextIO, fd: int) -> TextIO:
    """``out`` (``sys.stdout``, ``sys.stderr``) writing a whole line to ``fd`` at once: one
    ``write`` per print, not two. Under ``PYTHONUNBUFFERED`` (a rank's environment, for its
    children) Python's own stream hands each of print's pieces, the text and then its newline,
    to the pipe at once: two system calls on the printing thread and, often, two wake-ups of
    the reader. A line ends up in a buffer and leaves at its newline; text without one leaves
    with :meth:`FdCapture.flush` (the I/O thread's next look, within 0.1 s while a cell runs)
    or an explicit ``flush()``."""
    buffer = getattr(out, "buffer", None)
    if not isinstance(buffer, io.FileIO) or buffer.fileno() != fd:
        reconfigure = getattr(out, "reconfigure", None)
        if reconfigure is not None:  # (buffered already: a newline writes the line)
            reconfigure(line_buffering=True, write_through=True)
        return out
    raw = io.FileIO(fd, "wb", closefd=False)  # (its own: the old one's end must not close fd)
    return io.TextIOWrapper(
        io.BufferedWriter(raw),
        encoding=out.encoding,
        errors=out.errors,
        line_buffering=True,
        write_through=True,
    )


def visible(line: str) -> str:
    """What a line with carriage returns shows: the last text after one."""
    parts = line.split("\r")
    return next((p for p in reversed(parts) if p), "")


class FdCapture:
    def __init__(self, emit: Emit, live: Live | None = None) -> None:
        self._emit = emit
        self._live = live
        self._token = os.urandom(6).hex()
        self._acks: dict[str, threading.Event] = {}
        self._threads: list[threading.Thread] = []
        self.saved: dict[str, int] = {}
        # per reader: its pipe, and whether it may hold text not handed on yet (inside a chunk,
        # or an unfinished line); set before it reads, cleared once all it read is handed on
        self._pipes: dict[str, int] = {}
        self._holding = {"stdout": True, "stderr": True}
        self.partial_at = 0.0  # (monotonic) text without a newline last handed on, as it was

    def start(self) -> None:
        # (pipes whose read ends the rank's guardian holds too: what is left in them when the
        # rank dies is still shown, see guard.py)
        for (fd, stream), (r, w) in zip(
            ((1, "stdout"), (2, "stderr")), capture_pipes(), strict=True
        ):
            self.saved[stream] = os.dup(fd)
            os.dup2(w, fd)
            os.close(w)
            self._pipes[stream] = r
            t = threading.Thread(
                target=self._read, args=(r, stream), daemon=True, name=f"jd-capture-{stream}"
            )
            t.start()
            self._threads.append(t)
        sys.stdout, sys.stderr = line_stream(sys.stdout, 1), line_stream(sys.stderr, 2)
        os.register_at_fork(before=self.flush)  # (a child would write the held text again)

    def flush(self) -> None:
        """Write what ``sys.stdout`` and ``sys.stderr`` hold of an unfinished line (a print
        without a newline) to the pipes: any thread, e.g. the rank's I/O thread every look."""
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError, AttributeError):
                stream.buffer.flush()

    def hand_on_at_exit(self, then: Callable[[], None] = lambda: None) -> None:
        """From now on ``os._exit`` in this process (the user's: a print, then ``os._exit``)
        first hands on what was written to fd 1 and 2 (:meth:`sync`, at most ``EXIT_SYNC``
        seconds), as Python's own exit does, then calls ``then`` on the main thread (the rank
        sends what its sockets queued); in a child forked from it, it is as it was."""
        real, me = os._exit, os.getpid()

        def _exit(status: int) -> NoReturn:
            if os.getpid() == me:
                with contextlib.suppress(Exception):
                    self.sync(EXIT_SYNC)
                    if threading.current_thread() is threading.main_thread():
                        then()
            real(status)

        os._exit = _exit

    def sync(self, timeout: float = 5.0) -> None:
        """Wait until everything written so far to fd 1 and 2 has been emitted."""
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        if self._quiet():
            return
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

    def _quiet(self) -> bool:
        """Everything written so far is handed on: both pipes are empty (read first) and
        neither reader holds text (it marks itself before reading)."""
        try:
            empty = len(self._pipes) == 2 and not any(map(_pending, self._pipes.values()))
        except OSError:
            return False
        return empty and not any(self._holding.values())

    def _read(self, fd: int, stream: str) -> None:
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        partial = shown = ""  # shown: the live line's state last handed on
        sent = emitted = 0.0
        while True:
            self._holding[stream] = bool(partial)  # what it read before is handed on
            if not partial:
                readable([fd])  # data waits in the pipe until marked (see sync)
                self._holding[stream] = True
            if partial and partial != shown and not readable([fd], _PARTIAL_AFTER):
                self.partial_at = time.monotonic()  # (the I/O thread's looks come sooner)
                if partial[0] == "\r" and self._live is not None:  # redrawn in place
                    self._live(stream, partial[1:], False)
                    shown, sent = partial, time.monotonic()
                else:
                    self._emit(stream, [(time.time(), partial)])
                    partial = ""
                continue
            try:
                data = os.read(fd, _CHUNK)
            except OSError:
                data = b""
            if data and len(data) < _CHUNK and time.monotonic() - emitted < _GATHER:
                data += _gather(fd, _CHUNK - len(data))  # a flood: one message, not one a line
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
            live = self._live if "\r" in text else None
            lines: list[tuple[float, str]] = []
            acked: list[threading.Event] = []
            for line in complete:
                if line.endswith("\x00") and "\x00jd-sync-" in line:
                    head, _, marker = line.rpartition("\x00jd-sync-")
                    event = self._acks.pop("\x00jd-sync-" + marker, None)
                    if event is not None:
                        acked.append(event)
                        if not head:
                            continue
                        line = head
                if live is not None and "\r" in line.rstrip("\r"):  # a live line's final state
                    if lines:
                        self._emit(stream, lines)
                        lines = []
                    live(stream, visible(line), True)
                    shown = ""
                    continue
                lines.append((now, line))
            if lines:
                self._emit(stream, lines)
                emitted = time.monotonic()
            for event in acked:
                event.set()
            if live is not None and "\r" in partial:
                partial = "\r" + visible(partial)
                moment = time.monotonic()
                if partial not in (shown, "\r") and moment - sent >= LIVE_EVERY:
                    live(stream, partial[1:], False)
                    shown, sent = partial, moment


def _gather(fd: int, most: int) -> bytes:
    """What more comes to the pipe ``fd`` within :data:`_GATHER` seconds (up to ``most``
    bytes), read at once."""
    time.sleep(_GATHER)
    try:
        return os.read(fd, most) if _pending(fd) else b""
    except OSError:
        return b""  # (the next read finds the pipe's end)


def _pending(fd: int) -> int:
    """Bytes waiting in the pipe ``fd``."""
    buf = fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0")
    return int.from_bytes(buf, sys.byteorder)
