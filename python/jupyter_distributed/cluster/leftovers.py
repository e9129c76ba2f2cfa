"""What a rank wrote just before it died and never sent: a print, then ``os._exit``, a C
library's message, then ``abort()``, or a SIGKILL. Its output capture had not read it from its
pipes when the process ended; the rank's guardian, which holds their read ends, writes what was
left there to the rank's ``left_file`` in the cluster's 0700 directory before it kills the
rank's group (``worker/guard.py``). Read here, on the kernel's I/O thread, as the rank's death
is explained: its lines are the rank's last output, shown and recorded before the failure.

Only for ranks on the kernel's own host (the file is on the rank's). The guardian writes the
file as it sees the rank end, as the kernel does: the kernel waits for it while the guardian
lives (its pid is in ``left_file`` + ``.guard``, written by the rank as it set up), at most
:data:`LEFT_WAIT` in all. A rank whose guardian was killed with it (``kill -9 -PGID``) or that
has none is not waited for.
"""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Sequence
from pathlib import Path

from ..errors import RankFailure
from ..interface import RankInfo
from ..pids import pid_alive
from ..protocol.stacks import left_file

LEFT_WAIT = 0.5  # seconds at most that a look waits for the dead ranks' guardians' files
_POLL = 0.002


def leftovers(
    stacks_dir: str, failures: Sequence[RankFailure], info: dict[int, RankInfo]
) -> dict[int, list[tuple[str, list[str]]]]:
    """Per rank that died (an exit, on this host): its streams' lines that it never sent, as
    ``[("stdout", lines), ("stderr", lines)]`` for the streams that had any."""
    found: dict[int, list[tuple[str, list[str]]]] = {}
    if not stacks_dir:
        return found
    here = socket.gethostname()
    waiting: dict[int, int] = {}  # rank -> its guardian
    for f in failures:
        if f.kind == "exit" and f.rank in info and info[f.rank].host in ("", here):
            guardian = _guardian(left_file(stacks_dir, f.rank))
            if guardian:
                waiting[f.rank] = guardian
    deadline = time.monotonic() + LEFT_WAIT
    while waiting:
        for rank, guardian in list(waiting.items()):
            gone = not pid_alive(guardian)  # (then its file is there, or never will be)
            data = _take(left_file(stacks_dir, rank))
            if data is not None or gone:
                del waiting[rank]
                streams = _lines(data) if data else []
                if streams:
                    found[rank] = streams
        if not waiting or time.monotonic() >= deadline:
            break
        time.sleep(_POLL)
    return found


def _guardian(path: Path) -> int:
    """The pid of the guardian that writes ``path`` (0: none known); its note removed."""
    note = path.with_name(path.name + ".guard")
    data = _take(note)
    try:
        return int(data or b"0")
    except ValueError:
        return 0


def _take(path: Path) -> bytes | None:
    """The file's bytes, the file removed; None where it is not (yet) there."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    with contextlib.suppress(OSError):
        path.unlink()
    return data


def _lines(data: bytes) -> list[tuple[str, list[str]]]:
    """``<n> <m>\\n`` then n bytes of stdout and m of stderr, as each stream's lines."""
    head, _, body = data.partition(b"\n")
    try:
        sizes = [int(n) for n in head.split()]
    except ValueError:
        return []
    if len(sizes) != 2 or sum(sizes) > len(body):
        return []
    out: list[tuple[str, list[str]]] = []
    start = 0
    for stream, size in zip(("stdout", "stderr"), sizes, strict=True):
        text = body[start : start + size].decode("utf-8", "replace")
        start += size
        lines = text.split("\n")
        if lines and not lines[-1]:
            lines.pop()
        if lines:
            out.append((stream, lines))
    return out
