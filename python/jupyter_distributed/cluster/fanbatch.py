"""Output batched per node: a relay sends its ranks' output as one message it signs itself.

A node's relay (:mod:`.relay`, with :class:`~.relaybatch.Batcher`) keeps its ranks' verified
``output`` messages (each a rank's lines on one stream, without buffers) and ``stacks`` answers
for at most :data:`~.relaybatch.WINDOW_S` (longer while its ranks may still send the same, see
:mod:`.fancollapse`), or until :data:`~.relaybatch.MAX_BATCH` are kept (or
:data:`~.relaybatch.MAX_BATCH_BYTES`, the kernel's cap on a header), and sends them as one
message signed under its own name (:func:`~.hopnames.relay_name`): ``{"type": "batch", "each":
[[src, seq, fields], ...]}``, each rank's message as the rank signed it (its name, counter and
fields; an output message's lines as ``texts`` and ``times``, see :func:`~.relaybatch.compact`
and :mod:`.fanlines`), in the order they came. Anything else a rank sends goes after the batch
kept before it where that batch holds the rank's own messages (so each rank's messages keep
their order, whatever their kind), and a reduction (:mod:`.fanin`) always does.

Lines that several ranks wrote alike, and stack dumps that are alike, are kept once with
each rank's name and counter (:mod:`.fancollapse`): ``[[src, ...], [seq, ...], fields,
times]``.

The kernel (:func:`unbatch`) takes a batch only for its relay's own ranks and checks each
rank's counter in it as if the message had come directly (a replay is refused, and the rank's
cell ends that wait for these lines are released, :mod:`.cellorder`). Nothing is dropped: the
history keeps every rank's line.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..protocol.header import Message
from ..protocol.messages import parse
from ..protocol.signing import cell_name, rank_name
from .fancollapse import Shared, shared_entry
from .fanin import BadReduction, expand
from .fanlines import Plain, plain
from .hopnames import speaker
from .relaybatch import BATCH

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
) -> list[tuple[int, str, int, int, Message | Shared | Plain | None]]:
    """The kernel's side of a relay's verified message, a batch or a reduction: each rank's
    message in it as (rank, the name it was signed under, its counter, its ``after``, the
    message; a :class:`~.fancollapse.Shared` for several ranks' alike, under its first rank;
    a :class:`~.fanlines.Plain` for a rank's lines).
    Raises :class:`~.fanin.BadReduction` or ``BadHeader`` where it is refused."""
    if header.get("type") != BATCH:
        each = [(r, cell_name(r), s, w, f) for r, s, w, f in expand(header, node_of)]
        return [(rank, src, seq, wait, parse(fields)) for rank, src, seq, wait, fields in each]
    out: list[tuple[int, str, int, int, Message | Shared | Plain | None]] = []
    for entry in unbatch(header, node_of):
        if len(entry) == 4:
            ranks, seqs, fields, times = entry
            message = parse(fields)
            if message is not None:
                shared = Shared(tuple(ranks), tuple(seqs), message, times)
                out.append((ranks[0], rank_name(ranks[0]), seqs[0], 0, shared))
        else:  # (a rank's lines: checked, taken without a message made, see .fanlines)
            lines = plain(entry[2])
            out.append((entry[0], rank_name(entry[0]), entry[1], 0, lines or parse(entry[2])))
    return out
