"""Why a rank died, added to the failure of its exit as data (the cause first, then evidence).

- **SIGKILL**: the out-of-memory killer, or not. On the kernel's own host the kernel log
  (where readable) and the rank's memory cgroup counters, compared with those of its last
  heartbeat (:mod:`..memcg`), say so; a plain ``kill -9`` moves neither. On another host only
  the last memory sample is known: an RSS near the limit reads "probably".
- **A fatal signal** (SIGSEGV, SIGABRT, SIGBUS, ...): the stack ``faulthandler`` wrote to the
  rank's crash file in the cluster's 0700 directory, with the cell's lines.
- **Any death**: the rank's last lines of output.
"""

from __future__ import annotations

import contextlib
import re
import signal
import socket
from dataclasses import replace
from typing import Any

from ..errors import RankFailure
from ..interface import RankInfo
from ..memcg import NEAR_LIMIT, counters, kernel_log_killed
from ..protocol.stacks import FATAL_SIGNALS, RankStacks, crash_file, parse_faulthandler
from .stackboard import with_text

KMSG = "/dev/kmsg"
OOM_KILLER = "the out-of-memory killer"
_CURRENT = re.compile(r"^Current thread (0x[0-9a-fA-F]+)", re.MULTILINE)
_FATAL = re.compile(r"^Fatal Python error: .*$", re.MULTILINE)


def explain(
    failure: RankFailure, info: RankInfo | None, stacks_dir: str, code: str, kmsg: str = KMSG
) -> RankFailure:
    """``failure`` (an exit or a silence) with the cause of the death and its evidence."""
    if info is None or failure.rank < 0 or failure.kind not in ("exit", "timeout"):
        return failure
    if failure.kind == "exit" and failure.exit_code == 0:
        return failure
    changes: dict[str, Any] = {}
    if info.lines:
        changes["last_lines"] = tuple(info.lines)
    if failure.signal == signal.SIGKILL:
        changes["cause"] = oom_cause(info, kmsg)
    elif failure.signal in FATAL_SIGNALS:
        changes["traceback"] = crash_stack(stacks_dir, failure.rank, code)
    return replace(failure, **changes)


def parent_gone(failure: RankFailure, why: str) -> RankFailure:
    """``failure`` (a rank's or a relay's SIGKILL) with ``why``: the fork server that started
    it ended, which took it along (:meth:`..zygote.ForkServer.ended`); as it was otherwise."""
    if not why or failure.signal != signal.SIGKILL:
        return failure
    if failure.kind == "relay":  # (its summary is its evalue)
        return replace(failure, evalue=f"{failure.evalue}; {why}")
    return replace(failure, cause=f"SIGKILL: {why}")


def oom_cause(info: RankInfo, kmsg: str = KMSG) -> str:
    """ "the out-of-memory killer (RSS ... of ... just before)" when it killed the rank; ""
    when nothing says it did."""
    sample = info.memory
    limit = sample.limit_mb if sample is not None else None
    if info.host not in ("", socket.gethostname()):  # its cgroup and log are on its host
        if sample is None or not limit or sample.rss_mb < NEAR_LIMIT * limit:
            return ""
        return f"SIGKILL, probably from {OOM_KILLER} ({_rss(sample.rss_mb, limit, 'just before')})"
    killed = kernel_log_killed(info.since - 1.0, kmsg)
    if killed and info.pid in killed:  # the kernel log names it: the RSS it had when killed
        rss = killed[info.pid]
        if rss is not None:
            return f"{OOM_KILLER} ({_rss(rss, limit, 'when killed')})"
    elif killed or sample is None or not sample.cgroup:
        return ""  # the log names others only, or nothing else can tell
    else:
        before, now = sample.counters, counters(sample.cgroup)
        grown = _grown(before.oom_kills, now.oom_kills)
        if now.oom_kills is None:  # cgroup v1 without the counter: failures near the limit
            near = limit is not None and sample.rss_mb >= NEAR_LIMIT * limit
            grown = near and _grown(before.failcnt, now.failcnt)
        if not grown:
            return ""
    just = _rss(sample.rss_mb, limit, "just before") if sample is not None else ""
    return f"{OOM_KILLER} ({just})" if just else OOM_KILLER


def _grown(before: int | None, now: int | None) -> bool:
    return before is not None and now is not None and now > before


def _rss(rss_mb: float, limit_mb: float | None, when: str) -> str:
    of = f" of {size(limit_mb)}" if limit_mb else ""
    return f"RSS {size(rss_mb)}{of} {when}"


def size(mb: float) -> str:
    return f"{mb / 1024:.1f} GiB" if mb >= 1024 else f"{mb:.0f} MiB"


def crash_stack(stacks_dir: str, rank: int, code: str) -> tuple[str, ...]:
    """The stack faulthandler wrote when rank ``rank`` died of a fatal signal, as traceback
    lines with the cell's source; () when it wrote none (or not on this host)."""
    text = ""
    if stacks_dir:
        with contextlib.suppress(OSError):
            text = crash_file(stacks_dir, rank).read_text("utf-8", "replace")
    current = _CURRENT.search(text)
    if current is None:
        return ()
    threads = parse_faulthandler(text, int(current.group(1), 16))
    stacks = with_text(RankStacks(rank, threads, "", "faulthandler"), code)
    fatal = _FATAL.search(text)
    head = [fatal.group(0)] if fatal else []
    lines = [*head, "Stack (most recent call last):", *stacks.format()]
    return tuple(f"{line}\n" for line in lines)
