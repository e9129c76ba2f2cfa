"""What several ranks of a node sent alike, sent up once by their relay (issue 26): identical
lines (``[ranks 0-7] epoch 1 done``) and identical stack dumps (the hang diagnosis's groups).

**At the relay** (:class:`~.relayalike.Alike`, inside :class:`~.relaybatch.Batcher`): a rank's
``output`` message whose lines have the same texts, on the same stream of the same run, as one
kept in the batch, written within :data:`~..collapse.WINDOW` of it by the ranks' own clocks
(``t``, not the arrival), joins that entry instead of being kept again; so does a ``stacks``
answer equal to one kept (the same request, threads, stage and flight record: one *signature*).
A rank joins only an entry after its own last kept one, so each rank's messages keep their order
(its other messages flush the batch first, as before). The batch's entry then reads ``[[src,
...], [seq, ...], fields, times]``: each rank's signed name and counter, the first rank's
fields, and, for lines, each other rank's times of its lines (None for stacks). While ranks that
run the cell may still write the same lines, or ranks asked for their stacks have not answered,
the batch waits for them, at most :data:`LINES_WAIT_S` (from the first line kept) or
:data:`STACKS_WAIT_S` (from the request).

**At the kernel** (:func:`take_shared`): each rank's counter is checked as if its message had
come alone (see :mod:`.intake`); the lines become ONE :class:`~..events.SharedLines` (the
history writes each rank's lines, with its own times; the cell's view shows them once, as
``[ranks 4-7] text``, without comparing them again), the stacks are read once and given to
each rank. Nothing is lost: every rank's line and stack is still its own in the history and
the diagnosis.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..events import Recorded, SharedLines, Stream
from ..interface import LAST_LINES
from ..protocol import reports as r
from ..protocol.header import Message
from .decode import Ranks, decode
from .fanin import BadReduction
from .inbox import StacksReply


@dataclass(frozen=True)
class Shared:
    """The kernel's side of a shared entry, verified: ``message`` as its first rank sent it,
    and each rank's counter (and, for lines, each other rank's times)."""

    ranks: tuple[int, ...]
    seqs: tuple[int, ...]
    message: Message
    times: tuple[Sequence[float], ...] | None


@dataclass
class Taken:
    """What a shared entry gave: events to record, stack answers."""

    events: list[Recorded]
    replies: list[StacksReply]


def take_shared(ranks: Ranks, which: Sequence[int], shared: Shared) -> Taken:
    """Decode ``shared`` once for the ranks ``which`` (those whose counters were accepted)."""
    taken = Taken([], [])
    message = shared.message
    if not which:
        return taken
    each = dict(zip(shared.ranks, _each_times(shared), strict=True))
    if isinstance(message, r.Output) and (message.run_id or ranks.run_id):
        run_id = message.run_id or ranks.run_id
        texts = [text for _t, text in message.lines]
        now = time.time()
        for rank in which:
            info = ranks.info.get(rank)
            if info is not None:
                info.last_seen = now
                info.lines.extend(texts[-LAST_LINES:])
        times = tuple(each[rank] for rank in which if rank in ranks.info)
        kept = tuple(rank for rank in which if rank in ranks.info)
        if kept:
            taken.events.append(SharedLines(run_id, Stream(message.stream), kept, texts, times))
        return taken
    first = None
    for rank in which:  # (output before a run began: each rank's, as decode keeps it)
        if isinstance(message, r.Output):
            lines = [(t, text) for t, (_t, text) in zip(each[rank], message.lines, strict=True)]
            taken.events.extend(decode(ranks, rank, replace(message, lines=lines), []).events)
            continue
        if first is None:
            first = decode(ranks, rank, message, []).item
        elif rank in ranks.info:
            ranks.info[rank].last_seen = time.time()
        if isinstance(first, StacksReply):
            taken.replies.append(replace(first, stacks=replace(first.stacks, rank=rank)))
    return taken


def _each_times(shared: Shared) -> list[Sequence[float]]:
    """Each rank's times of its lines, in the order of ``shared.ranks`` (stacks: none)."""
    message = shared.message
    if not isinstance(message, r.Output) or shared.times is None:
        return [() for _ in shared.ranks]
    return [[t for t, _text in message.lines], *shared.times]


def shared_entry(
    header: dict[str, Any], entry: list[Any], node_of: Callable[[int], int | None], node: int | None
) -> tuple[list[int], list[int], dict[str, Any], tuple[Sequence[float], ...] | None]:
    """A batch's shared entry read: its ranks, counters, fields and other ranks' times.
    Raises :class:`~.fanin.BadReduction` where it speaks for a rank of another
    node, or is neither lines nor stacks, or its times do not match its lines."""
    srcs, seqs, fields, times = entry
    ranks = [int(str(s)[1:]) if str(s)[:1] == "r" else -1 for s in srcs]
    if not ranks or len(ranks) != len(seqs) or any(node_of(x) != node or x < 0 for x in ranks):
        raise BadReduction(f"relay {header['src']} spoke for {srcs} of another node")
    kind = fields.get("type") if isinstance(fields, dict) else None
    if kind == "output":
        count = len(fields["lines"])
        if not isinstance(times, list) or len(times) != len(ranks) - 1:
            raise BadReduction(f"relay {header['src']} sent shared lines without each rank's times")
        if any(len(ts) != count for ts in times):
            raise BadReduction(f"relay {header['src']} sent shared lines with times that differ")
        return ranks, [int(s) for s in seqs], fields, tuple([float(t) for t in ts] for ts in times)
    if kind != "stacks":
        raise BadReduction(f"relay {header['src']} shared a message that is no output or stacks")
    return ranks, [int(s) for s in seqs], fields, None
