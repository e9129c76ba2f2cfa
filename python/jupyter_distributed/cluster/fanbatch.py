"""Output batched per node: a relay sends its ranks' output as one message it signs itself.

A node's relay (:mod:`.relay`) keeps its ranks' verified ``output`` messages (each a rank's lines
on one stream, without buffers) and ``stacks`` answers for at most :data:`WINDOW_S` (longer while
its ranks may still send the same, see :mod:`.fancollapse`), or until :data:`MAX_BATCH` are
kept (or :data:`MAX_BATCH_BYTES`, the kernel's cap on a header), and sends them as one message
signed under its own name (:func:`~.fanin.relay_name`):
``{"type": "batch", "each": [[src, seq, fields], ...]}``, each rank's message as the rank signed
it (its name, counter and fields), in the order they came. Anything else a rank sends goes
after the batch kept before it where that batch holds the rank's own messages (so each rank's
messages keep their order, whatever their kind), and a reduction (:mod:`.fanin`) always does.

Lines that several ranks wrote alike, and stack dumps that are alike, are kept once with
each rank's name and counter (:mod:`.fancollapse`): ``[[src, ...], [seq, ...], fields,
times]``.

The kernel (:func:`unbatch`) takes a batch only for its relay's own ranks and checks each
rank's counter in it as if the message had come directly (a replay is refused, and the rank's
cell ends that wait for these lines are released, :mod:`.cellorder`). Nothing is dropped: the
history keeps every rank's line.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

from ..protocol.frames import MAX_HEADER
from ..protocol.header import Message
from ..protocol.messages import parse
from ..protocol.signing import cell_name, rank_name
from .fancollapse import Alike, Shared, shared_entry
from .fanin import BadReduction, expand, speaker

BATCH = "batch"  # the type of a relay's batch of its ranks' output
WINDOW_S = 0.002  # the longest a rank's output waits at its relay for others to join it
MAX_BATCH = 256  # messages in one batch at most
MAX_BATCH_BYTES = MAX_HEADER  # their headers' bytes at most (the kernel's cap on one frame)


class Batcher:
    """The relay's side: the output kept for the next batch."""

    def __init__(self, ranks: Iterable[int]) -> None:
        self._mine = {rank_name(r) for r in ranks}
        self._kept: list[list[Any]] = []
        self._since = 0.0
        self._bytes = 0
        self.alike = Alike(ranks)  # (which kept entry a rank's message may join)

    def keep(self, header: dict[str, Any], buffers: int, size: int) -> bool:
        """Whether a rank's verified message (``size``: its header's bytes) joins the batch
        (False: send it as it is, after :meth:`take` sent what is kept; so does one that would
        take the batch past :data:`MAX_BATCH_BYTES`)."""
        kind = header.get("type")
        if kind not in ("output", "stacks") or buffers or header["src"] not in self._mine:
            return False
        rank = int(header["src"][1:])
        extra = 24 * len(header.get("lines") or ()) + 16  # (joined: its name, counter, times)
        if self._bytes + extra <= MAX_BATCH_BYTES and self.alike.join(self._kept, rank, header):
            self._bytes += extra
            return True
        if self._bytes + size > MAX_BATCH_BYTES:
            return False
        self._bytes += size
        fields = {k: v for k, v in header.items() if k not in ("src", "dst", "seq", "v")}
        self.alike.kept(len(self._kept), rank, header)
        self._kept.append([header["src"], int(header["seq"]), fields])
        self._since = self._since or time.monotonic()
        return True

    def holds(self, src: str) -> bool:
        """Whether the batch holds a message of the rank that ``src`` names (then the batch
        goes before that rank's next message that is sent as it is)."""
        return self.alike.holds(int(src[1:]))

    def due(self) -> tuple[bool, float | None]:
        """Whether the batch is due now; else in how many seconds it will be (None: empty)."""
        if not self._kept:
            return False, None
        if len(self._kept) >= MAX_BATCH or self._bytes > MAX_BATCH_BYTES - 4096:
            return True, 0.0
        wait = self.alike.waits(self._kept)  # (ranks that may still send the same)
        left = WINDOW_S - (time.monotonic() - self._since) if wait is None else wait
        return left <= 0, max(0.0, left)

    def take(self) -> dict[str, Any] | None:
        """The batch's fields (None: nothing kept); nothing is kept after."""
        if not self._kept:
            return None
        kept, self._kept, self._since, self._bytes = self._kept, [], 0.0, 0
        self.alike.clear()
        return {"type": BATCH, "each": kept}


Unbatched = tuple[int, int, dict[str, Any]] | tuple[list[int], list[int], dict[str, Any], Any]


def unbatch(header: dict[str, Any], node_of: Callable[[int], int | None]) -> list[Unbatched]:
    """The kernel's side: each rank's (rank, control counter, fields) of a relay's verified
    batch, or, for what several ranks sent alike, (ranks, counters, fields, other ranks'
    times); refused whole, with the cause, where it speaks for a rank of another node."""
    node_of, node = speaker(str(header["src"]), node_of)
    out: list[Unbatched] = []
    try:
        for entry in header["each"]:
            if len(entry) == 4:  # (several ranks' alike: see .fancollapse)
                out.append(shared_entry(header, entry, node_of, node))
                continue
            src, seq, fields = entry
            rank = int(str(src)[1:]) if str(src)[:1] == "r" else -1
            if rank < 0 or node_of(rank) != node:
                raise BadReduction(f"relay {header['src']} spoke for {src} of another node")
            if not isinstance(fields, dict) or fields.get("type") not in ("output", "stacks"):
                raise BadReduction(f"relay {header['src']} batched a message that is no output")
            out.append((rank, int(seq), fields))
    except (TypeError, ValueError, KeyError) as exc:
        if isinstance(exc, BadReduction):
            raise
        raise BadReduction(f"an unreadable batch from {header['src']}: {exc!r}") from None
    return out


def relayed(
    header: dict[str, Any], node_of: Callable[[int], int | None]
) -> list[tuple[int, str, int, int, Message | Shared | None]]:
    """The kernel's side of a relay's verified message, a batch or a reduction: each rank's
    message in it as (rank, the name it was signed under, its counter, its ``after``, the
    message; a :class:`~.fancollapse.Shared` for several ranks' alike, under its first rank).
    Raises :class:`~.fanin.BadReduction` or ``BadHeader`` where it is refused."""
    if header.get("type") != BATCH:
        each = [(r, cell_name(r), s, w, f) for r, s, w, f in expand(header, node_of)]
        return [(rank, src, seq, wait, parse(fields)) for rank, src, seq, wait, fields in each]
    out: list[tuple[int, str, int, int, Message | Shared | None]] = []
    for entry in unbatch(header, node_of):
        if len(entry) == 4:
            ranks, seqs, fields, times = entry
            message = parse(fields)
            if message is not None:
                shared = Shared(tuple(ranks), tuple(seqs), message, times)
                out.append((ranks[0], rank_name(ranks[0]), seqs[0], 0, shared))
        else:
            out.append((entry[0], rank_name(entry[0]), entry[1], 0, parse(entry[2])))
    return out
