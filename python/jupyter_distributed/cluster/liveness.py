"""The OS processes behind a cluster, and how their deaths become :class:`RankFailure` data.

Apart from :mod:`.process` so that the rules that declare a rank dead (an exit the launcher
saw, or a silence longer than a limit where it cannot see) read on their own; the cluster's
I/O thread applies them and decides what to record and when the cluster is lost.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Iterable
from typing import Protocol

from ..errors import RankFailure
from ..interface import RankInfo
from ..rankviews import RankSpans

# Ranks on other hosts: silence this long (no heartbeat, which comes every second) is death,
# for a host or network that vanished where the launcher cannot see or report it.
REMOTE_SILENCE_LIMIT = 120.0


class Processes(Protocol):
    """The OS processes behind a cluster, as a backend started them."""

    def exited(self) -> list[tuple[int | None, int]]:
        """(rank, or None for a launcher process; return code) of processes that ended since the
        last call. A negative code is the signal that killed it."""

    def running(self) -> bool:
        """Whether any rank's process is still running (node relays are not counted: they stay
        until :meth:`terminate` ends them, after the ranks)."""

    def terminate(self, grace: float) -> None:
        """SIGTERM every process (group), then SIGKILL what is left after ``grace`` seconds."""

    def log_tail(self, rank: int | None) -> str:
        """The last lines a process wrote before its output was captured (start-up errors)."""

    # Optional: ``sentinels() -> list[int]``, new file descriptors (e.g. pidfds) that become
    # readable when a process ends; the cluster then looks at once instead of at its next
    # periodic look (every WATCH_EVERY seconds), and closes them; ``every_sentinel``, True
    # once ``sentinels()`` gave one for every process (the periodic look then stops: see
    # processwatch.AFTER_SENTINEL); and ``waiting() -> str``, why a scheduler still queues
    # the job ("" once it runs); and ``death_cause() -> str``, why every process it started
    # was killed at once where one thing says so (the fork server they came from ended), "".


StartProcesses = Callable[[dict[str, str]], Processes]


def silent_ranks(
    info: dict[int, RankInfo], limit: float | None, now: float, spans: RankSpans | None = None
) -> list[RankFailure]:
    """Ranks that said nothing for longer than ``limit`` seconds: dead (their host or the
    network to it is gone), for launchers that cannot see their processes. Marks them failed.
    With ``spans`` (their views that relays' reductions set at once), a span's ranks are
    looked at one by one only where the span is silent or they spoke since."""
    if limit is None:
        return []
    if spans is None:
        ranks: list[RankInfo] = list(info.values())
    else:
        ranks = [info[r] for r in spans.gaps()]
        for span in spans.spans():
            if not span.at or _silent(span.state, span.last_seen, limit, now):
                ranks += spans.members(span.first, span.last)
            else:
                ranks += [info[r] for r in span.own_state | span.own_seen]
    out = []
    for rank in ranks:
        seen = rank.last_seen
        if _silent(rank.state, seen, limit, now) and seen:
            out.append(
                RankFailure(
                    rank.rank, now, rank.host, rank.pid, kind="timeout",
                    evalue=f"no heartbeat for {now - seen:.0f}s: its host "
                    "or the network to it is gone",
                )
            )  # fmt: skip
            rank.state = "failed"
    return sorted(out, key=lambda f: f.rank)


def _silent(state: str, seen: float | None, limit: float, now: float) -> bool:
    return state in ("idle", "running") and bool(seen) and now - (seen or 0.0) > limit


def exit_failures(
    info: dict[int, RankInfo], exited: Iterable[tuple[int | None, int]], now: float
) -> list[RankFailure]:
    """One failure per ended process (rank -1 for a launcher), with its exit code or signal;
    marks the ranks exited (code 0) or failed."""
    out = []
    for rank, code in exited:
        r = -1 if rank is None else rank
        known = info.get(r)
        out.append(
            RankFailure(
                rank=r,
                t=now,
                host=known.host if known else socket.gethostname(),
                pid=known.pid if known else None,
                kind="exit",
                exit_code=code if code >= 0 else None,
                signal=-code if code < 0 else None,
            )
        )
        if known is not None:
            known.state = "exited" if code == 0 else "failed"
    return out


LEAVE_CAP = 10.0  # seconds, at most, that a stop waits for ranks told to leave


def wait_leaving(processes: Processes, info: dict[int, RankInfo], grace: float) -> None:
    """Wait while the ranks told to stop leave on their own (their ``atexit`` work runs), until
    ``grace`` seconds pass with none of them ending, or ``LEAVE_CAP`` seconds in all: hundreds of
    ranks leaving at once on a few cores are still leaving after ``grace``, while one whose
    ``atexit`` work hangs holds the stop only ``grace`` seconds after the last one that left.
    The cluster's I/O thread marks the ranks that ended (``exited`` or ``failed``)."""
    start = now = time.monotonic()
    deadline, gone = now + grace, -1
    while now < min(deadline, start + LEAVE_CAP) and processes.running():
        ended = sum(i.state in ("exited", "failed") for i in info.values())
        if ended != gone:
            gone, deadline = ended, now + grace
        time.sleep(0.01)
        now = time.monotonic()
