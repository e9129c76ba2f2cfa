"""The small text files a flag names (``--hostfile``, ``--requirements``), read with one set of
checks: a regular file, at most ``cap`` bytes, text. A FIFO, a device such as ``/dev/zero`` or
a huge file is a one-line :class:`~.errors.SpecError`, never a hang or an out-of-memory.

:func:`read_text` looks first (a FIFO is never opened for reading), then opens without
blocking and checks what it opened, so a file swapped for a FIFO in between cannot hang the
kernel either.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from .errors import SpecError


def _problem(info: os.stat_result, cap: int, what: str) -> str:
    if not stat.S_ISREG(info.st_mode):
        return "not a regular file"
    if info.st_size > cap:
        return f"{info.st_size} bytes; {what} (at most {cap} bytes)"
    return ""


def _check(flag: str, path: str, cap: int, what: str) -> Path:
    """The path of a regular file of at most ``cap`` bytes (``what`` says what it holds)."""
    try:
        file = Path(path).expanduser()
        problem = _problem(file.stat(), cap, what)
    except OSError as exc:
        raise SpecError(f"{flag} {path}: cannot read it ({exc.strerror})") from None
    except ValueError as exc:  # e.g. an embedded NUL in the path
        raise SpecError(f"{flag} {path!r}: {exc}") from None
    if problem:
        raise SpecError(f"{flag} {path}: {problem}")
    return file


def read_text(flag: str, path: str, cap: int, what: str) -> str:
    """The text of a regular file of at most ``cap`` bytes (``what`` says what it holds), read
    once, never more than ``cap`` bytes of it."""
    file = _check(flag, path, cap, what)
    try:
        fd = os.open(file, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
        with os.fdopen(fd, "rb") as stream:
            problem = _problem(os.fstat(stream.fileno()), cap, what)
            data = b"" if problem else stream.read(cap + 1)
    except OSError as exc:
        raise SpecError(f"{flag} {path}: cannot read it ({exc.strerror})") from None
    if problem or len(data) > cap:
        raise SpecError(f"{flag} {path}: {problem or f'over {cap} bytes; {what}'}")
    if b"\0" in data:
        raise SpecError(f"{flag} {path}: not a text file ({what})")
    try:
        return data.decode()
    except UnicodeDecodeError:
        raise SpecError(f"{flag} {path}: not a text file ({what})") from None
